/*
 * bench_tally_export.c — reading a .tally file: the decoder alone (a sink that keeps nothing) and
 * into the trace model (tl_read_tally, what `tally report FILE.tally` does before its views):
 * records/s, user and system CPU (the kernel zeroing the model's fresh pages); and `tally export`
 * of it two ways: through the trace model (tl_read_tally + tl_write_chrome, what it did before) and
 * streamed (tl_tally_export, what it does now, and what a profiled program that asks for JSON
 * gets): peak RSS and MB/s of each. And an array of the file's events alone, each page written
 * once in a fresh child: what the kernel's zeroing of the model's fresh pages costs by itself,
 * a bound on the records/s into the model on one core.
 *
 * The file is generated first, written chunk by chunk as the recorder writes it (1 MiB runs):
 * four threads doing nested ranges (an outer range holding 8 operator ranges, every 4th with a
 * shape string), and a collector thread with one kernel launch (a runtime call and its kernel)
 * per 10 ranges. Each measurement runs in a child process of its own, forked while this process
 * is small (the generator holds one run per thread), and its peak RSS is that child's ru_maxrss
 * from wait4; a child that exits at once gives the baseline. Times are wall time in the parent,
 * the median of the runs; MB/s is of the .tally read and of the uncompressed JSON written.
 *
 *   bench_tally_export [--ranges N] [--runs R] [--keep FILE] [--read-only] [--file FILE]
 *     (default 5000000 ranges, 3 runs; --keep: generate FILE, keep it, and measure on it;
 *     --read-only: measure the reading only; --file: measure the reading of FILE as it is)
 */
#include "record/format.h"
#include "trace/model.h"
#include "trace/tally_decode.h"
#include "trace/tally_export.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the generated file ---------------------------------------------------------------------- */

#define RUN_RECS 65536 /* records per run: 1 MiB */

typedef struct run {
    uint32_t slot;
    int64_t tid;
    uint64_t seq;
    tally__rec rec[RUN_RECS];
    size_t n;
} run;

static FILE *out;
static size_t out_bytes, out_records; /* records, not counting their payload slots */

static void put(const void *p, size_t n)
{
    if (fwrite(p, 1, n, out) != n) {
        perror("bench_tally_export: write");
        exit(1);
    }
    out_bytes += n;
}

static void chunk(uint32_t type, const void *p, size_t n)
{
    tally__chunk_header h = {type, 0, n};
    put(&h, sizeof h);
    put(p, n);
}

static void flush_run(run *r)
{
    if (!r->n)
        return;
    tally__events_header h = {r->slot, 0, r->tid, r->seq++, 0};
    tally__chunk_header ch = {TALLY__CHUNK_EVENTS, 0, sizeof h + r->n * 16};
    put(&ch, sizeof ch);
    put(&h, sizeof h);
    put(r->rec, r->n * 16);
    r->n = 0;
}

/* Room for n records (flushing the run when it is full); returns where they go. */
static tally__rec *room(run *r, size_t n)
{
    if (r->n + n > RUN_RECS)
        flush_run(r);
    tally__rec *p = &r->rec[r->n];
    r->n += n;
    return p;
}

static void rec(run *r, unsigned type, uint64_t field, uint64_t w1)
{
    tally__rec *p = room(r, 1);
    out_records++;
    p->w0 = TALLY__REC(type, field);
    p->w1 = w1;
}

/* A record followed by payload bytes (STR, DEVICE, API). */
static void rec_with(run *r, unsigned type, uint64_t field, uint64_t w1, const void *pl, size_t len)
{
    size_t slots = (len + 15) / 16;
    tally__rec *p = room(r, 1 + slots);
    out_records++;
    p->w0 = TALLY__REC(type, field);
    p->w1 = w1;
    memset(p + 1, 0, slots * 16);
    memcpy(p + 1, pl, len);
}

static void meta_i64(unsigned char *buf, size_t *n, uint32_t key, int64_t v)
{
    uint32_t kl[2] = {key, 8};
    memcpy(buf + *n, kl, 8);
    memcpy(buf + *n + 8, &v, 8);
    *n += 16;
}

static void site(unsigned char *buf, size_t *n, uint64_t id, const char *name, uint32_t cat)
{
    tally__string_entry e = {id, 1, cat, (uint32_t)strlen(name), 0, 0, 0};
    memset(buf + *n, 0, tally__pad8(sizeof e + e.name_len));
    memcpy(buf + *n, &e, sizeof e);
    memcpy(buf + *n + sizeof e, name, e.name_len);
    *n += tally__pad8(sizeof e + e.name_len);
}

/* Write the file; returns the number of ranges, *nkernels the kernel launches. */
static size_t generate(const char *path, size_t ranges, size_t *nkernels)
{
    enum { THREADS = 4, COLLECTOR = THREADS + 1 };
    static const char *kernel =
        "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>";
    static const char shapes[] = "[[8, 512, 4096], [4096, 4096]]";
    if (!(out = fopen(path, "wb"))) {
        perror(path);
        exit(1);
    }
    tally__file_header fh;
    memcpy(fh.magic, TALLY__MAGIC, 8);
    fh.major = TALLY__FORMAT_MAJOR;
    fh.minor = TALLY__FORMAT_MINOR;
    fh.header_size = sizeof fh;
    put(&fh, sizeof fh);
    unsigned char buf[1024];
    size_t n = 0;
    tally__meta_clock clk = {0, 0, 0, 0, 1e9};
    uint32_t kc[2] = {TALLY__META_CLOCK, sizeof clk};
    memcpy(buf, kc, 8);
    memcpy(buf + 8, &clk, sizeof clk);
    n = 8 + sizeof clk;
    meta_i64(buf, &n, TALLY__META_PID, 4242);
    chunk(TALLY__CHUNK_META, buf, n);
    n = 0;
    site(buf, &n, 0x1000, "forward", TL_CAT_FORWARD);
    site(buf, &n, 0x2000, "aten::linear", TL_CAT_OPERATOR);
    chunk(TALLY__CHUNK_STRINGS, buf, n);

    run *r = calloc(COLLECTOR, sizeof *r);
    if (!r) {
        fprintf(stderr, "bench_tally_export: out of memory\n");
        exit(1);
    }
    for (int k = 0; k < COLLECTOR; k++) {
        r[k].slot = (uint32_t)k + 1;
        r[k].tid = 4242 + k;
    }
    run *col = &r[THREADS];
    int64_t ts[THREADS] = {0}, corr = 1;
    size_t done = 0;
    *nkernels = 0;
    for (size_t g = 0; done < ranges; g++) {
        int k = (int)(g % THREADS);
        run *t = &r[k];
        int64_t t0 = 1000000 + ts[k];
        rec(t, TALLY__R_PUSH, (uint64_t)t0, 0x1000);
        int64_t x = t0 + 200;
        for (int o = 0; o < 8; o++, x += 2000) {
            if (o % 4 == 0)
                rec_with(t, TALLY__R_STR, (uint64_t)TALLY__STR_ARG << 48, sizeof shapes - 1, shapes,
                         sizeof shapes - 1);
            rec(t, TALLY__R_PUSH, (uint64_t)x, 0x2000);
            rec(t, TALLY__R_POP, (uint64_t)x + 1500, 0);
            if ((done + o) % 10 == 0) { /* a launch inside the op and its kernel */
                unsigned char pl[256];
                tally__fmt_api a = {x + 100, x + 600, corr, t->tid, TALLY__CAT_RUNTIME, 16};
                memcpy(pl, &a, sizeof a);
                memcpy(pl + sizeof a, "cudaLaunchKernel", 16);
                rec_with(col, TALLY__R_API, (sizeof a + 16 + 15) / 16, 0, pl, sizeof a + 16);
                tally__fmt_device d;
                memset(&d, 0, sizeof d);
                d.start = x + 5000;
                d.end = x + 9000;
                d.corr = corr++;
                d.stream = 7;
                d.cat = TALLY__CAT_KERNEL;
                d.name_len = (uint32_t)strlen(kernel);
                memcpy(pl, &d, sizeof d);
                memcpy(pl + sizeof d, kernel, d.name_len);
                size_t len = sizeof d + d.name_len;
                rec_with(col, TALLY__R_DEVICE, (len + 15) / 16, 0, pl, len);
                ++*nkernels;
            }
        }
        rec(t, TALLY__R_POP, (uint64_t)x + 100, 0);
        ts[k] = x + 300 - 1000000;
        done += 9;
    }
    for (int k = 0; k < COLLECTOR; k++)
        flush_run(&r[k]);
    free(r);
    n = 0;
    int64_t end = 0;
    for (int k = 0; k < THREADS; k++)
        end = ts[k] + 1000000 > end ? ts[k] + 1000000 : end;
    meta_i64(buf, &n, TALLY__META_END_NS, end + 10000);
    chunk(TALLY__CHUNK_META, buf, n);
    if (fclose(out) != 0) {
        perror(path);
        exit(1);
    }
    return done;
}

/* ---- measurements ---------------------------------------------------------------------------- */

enum { NOTHING, DECODE, READ, PAGES, MODEL, STREAM };

/* The events the file decodes into (counted in this process before the children fork): PAGES
 * makes an array of that many events and writes a byte in each page of it, what the model's
 * reading cannot avoid in a fresh process (the kernel zeroing fresh pages) */
static size_t file_events, file_records; /* (records not counting their payload slots) */

/* The decoder alone: a sink that keeps nothing (what the model reader adds is the rest) */
static int64_t null_open(void *ctx, const tl_tally_ev *ev)
{
    (void)ev;
    return (int64_t)(*(size_t *)ctx)++;
}

static int null_close(void *ctx, int64_t ref, int64_t end, uint16_t flags)
{
    (void)ctx;
    (void)ref;
    (void)end;
    (void)flags;
    return 0;
}

static int decode_only(const char *in, size_t *events, tl_error *err)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_tally_dec d;
    size_t count = 0;
    tl_tally_sink sink = {&count, null_open, null_close, NULL, NULL};
    int rc = -1;
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            rc = tl_tally_open(&d, &t, m, -1, (size_t)st.st_size, in, err) != 0 ||
                         tl_tally_decode(&d, &sink) != 0
                     ? -1
                     : 0;
            file_records = 0;
            for (size_t r = 0; rc == 0 && r < d.nruns; r++) {
                const unsigned char *p = (const unsigned char *)m + d.runs[r].off +
                                         sizeof(tally__chunk_header) + sizeof(tally__events_header);
                for (size_t i = 0; i < d.runs[r].nrec; file_records++) {
                    tally__rec x;
                    memcpy(&x, p + i * 16, 16);
                    i += tally__rec_slots(&x);
                }
            }
            tl_tally_close(&d);
            munmap(m, (size_t)st.st_size);
        }
    }
    if (fd >= 0)
        close(fd);
    tl_trace_free(&t);
    *events = count;
    return rc;
}

static int convert(int how, const char *in, const char *json)
{
    tl_error err = {{0}};
    int rc = 0;
    if (how == DECODE) {
        size_t n;
        rc = decode_only(in, &n, &err) != 0;
    } else if (how == PAGES) {
        /* as the model's event array is allocated (tl_trace_reserve: tl_big_alloc's advice) */
        char *p = tl_big_alloc(file_events * sizeof(tl_event));
        if (!p)
            return 1;
        for (size_t i = 0; i < file_events * sizeof(tl_event); i += 4096)
            p[i] = 1;
        free(p);
    } else if (how == READ || how == MODEL) {
        tl_trace t;
        tl_trace_init(&t);
        rc = tl_read_tally(&t, in, &err) != 0 ||
             (how == MODEL && tl_write_chrome(&t, json, &err) != 0);
        tl_trace_free(&t);
    } else if (how == STREAM) {
        rc = tl_tally_export(in, json, NULL, &err) != 0;
    }
    if (rc)
        fprintf(stderr, "bench_tally_export: %s\n", err.msg);
    return rc;
}

static double last_user, last_sys; /* CPU seconds of the last child measured */

/* Run one conversion in a child; its wall time and peak RSS (MB). */
static int measure(int how, const char *in, const char *json, double *secs, double *rss_mb)
{
    fflush(NULL);
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        _exit(convert(how, in, json));
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    *secs = now() - t0;
    last_user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    last_sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    *rss_mb = (double)ru.ru_maxrss / 1024.0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* runs measurements of how: wall, user and system seconds each sorted (medians at runs / 2),
 * the largest peak RSS */
static int measure_runs(int how, const char *in, const char *out, int runs, double *t, double *u,
                        double *sy, double *peak)
{
    *peak = 0;
    for (int k = 0; k < runs; k++) {
        double rss;
        if (measure(how, in, out, &t[k], &rss) != 0)
            return -1;
        u[k] = last_user;
        sy[k] = last_sys;
        *peak = rss > *peak ? rss : *peak;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    qsort(u, (size_t)runs, sizeof *u, cmp_double);
    qsort(sy, (size_t)runs, sizeof *sy, cmp_double);
    return 0;
}

static double file_mb(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (double)st.st_size / 1e6 : 0;
}

int main(int argc, char **argv)
{
    size_t ranges = 5000000;
    int runs = 3;
    const char *keep = NULL, *file = NULL;
    int read_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ranges") && i + 1 < argc)
            ranges = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
            keep = argv[++i];
        else if (!strcmp(argv[i], "--read-only"))
            read_only = 1;
        else if (!strcmp(argv[i], "--file") && i + 1 < argc)
            file = argv[++i], read_only = 1;
        else {
            fprintf(stderr, "usage: bench_tally_export [--ranges N] [--runs R] [--keep FILE] "
                            "[--read-only] [--file FILE]\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (runs < 1 || runs > 15)
        runs = 3;
    char in[4096], json[64], gz[64];
    snprintf(in, sizeof in, "%s", file ? file : keep ? keep : "");
    if (!keep && !file)
        snprintf(in, sizeof in, "/tmp/bench_tally_export_%d.tally", (int)getpid());
    snprintf(json, sizeof json, "/tmp/bench_tally_export_%d.json", (int)getpid());
    snprintf(gz, sizeof gz, "/tmp/bench_tally_export_%d.json.gz", (int)getpid());
    size_t kernels;
    double t0 = now();
    size_t n = file ? 0 : generate(in, ranges, &kernels);
    double in_mb = file_mb(in);
    if (!file)
        printf("file: %zu ranges on 4 threads, %zu kernel launches (runtime call + kernel), %.0f "
               "MB .tally, %.1f M records, written in %.1f s\n",
               n, kernels, in_mb, (double)out_records / 1e6, now() - t0);
    tl_error derr = {{0}};
    if (decode_only(in, &file_events, &derr) != 0) {
        fprintf(stderr, "bench_tally_export: %s\n", derr.msg);
        goto failed;
    }
    if (file) {
        out_records = file_records;
        printf("file: %s, %.0f MB .tally, %.1f M records (read as it is)\n", file, in_mb,
               (double)out_records / 1e6);
    }
    double secs, rss;
    if (measure(NOTHING, in, json, &secs, &rss) == 0)
        printf("baseline: a child that does nothing: peak RSS %.1f MB\n", rss);
    static const char *reads[] = {[DECODE] = "decode (tl_tally_decode, keeping nothing)",
                                  [READ] = "read   (tl_read_tally, the trace model)  ",
                                  [PAGES] = "pages  (the events' array alone, touched)"};
    for (int how = DECODE; how <= PAGES; how++) {
        double t[15], u[15], sy[15], peak;
        if (measure_runs(how, in, json, runs, t, u, sy, &peak) != 0)
            goto failed;
        double med = t[runs / 2];
        printf("%s: %.2f s median of %d (%.2f-%.2f), %.1f M records/s, %.0f MB/s of .tally, "
               "CPU user %.2f s sys %.2f s, peak RSS %.1f MB\n",
               reads[how], med, runs, t[0], t[runs - 1], (double)out_records / med / 1e6,
               in_mb / med, u[runs / 2], sy[runs / 2], peak);
        if (how == PAGES) /* the records/s above: at most that on one core, in a fresh process */
            printf("  (%zu events, %.0f MB of fresh pages: %.2f GB/s)\n", file_events,
                   (double)file_events * sizeof(tl_event) / 1e6,
                   (double)file_events * sizeof(tl_event) / med / 1e9);
    }
    static const char *names[] = {[MODEL] = "model  (tl_read_tally + tl_write_chrome)",
                                  [STREAM] = "stream (tl_tally_export)                "};
    for (int how = MODEL; how <= STREAM && !read_only; how++) {
        double t[15], u[15], sy[15], peak;
        if (measure_runs(how, in, json, runs, t, u, sy, &peak) != 0)
            goto failed;
        double med = t[runs / 2], out_mb = file_mb(json);
        printf("%s .json   : %.2f s median of %d, %.0f MB/s of .tally in, %.0f MB/s of JSON out "
               "(%.0f MB), peak RSS %.1f MB\n",
               names[how], med, runs, in_mb / med, out_mb / med, out_mb, peak);
        unlink(json);
        if (measure(how, in, gz, &secs, &rss) == 0)
            printf("%s .json.gz: %.2f s, %.0f MB/s of .tally in, %.0f MB/s of JSON out, peak RSS "
                   "%.1f MB\n",
                   names[how], secs, in_mb / secs, out_mb / secs, rss);
        unlink(gz);
    }
    if (!keep && !file)
        unlink(in);
    return 0;
failed:
    fprintf(stderr, "bench_tally_export: reading or converting the file failed\n");
    if (!keep && !file)
        unlink(in);
    return 1;
}
