/*
 * fuzz_json_reader.c — libFuzzer target for the Chrome/Kineto/Paddle JSON reader: any bytes must
 * either read or fail with a one-line "NAME:LINE:COL: ..." error, never crash, hang or leak. A
 * trace that reads is then finished and put through the short report and the ops and gaps
 * views, which must not crash on whatever the reader let through. The bytes are also read from a
 * file in one pass and in parallel (3 threads, parts of 64 bytes: many windows, false cuts):
 * both must give the same model, or the same error.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_json_reader corpus/
 * A seed corpus: tests/fuzz/corpus_json_reader/ (small Kineto, Paddle and Chrome traces).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/views.h"
#include "report/summary.h"
#include "trace/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "fuzz.json:LINE:COL: " */
static int has_position(const char *msg)
{
    const char *p = msg + 10;
    if (strncmp(msg, "fuzz.json:", 10) != 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        if (*p < '0' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p++ != ':')
            return 0;
    }
    return *p == ' ';
}

/* Read fd with the given threads: its rc, and the trace or the error. */
static int read_fd(int fd, int threads, tl_trace *t, tl_error *err)
{
    tl_trace_init(t);
    t->read_threads = threads;
    memset(err, 0, sizeof *err);
    return tl_read_json_fd(t, fd, "fuzz.json", 0, err);
}

static int same(const tl_trace *a, const tl_trace *b)
{
    if (a->nev != b->nev || a->nmem != b->nmem || a->ntracks != b->ntracks ||
        a->strings.count != b->strings.count || a->unmatched_ends != b->unmatched_ends ||
        a->open_ranges != b->open_ranges)
        return 0;
    if (a->nev && memcmp(a->ev, b->ev, a->nev * sizeof *a->ev))
        return 0;
    if (a->nmem && memcmp(a->mem, b->mem, a->nmem * sizeof *a->mem))
        return 0;
    for (uint32_t i = 0; i < a->ntracks; i++)
        if (a->tracks[i].pid != b->tracks[i].pid || a->tracks[i].tid != b->tracks[i].tid ||
            a->tracks[i].device != b->tracks[i].device || a->tracks[i].name != b->tracks[i].name)
            return 0;
    for (uint32_t i = 0; i < a->strings.count; i++)
        if (strcmp(a->strings.str[i], b->strings.str[i]))
            return 0;
    return 1;
}

/* One pass and the parallel parse of the same file agree. */
static void parallel_agrees(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        setenv("TALLY_READ_PART", "64", 1);
        if ((fd = memfd_create("fuzz.json", MFD_CLOEXEC)) < 0)
            __builtin_trap();
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        __builtin_trap();
    tl_trace a, b;
    tl_error ea, eb;
    int ra = read_fd(fd, 1, &a, &ea), rb = read_fd(fd, 3, &b, &eb);
    if (ra != rb || (ra != 0 && strcmp(ea.msg, eb.msg)) || (ra == 0 && !same(&a, &b)))
        __builtin_trap();
    tl_trace_free(&a);
    tl_trace_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null_out;
    parallel_agrees(data, size);
    if (!null_out && !(null_out = fopen("/dev/null", "w")))
        __builtin_trap();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err;
    memset(&err, 0, sizeof err);
    if (tl_read_json_mem(&t, (const char *)data, size, "fuzz.json", &err) != 0) {
        /* a failure always says where, on one line */
        if ((!has_position(err.msg) && !strstr(err.msg, "out of memory")) || strchr(err.msg, '\n'))
            __builtin_trap();
        tl_trace_free(&t);
        return 0;
    }
    if (tl_trace_finish(&t) != 0)
        __builtin_trap();
    tl_summary_print(null_out, &t);
    tl_table *ops = tl_view_ops(&t, NULL, &err);
    tl_table_free(ops);
    tl_table *gaps = tl_view_gaps(&t, NULL, &err);
    tl_table_free(gaps);
    tl_trace_free(&t);
    return 0;
}
