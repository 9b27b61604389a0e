/*
 * views_fixture.h — hand-made traces for the view tests, with every duration known by
 * construction. Times are given in milliseconds and stored in ns.
 */
#ifndef TALLY_TEST_VIEWS_FIXTURE_H
#define TALLY_TEST_VIEWS_FIXTURE_H

#include "analysis/views.h"
#include "render_fixture.h"

#include <stdio.h>
#include <string.h>

#define MS(x) ((int64_t)((x)*1000000.0))

static inline int fx_event(tl_trace *t, uint32_t track, tl_cat cat, const char *name, double s_ms,
                           double e_ms, int64_t corr)
{
    tl_event *e = tl_trace_add(t);
    if (!e)
        return -1;
    e->ts = MS(s_ms);
    e->dur = MS(e_ms) - MS(s_ms);
    e->cat = (uint16_t)cat;
    e->name = tl_intern(&t->strings, name, strlen(name));
    e->track = track;
    e->corr = corr;
    return 0;
}

/* Thread tracks of tids 100 and 200 on pid 1, made in the order given (order 0: 100 first):
 * what a reader does, in either order, for a test of rules that must not depend on it. */
static inline void fx_two_threads(tl_trace *t, int order, uint32_t *t100, uint32_t *t200)
{
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 1, order ? 200 : 100, -1);
    uint32_t b = tl_trace_track(t, TL_TRACK_THREAD, 1, order ? 100 : 200, -1);
    *t100 = order ? b : a;
    *t200 = order ? a : b;
}

static inline void fx_step(tl_trace *t, uint32_t track, int n, double s_ms, double e_ms)
{
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", n);
    fx_event(t, track, TL_CAT_STEP, name, s_ms, e_ms, 0);
    t->ev[t->nev - 1].value = n;
}

/*
 * The training loop: three steps on thread 1 (pid 100), a loader thread 2.
 *   step 0 [0,100):   dataloader [0,10) forward [10,40) (nested forward [15,35) with "attn"
 *                     [20,30) holding "softmax" [22,25)) backward [40,80) optimizer [80,95)
 *   step 1 [100,220): dataloader [100,130) forward [130,170) backward [170,200) opt [200,210)
 *   step 2 [220,300): dataloader [220,230), and on thread 2 [222,228); forward [230,255)
 *                     backward [255,285) optimizer [285,295); thread 2 "attn" [240,250)
 *   after the steps:  "eval" [300,310) on thread 1
 */
static inline void fx_training(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 100, 1, -1);
    uint32_t b = tl_trace_track(t, TL_TRACK_THREAD, 100, 2, -1);
    fx_step(t, a, 0, 0, 100);
    fx_event(t, a, TL_CAT_DATALOADER, "load", 0, 10, 0);
    fx_event(t, a, TL_CAT_FORWARD, "forward", 10, 40, 0);
    fx_event(t, a, TL_CAT_FORWARD, "layer", 15, 35, 0);
    fx_event(t, a, TL_CAT_USER, "attn", 20, 30, 0);
    fx_event(t, a, TL_CAT_USER, "softmax", 22, 25, 0);
    fx_event(t, a, TL_CAT_BACKWARD, "backward", 40, 80, 0);
    fx_event(t, a, TL_CAT_OPTIMIZER, "sgd", 80, 95, 0);
    fx_step(t, a, 1, 100, 220);
    fx_event(t, a, TL_CAT_DATALOADER, "load", 100, 130, 0);
    fx_event(t, a, TL_CAT_FORWARD, "forward", 130, 170, 0);
    fx_event(t, a, TL_CAT_BACKWARD, "backward", 170, 200, 0);
    fx_event(t, a, TL_CAT_OPTIMIZER, "sgd", 200, 210, 0);
    fx_step(t, a, 2, 220, 300);
    fx_event(t, a, TL_CAT_DATALOADER, "load", 220, 230, 0);
    fx_event(t, b, TL_CAT_DATALOADER, "prefetch", 222, 228, 0);
    fx_event(t, a, TL_CAT_FORWARD, "forward", 230, 255, 0);
    fx_event(t, b, TL_CAT_USER, "attn", 240, 250, 0);
    fx_event(t, a, TL_CAT_BACKWARD, "backward", 255, 285, 0);
    fx_event(t, a, TL_CAT_OPTIMIZER, "sgd", 285, 295, 0);
    fx_event(t, a, TL_CAT_USER, "eval", 300, 310, 0);
    tl_trace_finish(t);
}

/*
 * One step with kernels. Thread 1: step [0,100), forward [10,50) launching at [20,22) corr 1
 * and [30,32) corr 2, backward [50,90) launching at [60,62) corr 3, a launch outside the
 * phases at [95,96) corr 4. Stream 7 (device 0): gemm [25,45) c1, ncclAllReduce [45,55) c2,
 * gemm [65,85) c3, gemm [96,110) c4. Stream 8: an unlinked memcpy [30,40) and kernel relu
 * [40,50).
 */
static inline void fx_gpu(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 100, 1, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 100, 7, 0);
    uint32_t s8 = tl_trace_track(t, TL_TRACK_STREAM, 100, 8, 0);
    fx_step(t, a, 0, 0, 100);
    fx_event(t, a, TL_CAT_FORWARD, "forward", 10, 50, 0);
    fx_event(t, a, TL_CAT_RUNTIME, "cudaLaunchKernel", 20, 22, 1);
    fx_event(t, a, TL_CAT_RUNTIME, "cudaLaunchKernel", 30, 32, 2);
    fx_event(t, a, TL_CAT_BACKWARD, "backward", 50, 90, 0);
    fx_event(t, a, TL_CAT_RUNTIME, "cudaLaunchKernel", 60, 62, 3);
    fx_event(t, a, TL_CAT_RUNTIME, "cudaLaunchKernel", 95, 96, 4);
    fx_event(t, s7, TL_CAT_KERNEL, "gemm", 25, 45, 1);
    fx_event(t, s7, TL_CAT_KERNEL, "ncclDevKernel_AllReduce_Sum_f32", 45, 55, 2);
    fx_event(t, s7, TL_CAT_KERNEL, "gemm", 65, 85, 3);
    fx_event(t, s7, TL_CAT_KERNEL, "gemm", 96, 110, 4);
    fx_event(t, s8, TL_CAT_MEMCPY, "Memcpy HtoD", 30, 40, 0);
    t->ev[t->nev - 1].copy = TL_COPY_HTOD;
    t->ev[t->nev - 1].value = 1 << 20;
    fx_event(t, s8, TL_CAT_KERNEL, "relu", 40, 50, 0);
    tl_trace_finish(t);
}

/* Row index whose first string column (col) equals s, or -1. */
static inline int fx_row(const tl_table *tab, int col, const char *s)
{
    for (int r = 0; r < tab->nrows; r++) {
        const tl_cell *c = tl_table_cell(tab, r, col); /* held or made rows */
        if (c->set && c->s && strcmp(c->s, s) == 0)
            return r;
    }
    return -1;
}

/* Cell by row and column key. */
static inline const tl_cell *fx_cell(const tl_table *tab, int row, const char *key)
{
    static const tl_cell none = {0};
    int col = tl_table_find_col(tab, key);
    if (row < 0 || col < 0 || row >= tab->nrows)
        return &none;
    return tl_table_cell(tab, row, col);
}

/* The time (ns) in a row named name, column key; -1 when missing. */
static inline int64_t fx_time(const tl_table *tab, const char *name, const char *key)
{
    int r = fx_row(tab, 0, name);
    const tl_cell *c = fx_cell(tab, r, key);
    return c->set ? c->i : -1;
}

#endif
