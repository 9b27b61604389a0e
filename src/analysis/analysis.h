/*
 * analysis.h — what every view shares: interval algebra, the profiled window, self times, and
 * the options a view takes. Each view lives in a file of its own (view_<name>.c) and turns a
 * finished tl_trace into one or more tl_tables; views never print.
 */
#ifndef TALLY_ANALYSIS_H
#define TALLY_ANALYSIS_H

#include "report/table.h"
#include "trace/checked.h"
#include "trace/model.h"

/* ---- intervals -------------------------------------------------------------------------- */

typedef struct tl_iv {
    int64_t s, e; /* [s, e) in ns */
} tl_iv;

/* A set of intervals. After tl_ivset_normalize it is sorted and disjoint. */
typedef struct tl_ivset {
    tl_iv *v;
    size_t n, cap;
    int oom; /* an add found no memory (and the interval was lost); cleared by tl_ivset_clear */
} tl_ivset;

/* Ignores e <= s: an empty set with v == NULL is not out of memory, only oom says so. */
void tl_ivset_add(tl_ivset *set, int64_t s, int64_t e);
/* Add [s, e), or merge it into the last interval when it starts inside it: for a set about to
 * be normalized, filled in start order (one track's events), this keeps it small. */
void tl_ivset_extend(tl_ivset *set, int64_t s, int64_t e);
/* Add every interval of from (the set is not normalized: for sets filled in parts). */
void tl_ivset_append(tl_ivset *set, const tl_ivset *from);
void tl_ivset_normalize(tl_ivset *set);       /* sort and merge overlaps */
int64_t tl_ivset_length(const tl_ivset *set); /* total length (normalized set) */
/* The length of the union of k normalized sets (k at most TL_IVSET_UNION_MAX; -1 for more),
 * without making it. */
#define TL_IVSET_UNION_MAX 8
int64_t tl_ivset_union_length(const tl_ivset *const *sets, int k);
void tl_ivset_union(const tl_ivset *a, const tl_ivset *b, tl_ivset *out);     /* normalized */
void tl_ivset_intersect(const tl_ivset *a, const tl_ivset *b, tl_ivset *out); /* normalized */
void tl_ivset_subtract(const tl_ivset *a, const tl_ivset *b, tl_ivset *out);  /* a minus b */
void tl_ivset_clip(tl_ivset *set, int64_t s, int64_t e); /* keep only the part inside [s,e) */
void tl_ivset_clear(tl_ivset *set);
void tl_ivset_free(tl_ivset *set);
/* Whether x lies in the normalized set (binary search). */
int tl_ivset_has(const tl_ivset *set, int64_t x);
/* Index of the first interval of set (normalized) that ends after x; set->n when none. */
size_t tl_ivset_from(const tl_ivset *set, int64_t x);

/* ---- threads inside a view ------------------------------------------------------------------ */

/* How many parts a view splits its n events into for threads of its own: as many as the load
 * used (tl_trace_threads), at most 16, each of at least TL_VIEW_PART_MIN events (so 1 for a
 * trace whose passes take a few ms: no thread is worth it). Part c of k is
 * [n * c / k, n * (c + 1) / k); a view with pieces of work apart runs them in threads when
 * there is more than one part. */
#define TL_VIEW_PART_MIN 262144
int tl_view_parts(const tl_trace *t, size_t n);

/* The mean of n values that sum to total, rounded to nearest (n > 0); a saturated total gives
 * INT64_MAX / n rather than a wrapped sum. */
static inline int64_t tl_avg_round(int64_t total, int64_t n)
{
    return tl_add_sat(total, n / 2) / n;
}

/* ---- the profiled window ---------------------------------------------------------------- */

/* The time the ratios are taken against: the union of the step spans (TL_CAT_STEP) when the
 * trace has steps, else the span of all events. */
typedef struct tl_window {
    int64_t t0, t1; /* first start, last end */
    int64_t total;  /* length of the union of steps (or t1 - t0 without steps) */
    int nsteps;     /* number of step events (0 = none) */
} tl_window;

void tl_profiled_window(const tl_trace *t, tl_window *w);
/* The same window as an interval set (normalized). Both take their steps from steps.h, the one
 * definition of a step (a span that took time and that the program ended). */
void tl_profiled_window_set(const tl_trace *t, tl_ivset *set);

/* Sort n int64 ascending (a radix sort: the delays and durations views sort run to hundreds of
 * thousands). */
void tl_sort_i64(int64_t *a, size_t n);

/* 1 when needle occurs in s, ignoring case. */
int tl_has_ci(const char *s, const char *needle);

/* Self time of every event: dur minus the durations of its direct children (host spans and
 * runtime calls nested in it on the same track). out has t->nev entries. */
void tl_self_times(const tl_trace *t, int64_t *out);

/* The events of some categories numbered in event order (0, 1, ...), in a bit an event and 4
 * bytes per 64 events instead of 4 bytes an event: what a view keeps per operator or per range
 * goes in an array of n entries. */
typedef struct tl_evrank {
    uint64_t *bits;   /* bit i: event i is one of them */
    uint32_t *before; /* before[w]: how many of them are in events [0, 64 w) */
    size_t n;         /* how many */
} tl_evrank;

/* Number the events whose category is in cats (bits 1 << tl_cat). 0, or -1 out of memory. */
int tl_evrank_build(const tl_trace *t, uint32_t cats, tl_evrank *r);
void tl_evrank_free(tl_evrank *r);
/* The bits set in x: the instruction where the build may use it, else a few steps inline (the
 * builtin is a call into libgcc on plain x86-64). */
static inline unsigned tl_popcount64(uint64_t x)
{
#ifdef __POPCNT__
    return (unsigned)__builtin_popcountll(x);
#else
    x -= (x >> 1) & UINT64_C(0x5555555555555555);
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
#endif
}

/* The number of event i, or -1 when it is not one of them. */
static inline int64_t tl_evrank_of(const tl_evrank *r, size_t i)
{
    uint64_t w = r->bits[i >> 6], m = (uint64_t)1 << (i & 63);
    if (!(w & m))
        return -1;
    return (int64_t)r->before[i >> 6] + tl_popcount64(w & (m - 1));
}

/* tl_self_times of the events r numbers: out[k] for the event numbered k (r->n entries). The
 * same values, each subtracted in the same order. */
void tl_self_times_of(const tl_trace *t, const tl_evrank *r, int64_t *out);

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
    int device_set; /* memory, gaps: show only device (-1 = host memory) */
    int32_t device;
    int stream_set; /* gaps: show only this stream (a stream id, the "tid" of a device track) */
    int64_t stream;
    int window_all;  /* GPU views (--window all): the whole file instead of the steps */
    int linked_only; /* GPU views (--linked-only): only device work whose launching runtime call
                      * (the call with the same correlation id) is in the file */
    int kinds_apart; /* ops (tally diff, which joins rows by name): a GPU annotation's row is
                      * named "NAME [GPU annotation]", apart from the CPU range of the same name
                      * that Kineto derives it from (PyTorch's table shows two rows "NAME") */
    int made_rows;   /* the caller reads the tables only through tl_out and tl_table_cell (the
                      * report writer): a view with a row per name may return a table whose rows
                      * are made as they are written (tl_table_new_rows), not held as cells */
} tl_view_opts;

/* ---- which device work a GPU view counts: --window and --linked-only --------------------- */

/* Every GPU view (device, kernel, memcpy, distributed, gaps, gpu, findings) takes its device
 * work through one scope, so that `--window` and `--linked-only` mean the same everywhere:
 *   - window steps (the default): time is the profiled window (the union of the steps, or the
 *     span of the trace without steps). Views of unions clip intervals to it; views of sums
 *     (kernel, memcpy) count the work launched in it (its launch call started in a step) or,
 *     when the launch is unknown, started in it — the overview's rule.
 *   - window all: the whole file; nothing is clipped and every op counts.
 *   - linked only: an op counts only when the runtime call that launched it (same correlation
 *     id) is in the file, as TraceLens counts GPU events that are in its call tree. */
typedef struct tl_gpu_scope {
    int all;         /* --window all */
    int linked_only; /* --linked-only */
    tl_window w;     /* the profiled window (steps or span), also under --window all */
    tl_ivset window; /* normalized: the steps (or the trace's span); all: the trace's span */
    int64_t total;   /* length of window */
} tl_gpu_scope;

/* A copy (TL_CAT_MEMCPY) that blocks the host: synchronous (the reader saw "Sync" in its name,
 * or a Memcpy call that is not Async launched it: cudaMemcpy, hipMemcpyWithStream) or from or to
 * pageable memory. One definition for the memcpy view and the findings. */
int tl_copy_is_sync(const tl_trace *t, const tl_event *e);
int tl_copy_is_pageable(const tl_trace *t, const tl_event *e);

/* o may be NULL (steps, all ops). Returns 0, or -1 when out of memory. */
int tl_gpu_scope_init(const tl_trace *t, const tl_view_opts *o, tl_gpu_scope *s);
void tl_gpu_scope_free(tl_gpu_scope *s);
/* Device work read in order goes to its launching calls at random (t->ev[e->link], then, with
 * parents, the call's parent): asked for ahead, the call of event i + 16 and the parent of the
 * call of event i + 8 are in cache by the time the walk reaches them (tl_launch_owner and
 * tl_gpu_scope_counts took 2.9-3.4 % of a one-thread report's samples of the 1 GB trace, 2.1-2.3
 * % after, four alternating perf runs; the parents for tl_gpu_scope_counts, which reads only
 * the call, cost more than they saved). */
static inline void tl_launch_prefetch(const tl_trace *t, size_t i, int parents)
{
    if (i + 16 >= t->nev)
        return;
    int32_t l = t->ev[i + 16].link;
    if (l != TL_NONE && (size_t)l < t->nev)
        __builtin_prefetch(&t->ev[l]);
    if (!parents)
        return;
    l = t->ev[i + 8].link;
    if (l != TL_NONE && (size_t)l < t->nev) {
        int32_t p = t->ev[l].parent;
        if (p != TL_NONE && (size_t)p < t->nev)
            __builtin_prefetch(&t->ev[p]);
    }
}

/* 1 when device op e passes --linked-only (always, without it). */
int tl_gpu_scope_linked(const tl_gpu_scope *s, const tl_event *e);
/* Views of sums: 1 when device op e counts (linked filter; steps: launched in a step). */
int tl_gpu_scope_counts(const tl_trace *t, const tl_gpu_scope *s, const tl_event *e);
/* Views of unions: 1 when device op e passes the linked filter and any of it lies in the window
 * (always under --window all). */
int tl_gpu_scope_touches(const tl_gpu_scope *s, const tl_event *e);
/* Length of [a, b) inside the window (b - a under --window all). */
int64_t tl_gpu_scope_len(const tl_gpu_scope *s, int64_t a, int64_t b);
/* Clip a normalized set to the window (nothing under --window all). */
void tl_gpu_scope_clip(const tl_gpu_scope *s, tl_ivset *set);
/* "the steps" / "the span of the trace" / "the whole file", for notes. */
const char *tl_gpu_scope_name(const tl_gpu_scope *s);

/* Apply sort/top from opts to rows [from, nrows); returns 0, or -1 when opts->sort names no
 * column (message in err). */
int tl_view_sort(tl_table *tab, const tl_view_opts *o, const char *default_key, int from,
                 tl_error *err);

#endif
