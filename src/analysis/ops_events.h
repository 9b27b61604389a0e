/*
 * ops_events.h — what the ops table (view_ops.c, PyTorch's key_averages()) takes from each
 * event, computed in one place for every user: the ops view sums it into rows, the SQLite
 * export (report/sqlite_export.c) stores it per event in ranges(op, op_device, op_annotation,
 * self_cpu, self_cuda, cuda_total). The definitions are view_ops.c's opening comment.
 */
#ifndef TALLY_ANALYSIS_OPS_EVENTS_H
#define TALLY_ANALYSIS_OPS_EVENTS_H

#include "trace/model.h"

#include <stddef.h>
#include <stdint.h>

enum { TL_OPS_NONE = 0, TL_OPS_HOST, TL_OPS_DEVICE };

/* One event as the ops table sees it: 8 bytes, since a trace has millions of events. */
typedef struct tl_ops_event {
    int32_t eparent;     /* nearest kept host ancestor (tree of PyTorch's FunctionEvents) */
    unsigned nchild : 2; /* number of kept children, up to 2 (the dup rule asks "one?") */
    unsigned kind : 2;   /* TL_OPS_*: the row it gives (NONE after the dup merge) */
    unsigned async : 1;  /* an async range: CPU total, no self CPU */
    unsigned merged : 1; /* merged into its parent (eparent) by the dup rule */
    unsigned step : 1;   /* ProfilerStep#N: its row is "ProfilerStep*" */
    unsigned annot : 1;  /* a row of annotations (user ranges, steps, GPU annotations) */
} tl_ops_event;
_Static_assert(sizeof(tl_ops_event) == 8, "8 bytes an event: the ops view's scratch");

/* Which events are rows and the tree of kept host events: PyTorch's filter of utility events
 * and merge of a same-named only child into its parent. in has t->nev entries. Returns 0, or
 * -1 when out of memory. */
int tl_ops_tree(const tl_trace *t, tl_ops_event *in);

/* The time terms of the ops columns, per event of the tree, given to add in this order: first
 * in event order each device row's own duration (SELF_CUDA and CUDA) and each synchronous host
 * row's duration (SELF_CPU) taken off its parent's (CHILD_CPU), then for each piece of device
 * work its duration to the op that launched it (SELF_CUDA) and to that op and each op above it
 * (CUDA). A term's ns is >= 0 for a model's event; CHILD_CPU subtracts it. Returns 0, or -1
 * when out of memory (some terms given). */
typedef enum { TL_OPS_SELF_CPU, TL_OPS_CHILD_CPU, TL_OPS_SELF_CUDA, TL_OPS_CUDA } tl_ops_term;
typedef void (*tl_ops_add_fn)(void *ctx, int32_t ev, tl_ops_term term, int64_t ns);
int tl_ops_times(const tl_trace *t, const tl_ops_event *in, tl_ops_add_fn add, void *ctx);

/* The same in parts, for a caller that does them apart (the ops view finds the launches in a
 * thread while it makes its rows): event i's own terms (the first kind above); the device work
 * with the op that launched it (in event order; *out malloc'd, -1 when out of memory); and
 * their terms (the second kind). */
typedef struct tl_ops_launch {
    int32_t ev, owner;
} tl_ops_launch;
void tl_ops_own_terms(const tl_trace *t, const tl_ops_event *in, size_t i, tl_ops_add_fn add,
                      void *ctx);
int tl_ops_launches(const tl_trace *t, const tl_ops_event *in, tl_ops_launch **out, size_t *nout);
void tl_ops_launch_terms(const tl_trace *t, const tl_ops_event *in, const tl_ops_launch *l,
                         size_t n, tl_ops_add_fn add, void *ctx);

/* A device row's span: Kineto's writer draws a gpu_user_annotation 1 ns early and 2 ns long
 * so that it sorts before its kernels; PyTorch's table has the true span. */
void tl_ops_device_span(const tl_trace *t, const tl_event *e, int64_t *ts, int64_t *dur);

#endif
