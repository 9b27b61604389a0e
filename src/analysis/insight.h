/*
 * insight.h — what the "insight" views share (private to src/analysis and the CLI verbs that
 * drive them): the per-stream idle-time and launch analysis behind `tally gaps`, the
 * communication/computation split behind the Distributed view, and the table join behind
 * `tally diff`. Findings (view_findings.c) reads all three, so that every number a finding
 * quotes is computed by the same code as the view that shows it in full.
 */
#ifndef TALLY_ANALYSIS_INSIGHT_H
#define TALLY_ANALYSIS_INSIGHT_H

#include "analysis/views.h"

/* ---- idle time, gaps, launches (insight_idle.c) ------------------------------------------ */

/* Why a stream sat idle before an op (HTA's idle-time breakdown, in real units). */
typedef enum tl_wait {
    TL_WAIT_HOST = 0, /* the op's launch call started after the previous op had ended */
    TL_WAIT_KERNEL,   /* launched in time; gap shorter than the kernel-wait threshold */
    TL_WAIT_OTHER     /* anything else (sync, event waits, unlinked ops) */
} tl_wait;

const char *tl_wait_name(tl_wait w); /* "host wait", "kernel wait", "other" */

typedef struct tl_gap {
    int64_t s, e;   /* [s, e): the stream had no op running */
    int64_t len;    /* the part of it inside the window (e - s without a window) */
    uint32_t track; /* the stream */
    uint8_t cause;  /* tl_wait */
} tl_gap;

/* What a stream is for, from its kernels (insight_idle.c). Findings blame launches only for the
 * idle time of compute streams: a communication stream waits for the next collective by design,
 * and a side stream (a copy stream, a stream running a few small kernels) idles while the
 * compute stream works. */
typedef enum tl_stream_role {
    TL_ROLE_COMPUTE = 0, /* a stream holding a large share of the device's computation */
    TL_ROLE_COMM,        /* most of its kernel time is collectives (nccl, rccl, xccl, hccl) */
    TL_ROLE_SIDE         /* little of the device's computation (or only copies and memsets) */
} tl_stream_role;

const char *tl_stream_role_name(tl_stream_role r); /* "compute", "communication", "side" */

#define TL_COMM_STREAM_PCT 50.0    /* collectives' share of a stream's kernel time: communication */
#define TL_SIDE_STREAM_PCT 20.0    /* below this share of its device's computation: side stream */
#define TL_LONG_GAP_NS     1000000 /* a gap of 1 ms or more is "long", never a launch gap */

typedef struct tl_stream_stats {
    uint32_t track;
    int32_t device;
    uint8_t role;        /* tl_stream_role */
    int64_t first, last; /* start of the first device op, end of the last one */
    int64_t span;        /* [first, last] inside the window (last - first without) */
    int64_t busy;        /* union of the ops' intervals, inside the window */
    int64_t wait[3];     /* idle split by tl_wait, inside the window; sum = span - busy */
    int64_t launch_wait; /* launch gaps: host or kernel wait before a kernel, each gap < 1 ms */
    int64_t long_gaps, long_time; /* gaps of TL_LONG_GAP_NS or more: count, time in the window */
    int64_t comm_time, comp_time; /* sums of collective / other kernel durations */
    int64_t ops;                  /* kernels, copies and memsets on the stream */
    int64_t kernels;              /* kernels among them */
    int64_t linked;               /* kernels whose launch call is known */
    int64_t short_kernels, short_time; /* kernels shorter than the short threshold, their time */
    int64_t kernel_time;               /* sum of kernel durations */
    int64_t call_time; /* sum of the durations of the launch calls of the linked kernels */
    int64_t queue_max; /* most ops launched and not yet finished at once */
    double queue_avg;  /* time-weighted mean of that count over the stream's span */
    int64_t *delays;   /* launch delays of linked kernels, ns, sorted ascending */
    size_t ndelays;
    tl_gap long_max; /* the longest (in the window) of its gaps of TL_LONG_GAP_NS or more, the
                        earliest of equals; len 0: none */
} tl_stream_stats;

typedef struct tl_idle {
    tl_stream_stats *streams; /* one per stream with device ops, in track order */
    size_t nstreams;
    tl_gap *gaps; /* every gap on every stream, in stream order (see tl_idle_top_gaps); with
                     tl_idle_compute_top, only each stream's longest */
    size_t ngaps;
    int64_t short_ns;       /* "short kernel" threshold used */
    int64_t kernel_wait_ns; /* kernel-wait threshold used */
} tl_idle;

#define TL_SHORT_KERNEL_NS_DEFAULT 10000 /* 10 us */
#define TL_KERNEL_WAIT_NS_DEFAULT  30000 /* 30 us: what HTA applies in effect (see docs/gaps.md) */

/* Analyse every device stream of a finished trace, over the whole file. Thresholds <= 0 take
 * the defaults. Returns 0, or -1 when out of memory. */
int tl_idle_compute(const tl_trace *t, int64_t short_ns, int64_t kernel_wait_ns, tl_idle *out);
/* The same over a scope (--window, --linked-only; NULL = the whole file, every op): only the ops
 * it counts (tl_gpu_scope_touches), and every time (span, busy, gaps) inside its window. */
int tl_idle_compute_ex(const tl_trace *t, const tl_gpu_scope *sc, int64_t short_ns,
                       int64_t kernel_wait_ns, tl_idle *out);
/* The same, keeping in x->gaps only the keep longest gaps of each stream (TL_GAPS_ALL: every
 * one; 0: none): the gaps view lists the longest few, findings reads long_max, and a gap a
 * kernel was 32 bytes held a kernel (1M kernels: 30 MB). */
#define TL_GAPS_ALL SIZE_MAX
int tl_idle_compute_top(const tl_trace *t, const tl_gpu_scope *sc, int64_t short_ns,
                        int64_t kernel_wait_ns, size_t keep, tl_idle *out);
void tl_idle_free(tl_idle *x);
/* Reorder x->gaps so that its first min(k, ngaps) entries are the k longest, longest first
 * (ties: earlier first); k = 0 sorts them all. */
void tl_idle_top_gaps(tl_idle *x, size_t k);

/* Nearest-rank percentile (p in 0..1) of an ascending array; 0 when n == 0. */
int64_t tl_percentile(const int64_t *sorted, size_t n, double p);

/* Where every host track's events start (events are sorted by track): begin[track] ..
 * begin[track + 1]. */
typedef struct tl_track_index {
    size_t *begin; /* ntracks + 1 entries */
    uint32_t ntracks;
} tl_track_index;

int tl_track_index_build(const tl_trace *t, tl_track_index *ix);
void tl_track_index_free(tl_track_index *ix);

/* Names of the host ranges that were running during [s, e): on each host thread, the
 * innermost user/operator range that contains the whole interval, or failing that the one that
 * contains its middle. Distinct names joined by "; " into buf (empty when none), cut to fit its
 * n bytes; returns the whole text's length, as snprintf does. */
size_t tl_host_context(const tl_trace *t, const tl_track_index *ix, int64_t s, int64_t e, char *buf,
                       size_t n);

/* The gaps view with an explicit kernel-wait threshold (tl_view_gaps uses the default). */
tl_table *tl_view_gaps_ex(const tl_trace *t, const tl_view_opts *o, int64_t kernel_wait_ns,
                          tl_error *err);

/* ---- communication vs computation (view_distributed.c) ----------------------------------- */

typedef struct tl_comm {
    tl_window window;
    int64_t comm;                /* union of communication kernels, within the window */
    int64_t comp;                /* union of computation kernels, within the window */
    int64_t overlap;             /* comm ∩ comp */
    int64_t exposed;             /* comm − comp: communication nothing else ran under */
    int64_t host_comm;           /* union of host communication ranges, within the window */
    int64_t ncomm, ncomp, nhost; /* kernels / ranges counted */
} tl_comm;

/* 1 when a kernel name is a collective-communication kernel (nccl, rccl, xccl, hccl). */
int tl_is_comm_kernel_name(const char *name);
/* The same for the kernel named by string id, the answer cached in named (one byte per string
 * id of t, zeroed: 0 not looked at, 1 no, 2 yes). */
int tl_is_comm_kernel_id(const tl_trace *t, uint8_t *named, uint32_t id);
/* 1 when a host range is a collective by PyTorch's names for them (nccl:*, c10d::*, gloo:*,
 * record_param_comms). */
int tl_is_host_comm_name(const char *name);
/* 1 when a host event is a collective: a Communication range, or an operator or user range of
 * such a name; named caches what each string id names (one zeroed byte per string id of t, read
 * only by this function). */
int tl_is_host_comm_event(const tl_trace *t, uint8_t *named, const tl_event *e);
/* Over the profiled window, every device. Returns 0, or -1 when out of memory. */
int tl_comm_compute(const tl_trace *t, tl_comm *c);
/* The kernels of sc (--window, --linked-only), of one device (device < 0: all), clipped to its
 * window. */
int tl_comm_compute_ex(const tl_trace *t, const tl_gpu_scope *sc, int32_t device, tl_comm *c);

/* ---- diff (view_diff.c) ------------------------------------------------------------------ */

/* Join two tables of the same view by their name column and compare one numeric column
 * (metric: a key or title; NULL = the first time column). Rows with the same name are summed.
 * The result has name, calls before/after (when the tables have a "calls" column), metric
 * before/after, delta, ratio and a change mark (new / vanished), sorted by |delta| descending
 * and cut to top rows (0 = all). NULL with err on an unknown metric or out of memory. */
tl_table *tl_table_diff(const tl_table *a, const tl_table *b, const char *metric, const char *title,
                        const char *key, int top, tl_error *err);

/* tally diff: step time of a and b, then one joined table per view named in views
 * (comma-separated: "ops", "kernel", "ranges"; NULL or "all" = all three). o->top cuts each
 * table; o->sort, when set, names the metric column to compare in every view that has it
 * (views without it are skipped with a note; none having it is an error), else each view's
 * default (ops: self_cuda_us with device events, else self_cpu_us; kernel, ranges: total_us);
 * o->threshold_ns is handed to the views. */
tl_table *tl_view_diff(const tl_trace *a, const tl_trace *b, const char *views,
                       const tl_view_opts *o, tl_error *err);

/* 0 when every name in views is one diff knows; -1 with the message in err. */
int tl_diff_check_views(const char *views, tl_error *err);

#endif
