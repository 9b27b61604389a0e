/*
 * bench_util.h — what the benchmarks share: the median of a set of figures, and the settings of a
 * session that writes only the .tally file and prints nothing.
 */
#ifndef TALLY_BENCH_UTIL_H
#define TALLY_BENCH_UTIL_H

#include <stdlib.h>
#include <string.h>

#include <tally.h>

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

#endif
