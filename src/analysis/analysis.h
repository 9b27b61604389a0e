/*
 * analysis.h — what every view shares: interval algebra, the profiled window, self times, and
 * the options a view takes. Each view lives in a file of its own (view_<name>.c) and turns a
 * finished tl_trace into one or more tl_tables; views never print.
 */
#ifndef TALLY_ANALYSIS_H
#define TALLY_ANALYSIS_H

#include "report/table.h"
#include "trace/model.h"

/* ---- intervals -------------------------------------------------------------------------- */

typedef struct tl_iv {
    int64_t s, e; /* [s, e) in ns */
} tl_iv;

/* A set of intervals. After tl_ivset_normalize it is sorted and disjoint. */
typedef struct tl_ivset {
    tl_iv *v;
    size_t n, cap;
} tl_ivset;

void tl_ivset_add(tl_ivset *set, int64_t s, int64_t e); /* ignores e <= s */
/* Add [s, e), or merge it into the last interval when it starts inside it: for a set about to
 * be normalized, filled in start order (one track's events), this keeps it small. */
void tl_ivset_extend(tl_ivset *set, int64_t s, int64_t e);
void tl_ivset_normalize(tl_ivset *set);       /* sort and merge overlaps */
int64_t tl_ivset_length(const tl_ivset *set); /* total length (normalized set) */
void tl_ivset_union(const tl_ivset *a, const tl_ivset *b, tl_ivset *out);     /* normalized */
void tl_ivset_intersect(const tl_ivset *a, const tl_ivset *b, tl_ivset *out); /* normalized */
void tl_ivset_subtract(const tl_ivset *a, const tl_ivset *b, tl_ivset *out);  /* a minus b */
void tl_ivset_clip(tl_ivset *set, int64_t s, int64_t e); /* keep only the part inside [s,e) */
void tl_ivset_clear(tl_ivset *set);
void tl_ivset_free(tl_ivset *set);

/* ---- the profiled window ---------------------------------------------------------------- */

/* The time the ratios are taken against: the union of the step spans (TL_CAT_STEP) when the
 * trace has steps, else the span of all events. */
typedef struct tl_window {
    int64_t t0, t1; /* first start, last end */
    int64_t total;  /* length of the union of steps (or t1 - t0 without steps) */
    int nsteps;     /* number of step events (0 = none) */
} tl_window;

void tl_profiled_window(const tl_trace *t, tl_window *w);
/* The same window as an interval set (normalized): the steps that took time, or the span. Steps
 * with no duration are not steps here (nor in tl_profiled_window). */
void tl_profiled_window_set(const tl_trace *t, tl_ivset *set);

/* Sort n int64 ascending (a radix sort: the delays and durations views sort run to hundreds of
 * thousands). */
void tl_sort_i64(int64_t *a, size_t n);

/* Self time of every event: dur minus the durations of its direct children (host spans and
 * runtime calls nested in it on the same track). out has t->nev entries. */
void tl_self_times(const tl_trace *t, int64_t *out);

/* ---- options shared by views ------------------------------------------------------------ */

typedef struct tl_view_opts {
    const char *sort;     /* column key or title to sort by; NULL = the view's default */
    int ascending;        /* sort ascending instead of descending */
    int top;              /* keep the first N rows; 0 = all */
    int thread_sep;       /* split per thread where the view supports it */
    int expand;           /* operator view: list kernels under each operator */
    int per_stream;       /* kernel view: one row per (kernel, stream) */
    int group_by_shape;   /* ops table */
    int64_t threshold_ns; /* gaps: smallest gap / "short kernel" threshold; 0 = view default */
    int series;     /* memory: the full timeline and layout (csv/json) instead of text summaries */
    int brief;      /* the short form (the summary after a run, the demo's report): memory shows its
                     * devices, the peak by category and any leak */
    int device_set; /* memory: show only device (-1 = host memory) */
    int32_t device;
} tl_view_opts;

/* Apply sort/top from opts to rows [from, nrows); returns 0, or -1 when opts->sort names no
 * column (message in err). */
int tl_view_sort(tl_table *tab, const tl_view_opts *o, const char *default_key, int from,
                 tl_error *err);

#endif
