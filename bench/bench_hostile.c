/*
 * bench_hostile.c — load times of traces built to make the readers' lookups degenerate: each is
 * generated into a temporary file, then loaded with tl_load (read, order, nest, link, flows)
 * and the wall time printed. A loader that is linear in its input takes about as long on these
 * as on an ordinary trace of the same size.
 *
 *   bench_hostile [SCALE]   (SCALE 1 = the sizes; 0.1 for a quick look)
 *
 * Traces:
 *   corr_2^44   runtime calls and kernels whose correlation ids are multiples of 2^44 (a hash
 *               that keeps only low bits sends them all to one slot);
 *   flows       flows between 50k host threads and one stream, linked only by their flows
 *               (kernels without correlation ids), so each flow's thread must be found;
 *   names       events with distinct names, for the memory the string table takes (peak RSS).
 */
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Colliding correlation ids: call i and kernel i share id (i + 1) << 44. */
static void gen_corr(FILE *f, long n)
{
    fputs("{\"traceEvents\":[\n", f);
    for (long i = 0; i < n; i++) {
        unsigned long long id = (unsigned long long)(i + 1) << 44;
        fprintf(f,
                "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
                "\"tid\":1,\"ts\":%ld,\"dur\":1,\"args\":{\"correlation\":%llu}},\n"
                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":%ld,"
                "\"dur\":1,\"args\":{\"correlation\":%llu,\"device\":0,\"stream\":7}},\n",
                i * 10, id, i * 10 + 5, id);
    }
    fputs("{\"ph\":\"i\",\"name\":\"end\",\"pid\":1,\"tid\":1,\"ts\":0,\"s\":\"t\"}]}\n", f);
}

/* nflows flow pairs (s on a host thread, f on the stream) over nthreads threads; the calls and
 * kernels carry no correlation id, so only the flows link them. */
static void gen_flows(FILE *f, long nflows, long nthreads)
{
    fputs("{\"traceEvents\":[\n", f);
    for (long i = 0; i < nflows; i++) {
        long tid = 1 + i % nthreads, ts = i * 10;
        fprintf(f,
                "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
                "\"tid\":%ld,\"ts\":%ld,\"dur\":2},\n"
                "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%ld,\"pid\":1,\"tid\":%ld,"
                "\"ts\":%ld},\n"
                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":%ld,"
                "\"dur\":1,\"args\":{\"device\":0,\"stream\":7}},\n"
                "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%ld,\"pid\":0,\"tid\":7,"
                "\"ts\":%ld,\"bp\":\"e\"},\n",
                tid, ts, i + 1, tid, ts + 1, ts + 5, i + 1, ts + 5);
    }
    fputs("{\"ph\":\"i\",\"name\":\"end\",\"pid\":1,\"tid\":1,\"ts\":0,\"s\":\"t\"}]}\n", f);
}

/* n events with distinct 60-byte names. */
static void gen_names(FILE *f, long n)
{
    fputs("{\"traceEvents\":[\n", f);
    for (long i = 0; i < n; i++)
        fprintf(f,
                "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"a_distinct_name_of_sixty_"
                "bytes_for_the_string_table_%08ld\",\"pid\":1,\"tid\":1,\"ts\":%ld,\"dur\":1}%s\n",
                i, i * 2, i + 1 < n ? "," : "");
    fputs("]}\n", f);
}

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Generate with gen into a temporary file, load it, print the figures. */
static int run(const char *what, void (*gen)(FILE *, long, long), long a, long b)
{
    char path[] = "/tmp/bench_hostile_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("bench_hostile: temporary file");
        return 1;
    }
    gen(f, a, b);
    long size = ftell(f);
    fclose(f);
    long rss0 = rss_kb();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    double t0 = now_s();
    int rc = tl_load(&t, path, 0, &err);
    double dt = now_s() - t0;
    size_t linked = 0;
    for (size_t i = 0; i < t.nev; i++)
        linked += t.ev[i].cat == TL_CAT_KERNEL && t.ev[i].link != TL_NONE;
    if (rc != 0)
        fprintf(stderr, "bench_hostile: %s\n", err.msg);
    else
        printf("%-10s %8.1f MB  %9zu events  %9zu kernels linked  %7.2f s  %u strings in %.1f "
               "MB  peak RSS %ld MB (+%ld)\n",
               what, (double)size / 1e6, t.nev, linked, dt, t.strings.count,
               (double)tl_strtab_bytes(&t.strings) / 1e6, rss_kb() / 1024,
               (rss_kb() - rss0) / 1024);
    tl_trace_free(&t);
    unlink(path);
    return rc != 0;
}

static void gen_corr2(FILE *f, long n, long unused)
{
    (void)unused;
    gen_corr(f, n);
}

static void gen_names2(FILE *f, long n, long unused)
{
    (void)unused;
    gen_names(f, n);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: bench_hostile [SCALE > 0]\n");
        return 2;
    }
    int bad = 0;
    bad |= run("names", gen_names2, (long)(1000000 * scale), 0); /* first: its own peak RSS */
    bad |= run("corr_2^44", gen_corr2, (long)(500000 * scale), 0);
    bad |= run("flows", gen_flows, (long)(1000000 * scale), (long)(50000 * scale) + 1);
    return bad;
}
