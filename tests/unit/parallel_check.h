/*
 * parallel_check.h — what the tests of the parallel JSON parse share: read a file with one
 * thread, then with several at several part sizes, and require the same model, report and
 * error. The report is written with as many threads as the read (views computed ahead).
 */
#ifndef TALLY_TEST_PARALLEL_CHECK_H
#define TALLY_TEST_PARALLEL_CHECK_H

#include "report/summary.h"
#include "testlib.h"
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trace at path read with the given threads and part size (0: the reader's own), with its
 * default text report; rc and err of the load. */
static inline char *load(const char *path, int threads, int part, tl_trace *t, int *rc,
                         tl_error *err)
{
    char p[32];
    snprintf(p, sizeof p, "%d", part);
    if (part)
        setenv("TALLY_READ_PART", p, 1);
    else
        unsetenv("TALLY_READ_PART");
    tl_trace_init(t);
    t->read_threads = threads;
    memset(err, 0, sizeof *err);
    *rc = tl_load(t, path, 0, err);
    unsetenv("TALLY_READ_PART");
    if (*rc != 0)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.threads = threads; /* the views computed ahead in as many threads: the same report */
    tl_error e2 = {{0}};
    CHECK_EQ_INT(tl_report_write(f, t, &o, &e2), 0);
    fclose(f);
    return buf;
}

/* Everything the model holds is equal. */
static inline int same_model(const tl_trace *a, const tl_trace *b)
{
    int ok = a->nev == b->nev && a->nmem == b->nmem && a->ntracks == b->ntracks &&
             a->strings.count == b->strings.count && a->unmatched_ends == b->unmatched_ends &&
             a->open_ranges == b->open_ranges && a->source == b->source &&
             a->mem_addr_known == b->mem_addr_known && a->mem_totals_known == b->mem_totals_known &&
             (a->accel == NULL) == (b->accel == NULL);
    if (!ok)
        return 0;
    if (a->nev && memcmp(a->ev, b->ev, a->nev * sizeof *a->ev) != 0)
        return 0;
    if (a->nmem && memcmp(a->mem, b->mem, a->nmem * sizeof *a->mem) != 0)
        return 0;
    for (uint32_t i = 0; i < a->ntracks; i++) {
        const tl_track *x = &a->tracks[i], *y = &b->tracks[i];
        if (x->kind != y->kind || x->pid != y->pid || x->tid != y->tid || x->device != y->device ||
            x->name != y->name)
            return 0;
    }
    for (uint32_t i = 0; i < a->strings.count; i++)
        if (a->strings.len[i] != b->strings.len[i] ||
            memcmp(a->strings.str[i], b->strings.str[i], a->strings.len[i]) != 0)
            return 0;
    return 1;
}

/* Windows the parallel reads of check_file parsed, all told (a file under two parts is read in
 * one pass). */
static uint64_t windows_read;

/* Read path with one thread, then with 2, 3 and 7 threads at several part sizes: the same
 * model, report and error. all_parallel: the file is a good trace of short elements, so every
 * window is parsed by the parts alone, to the end: no part dropped, no unit left to the
 * driving thread, no falling back to one pass. */
static inline void check_file(const char *path, const int *parts, int nparts, int all_parallel)
{
    tl_trace one;
    tl_error e1;
    int rc1;
    char *r1 = load(path, 1, 0, &one, &rc1, &e1);
    static const int threads[] = {2, 3, 7};
    for (int ti = 0; ti < 3; ti++)
        for (int pi = 0; pi < nparts; pi++) {
            tl_trace many;
            tl_error en;
            int rcn;
            char *rn = load(path, threads[ti], parts[pi], &many, &rcn, &en);
            CHECK_EQ_INT(rcn, rc1);
            if (rc1 != 0) {
                CHECK_STR(en.msg, e1.msg);
            } else if (rcn == 0) {
                CHECK(same_model(&one, &many));
                CHECK(r1 && rn && strcmp(r1, rn) == 0);
                windows_read += many.read_stats.windows;
                if (all_parallel) {
                    CHECK_EQ_INT((int)many.read_stats.dropped, 0);
                    CHECK_EQ_INT((int)many.read_stats.driver_units, 0);
                    CHECK_EQ_INT((int)many.read_stats.one_pass, 0);
                }
            }
            if (test_failures) {
                fprintf(stderr, "  %s: %d threads, parts of %d bytes\n", path, threads[ti],
                        parts[pi]);
                free(rn);
                tl_trace_free(&many);
                goto out;
            }
            free(rn);
            tl_trace_free(&many);
        }
out:
    free(r1);
    tl_trace_free(&one);
}

#endif
