/*
 * bench_util.h — what the benchmarks share: the median of a set of figures, the settings of a
 * session that writes only the .tally file and prints nothing, and an event added to a trace
 * built in memory.
 */
#ifndef TALLY_BENCH_UTIL_H
#define TALLY_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally.h>

#include "trace/model.h"

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (v is sorted in place). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* A quiet session into dir/name.tally; ready is called with each finished window. */
static inline tally_config bench_config(const char *dir, const char *name,
                                        tally_trace_ready_fn ready)
{
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = dir;
    c.name = name;
    c.quiet = 1;
    c.write = TALLY_WRITE_TALLY;
    c.on_trace_ready = ready;
    return c;
}

/* A new event of t (a benchmark has no use for a trace it cannot build: out of memory exits). */
static inline tl_event *bench_event(tl_trace *t, uint32_t track, int cat, uint32_t name, int64_t ts,
                                    int64_t dur)
{
    tl_event *e = tl_trace_add(t);
    if (!e) {
        fprintf(stderr, "benchmark: out of memory\n");
        exit(1);
    }
    e->track = track;
    e->cat = (uint16_t)cat;
    e->name = name;
    e->ts = ts;
    e->dur = dur;
    return e;
}

#endif
