/*
 * bench_sqlite.c — how fast `tally export FILE -o OUT.sqlite` writes: events per second of the
 * SQLite export (report/sqlite_export.c), the load of the trace timed apart.
 *
 *   bench_sqlite [FILE ...] [--gen N] [--repeat K] [--out DIR]
 *       For each FILE: load it as the export does (keep_raw: each event's args object goes into
 *       the database), then write it to DIR/bench.sqlite (default /tmp). With --gen N, also a
 *       generated trace of about N events built in memory (steps of operators, each with a
 *       runtime call that launches a kernel on one of four streams: 3 events per operator;
 *       no args). Prints per input: events, the median load seconds, the median write seconds
 *       (open, add, close: indexes and views included), events/s of the write, and the size
 *       of the database; the write's CPU seconds too, and events per CPU second (on a loaded
 *       machine the wall time measures the load). Medians over K runs (default 5).
 */
#include "report/sqlite_export.h"
#include "trace/model.h"

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* The CPU seconds of the write, beside the wall seconds: on a machine shared with other work
 * the wall time says how busy it was as much as what the export costs. */
static double cpu_write[100];

/* About n events: steps of 1000 operators, each 10 us with a 2 us launch call inside and a
 * 5 us kernel of one of 64 names on one of four streams. */
static void generate(tl_trace *t, size_t n)
{
    tl_trace_init(t);
    tl_trace_reserve(t, n + n / 3000 + 16);
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t streams[4];
    for (int s = 0; s < 4; s++)
        streams[s] = tl_trace_track(t, TL_TRACK_STREAM, 1, 7 + s, 0);
    uint32_t ops[16], kernels[64], launch = tl_intern(&t->strings, "cudaLaunchKernel", 16);
    char name[64];
    for (int i = 0; i < 16; i++)
        ops[i] = tl_intern(&t->strings, name, (size_t)snprintf(name, sizeof name, "aten::op%d", i));
    for (int i = 0; i < 64; i++)
        kernels[i] =
            tl_intern(&t->strings, name, (size_t)snprintf(name, sizeof name, "kernel_%d", i));
    size_t nops = n / 3;
    int64_t ts = 0;
    for (size_t i = 0; i < nops; i++) {
        if (i % 1000 == 0) {
            uint32_t step =
                tl_intern(&t->strings, name,
                          (size_t)snprintf(name, sizeof name, "ProfilerStep#%zu", i / 1000));
            bench_event(t, host, TL_CAT_STEP, step, ts, 1000 * 12000 - 1000)->value =
                (int64_t)(i / 1000);
        }
        bench_event(t, host, TL_CAT_OPERATOR, ops[i % 16], ts + 100, 10000);
        bench_event(t, host, TL_CAT_RUNTIME, launch, ts + 2000, 2000)->corr = (int64_t)i + 1;
        bench_event(t, streams[i % 4], TL_CAT_KERNEL, kernels[i % 64], ts + 5000, 5000)->corr =
            (int64_t)i + 1;
        ts += 12000;
    }
    if (tl_trace_finish(t) != 0) {
        fprintf(stderr, "bench_sqlite: out of memory\n");
        exit(1);
    }
}

/* Write t to path once (the r-th time); returns the seconds. */
static double write_once(const tl_trace *t, const char *path, int r)
{
    tl_error err = {{0}};
    double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    tl_sqlite *db = tl_sqlite_open(path, &err);
    if (db)
        tl_sqlite_add_trace(db, t, tl_sqlite_trace_rank(t), &err);
    if (!db || tl_sqlite_close(db, &err) != 0) {
        fprintf(stderr, "bench_sqlite: %s\n", err.msg);
        exit(1);
    }
    cpu_write[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    return now_s() - t0;
}

static void report(const char *what, const tl_trace *t, double *load, double *write, int k,
                   const char *path)
{
    struct stat st;
    double lm = load ? bench_median(load, k) : 0, wm = bench_median(write, k),
           cm = bench_median(cpu_write, k);
    printf("%-40s %9zu events  load %7.3f s  write %7.3f s (%.3f s CPU)  %5.2f M events/s "
           "(%.2f per CPU s)  %6.1f MB\n",
           what, t->nev, lm, wm, cm, (double)t->nev / wm / 1e6, (double)t->nev / cm / 1e6,
           stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int k = 5;
    size_t gen = 0;
    const char *dir = "/tmp";
    const char *files[64];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gen") && i + 1 < argc)
            gen = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            dir = argv[++i];
        else if (argv[i][0] == '-' || nfiles == 64) {
            fprintf(stderr, "usage: bench_sqlite [FILE ...] [--gen N] [--repeat K] [--out DIR]\n");
            return 2;
        } else
            files[nfiles++] = argv[i];
    }
    if (k < 1 || k > 100)
        k = 5;
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.sqlite", dir);
    double load[100], write[100];
    for (int f = 0; f < nfiles; f++) {
        tl_trace t;
        for (int r = 0; r < k; r++) {
            tl_error err = {{0}};
            tl_trace_init(&t);
            t.keep_raw = 1;
            double t0 = now_s();
            if (tl_load(&t, files[f], 0, &err) != 0) {
                fprintf(stderr, "bench_sqlite: %s\n", err.msg);
                return 1;
            }
            load[r] = now_s() - t0;
            if (r + 1 < k)
                tl_trace_free(&t);
        }
        for (int r = 0; r < k; r++)
            write[r] = write_once(&t, path, r);
        const char *slash = strrchr(files[f], '/');
        report(slash ? slash + 1 : files[f], &t, load, write, k, path);
        tl_trace_free(&t);
    }
    if (gen) {
        tl_trace t;
        double t0 = now_s();
        generate(&t, gen);
        load[0] = now_s() - t0;
        for (int r = 0; r < k; r++)
            write[r] = write_once(&t, path, r);
        char what[64];
        snprintf(what, sizeof what, "generated (%zu ops, built in %.2f s)", t.nev / 3, load[0]);
        report(what, &t, NULL, write, k, path);
        tl_trace_free(&t);
    }
    unlink(path);
    return 0;
}
