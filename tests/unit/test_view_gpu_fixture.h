/*
 * test_view_gpu_fixture.h — one hand-made GPU trace whose every view number is known by
 * construction, shared by test_view_gpu_*.c and test_ops_table.c. Times below are in µs.
 *
 * host thread (pid 1, tid 1)
 *   ProfilerStep#0 [0,1000]                               (TL_CAT_STEP)
 *     aten::linear [10,310]
 *       aten::addmm [20,220]
 *         cudaLaunchKernel [30,50]   corr 1 -> gemm      s7 [100,300]
 *         cudaMemcpyAsync  [60,70]   corr 2 -> HtoD 1e6 B s8 [150,250] (pageable)
 *       cudaLaunchKernel [250,260]   corr 3 -> bias      s7 [320,350]
 *     block [400,700]                                      (TL_CAT_USER)
 *       aten::relu [410,510]
 *         cudaLaunchKernel [420,430] corr 4 -> relu_k    s8 [450,500]
 *       cudaLaunchKernel [600,610]   corr 5 -> relu_k    s7 [620,660]
 *   ProfilerStep#1 [1000,1500]
 *     aten::linear [1100,1200]
 *       cudaLaunchKernel [1110,1120] corr 6 -> gemm      s7 [1150,1250]
 *     cudaLaunchKernel [1400,1405]   corr 7 -> late      s8 [1450,1550] (runs past the step)
 *   orphan kernel s8 [1300,1320] (no correlation), memset 1000 B s8 [1320,1330] (none)
 *   [memory] +4096 B device at 25, +1024 B host at 415, -512 B host at 2000 (outside all)
 */
#ifndef TEST_VIEW_GPU_FIXTURE_H
#define TEST_VIEW_GPU_FIXTURE_H

#include "trace/model.h"

#include <string.h>

#define US 1000LL

static inline tl_event *fx_add(tl_trace *t, uint32_t track, tl_cat cat, const char *name,
                               int64_t ts_us, int64_t dur_us, int64_t corr)
{
    tl_event *e = tl_trace_add(t);
    e->track = track;
    e->cat = (uint16_t)cat;
    e->name = tl_intern(&t->strings, name, strlen(name));
    e->ts = ts_us * US;
    e->dur = dur_us * US;
    e->corr = corr;
    return e;
}

static inline void fx_gpu_trace(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t h = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 0, 7, 0);
    uint32_t s8 = tl_trace_track(t, TL_TRACK_STREAM, 0, 8, 0);
    tl_trace_device(t, 0);
    tl_event *e;
    fx_add(t, h, TL_CAT_STEP, "ProfilerStep#0", 0, 1000, 0);
    fx_add(t, h, TL_CAT_OPERATOR, "aten::linear", 10, 300, 0);
    fx_add(t, h, TL_CAT_OPERATOR, "aten::addmm", 20, 200, 0);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 30, 20, 1);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaMemcpyAsync", 60, 10, 2);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 250, 10, 3);
    fx_add(t, h, TL_CAT_USER, "block", 400, 300, 0);
    fx_add(t, h, TL_CAT_OPERATOR, "aten::relu", 410, 100, 0);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 420, 10, 4);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 600, 10, 5);
    fx_add(t, h, TL_CAT_STEP, "ProfilerStep#1", 1000, 500, 0)->value = 1;
    fx_add(t, h, TL_CAT_OPERATOR, "aten::linear", 1100, 100, 0);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 1110, 10, 6);
    fx_add(t, h, TL_CAT_RUNTIME, "cudaLaunchKernel", 1400, 5, 7);

    fx_add(t, s7, TL_CAT_KERNEL, "gemm", 100, 200, 1);
    e = fx_add(t, s8, TL_CAT_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 150, 100, 2);
    e->copy = TL_COPY_HTOD;
    e->value = 1000000;
    e->flags = TL_EV_PAGEABLE;
    fx_add(t, s7, TL_CAT_KERNEL, "bias", 320, 30, 3);
    fx_add(t, s8, TL_CAT_KERNEL, "relu_k", 450, 50, 4);
    fx_add(t, s7, TL_CAT_KERNEL, "relu_k", 620, 40, 5);
    fx_add(t, s7, TL_CAT_KERNEL, "gemm", 1150, 100, 6);
    fx_add(t, s8, TL_CAT_KERNEL, "late", 1450, 100, 7);
    fx_add(t, s8, TL_CAT_KERNEL, "orphan", 1300, 20, 0);
    e = fx_add(t, s8, TL_CAT_MEMSET, "Memset (Device)", 1320, 10, 0);
    e->value = 1000;

    e = fx_add(t, h, TL_CAT_MEMORY, "[memory]", 25, 0, 0);
    e->value = 4096;
    e->flags = TL_EV_INSTANT | TL_EV_MEM_DEVICE;
    e = fx_add(t, h, TL_CAT_MEMORY, "[memory]", 415, 0, 0);
    e->value = 1024;
    e->flags = TL_EV_INSTANT;
    e = fx_add(t, h, TL_CAT_MEMORY, "[memory]", 2000, 0, 0);
    e->value = -512;
    e->flags = TL_EV_INSTANT;
    tl_trace_finish(t);
}

/* Cell helpers: the row whose first column is name (after skipping `skip` matches), -1 if
 * none. */
static inline int fx_row(const tl_table *tab, const char *name, int skip)
{
    for (int r = 0; r < tab->nrows; r++) {
        const char *s = tl_table_cell(tab, r, 0)->s; /* held or made rows */
        if (s && !strcmp(s, name) && skip-- == 0)
            return r;
    }
    return -1;
}

static inline const tl_cell *fx_cell(const tl_table *tab, int r, const char *key)
{
    static const tl_cell none = {0};
    int c = tl_table_find_col(tab, key);
    if (r < 0 || c < 0)
        return &none;
    return tl_table_cell(tab, r, c);
}

#define FX_I(tab, r, key)   (fx_cell(tab, r, key)->i)
#define FX_D(tab, r, key)   (fx_cell(tab, r, key)->d)
#define FX_SET(tab, r, key) (fx_cell(tab, r, key)->set)

#endif
