/*
 * views.h — every report view, one function each, one file each (src/analysis/view_<name>.c).
 *
 * A view reads a finished tl_trace and returns a new tl_table (or a chain of them through
 * tl_table.next) that the caller renders with tl_out_table and frees with tl_table_free.
 * Views never print. The contract shared by all of them:
 *
 *   tl_table *tl_view_NAME(const tl_trace *t, const tl_view_opts *o, tl_error *err);
 *
 *   - t must be finished (tl_trace_finish); o may be NULL (defaults: the view's own sort, all
 *     rows, no thread split).
 *   - Returns the table(s). A view with nothing to show (e.g. a GPU view on a trace without
 *     device events) returns a table with zero rows and a note saying why, not NULL.
 *   - Returns NULL only on an error (an unknown --sort key, out of memory), with a one-line
 *     message in err (err may be NULL).
 *   - Times are int64 ns in TL_COL_TIME cells (keys end in "_us": csv/json print microseconds),
 *     ratios are TL_COL_PCT (keys end in "_pct"), against the profiled window
 *     (tl_profiled_window) unless the view's docs say otherwise. Field names are listed in
 *     docs/VIEWS.md.
 */
#ifndef TALLY_ANALYSIS_VIEWS_H
#define TALLY_ANALYSIS_VIEWS_H

#include "analysis/analysis.h"

typedef tl_table *(*tl_view_fn)(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* ---- host views (helper "views") --------------------------------------------------------- */

/* Overview: per event type (Step, UserDefined, Operator, Dataloader, Forward, ... and on the
 * device side Kernel, Memcpy, Memset, Communication): calls, time as the union of the type's
 * intervals across threads/streams, ratio to the profiled window. view_overview.c */
tl_table *tl_view_overview(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Model: per step and averaged, time in Dataloader/Forward/Backward/Optimization/Other
 * (outermost occurrence only), with the kernel time they launched when the trace has device
 * events. view_model.c */
tl_table *tl_view_model(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* UserDefined ranges: per name calls, total, self, avg, max, min, ratio; sortable; optional
 * per-thread groups. view_ranges.c */
tl_table *tl_view_ranges(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Perf summary: step time (batch cost), reader cost, throughput: avg/max/min, reader ratio.
 * view_perf.c */
tl_table *tl_view_perf(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Step-time breakdown of TensorBoard's PyTorch profiler plugin: per step and on average,
 * Kernel, Memcpy, Memset, (Communication), Runtime, DataLoader, CPU Exec, Other, each moment
 * of a step in one category by priority; steps extended to the device work they launched.
 * view_breakdown.c */
tl_table *tl_view_breakdown(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* ---- training phases (the Model view's rules, view_model.c) ------------------------------ */

/* The phases, in the order the views list them, as their categories: Dataloader, Forward,
 * Backward, Optimization (tl_cat_name gives each one's name). */
#define TL_NPHASES 4
extern const tl_cat tl_phase_cats[TL_NPHASES];

/* The index in tl_phase_cats of a phase category, or -1. */
int tl_phase_index(tl_cat c);

/* The outermost phase ranges of a trace, as the Model view counts them: ranges of a phase
 * category, and on PyTorch's traces (which mark no phase) PyTorch's own ranges — autograd's
 * evaluate_function ranges (or 1.x's autograd nodes) are Backward, module ranges Forward, and
 * without module ranges the step thread's top-level operators that end before the step's
 * backward begins are Forward; the reader files Optimizer.step# and enumerate(DataLoader)#
 * ranges as Optimization and Dataloader. A range inside another phase range is part of it. */
typedef struct tl_phase_range {
    int32_t ev;    /* the range's event (dur > 0, a host event) */
    int32_t phase; /* index in tl_phase_cats */
} tl_phase_range;

typedef struct tl_phases {
    tl_phase_range *v; /* in event order */
    size_t n;
    int32_t *outer; /* per event: the index in v of the outermost phase range that holds it (or
                       is it), -1 for none and for device events */
} tl_phases;

/* Find the phase ranges of t (finished) in its steps (steps.h; the step-less pseudo-step has
 * no forward of top-level operators). 0, or -1 when out of memory (out is then empty). Free
 * with tl_phases_free. */
struct tl_steps;
int tl_phases_find(const tl_trace *t, const struct tl_steps *steps, tl_phases *out);
void tl_phases_free(tl_phases *ph);
/* The same in the steps of steps.h, found once for the views that read them (the Model view and
 * the Overview) and kept with the trace (tl_trace_memo, TL_MEMO_PHASES; a report releases it
 * after its last reader): not freed by the caller. NULL when out of memory. */
const tl_phases *tl_phases_of(const tl_trace *t);

/* ---- views reserved for other helpers (each in its own file) ----------------------------- */

/* Device summary: per device/stream utilization, kernel/copy time. view_device.c */
tl_table *tl_view_device(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Operator summary: per operator CPU and GPU time (o->expand lists kernels). view_operator.c */
tl_table *tl_view_operator(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Kernel summary: per kernel name (o->per_stream: per kernel and stream). view_kernel.c */
tl_table *tl_view_kernel(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Memcpy/memset summary: per direction, bytes, bandwidth. view_memcpy.c */
tl_table *tl_view_memcpy(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* GPU timeline per device pooled over its streams (TraceLens's definitions): computation,
 * communication, memcpy, exposed communication and memcpy, busy, idle, total. view_gpu.c */
tl_table *tl_view_gpu(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Distributed: communication vs computation and their overlap. view_distributed.c */
tl_table *tl_view_distributed(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* The PyTorch-style ops table (key_averages().table()). view_ops.c */
tl_table *tl_view_ops(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Idle gaps on devices and their causes. view_gaps.c */
tl_table *tl_view_gaps(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Memory: per device the peak, the timeline, what the peak holds (categories, layout tree,
 * owners), per-operator bytes, leaks (o->series: every point of the timeline; o->device_set:
 * one device). view_memory.c, memory.c */
tl_table *tl_view_memory(const tl_trace *t, const tl_view_opts *o, tl_error *err);

/* Findings: advice derived from the trace, printed last. view_findings.c */
tl_table *tl_view_findings(const tl_trace *t, const tl_view_opts *o, tl_error *err);

#endif
