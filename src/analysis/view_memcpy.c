/*
 * view_memcpy.c — Memory manipulation summary: device copies by direction, and memsets.
 *
 * One row per copy kind (HtoD, DtoH, DtoD, PtoP, HtoH, then copies of unknown direction) and
 * one for memsets, in that fixed order, each with calls, bytes, time (a sum of durations),
 * avg/max/min, the achieved bandwidth (bytes / time, GB/s with GB = 1e9 bytes), the share of
 * the profiled window, and how many were synchronous or touched pageable host memory — the
 * two properties that make a copy block the host or run slowly.
 */
#include "analysis/attrib.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <stdlib.h>

enum {
    C_NAME,
    C_CALLS,
    C_BYTES,
    C_TOTAL,
    C_AVG,
    C_MAX,
    C_MIN,
    C_BW,
    C_RATIO,
    C_SYNC,
    C_PAGEABLE,
    C_NCOLS
};

static const tl_col cols[C_NCOLS] = {
    [C_NAME] = {"Kind", "kind", TL_COL_STR, 1},
    [C_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [C_BYTES] = {"Bytes", "bytes", TL_COL_BYTES, 0},
    [C_TOTAL] = {"Total", "total_us", TL_COL_TIME, 0},
    [C_AVG] = {"Avg", "avg_us", TL_COL_TIME, 0},
    [C_MAX] = {"Max", "max_us", TL_COL_TIME, 0},
    [C_MIN] = {"Min", "min_us", TL_COL_TIME, 0},
    [C_BW] = {"GB/s", "bandwidth_gbps", TL_COL_RATE, 0},
    [C_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
    [C_SYNC] = {"Sync", "sync", TL_COL_INT, 0},
    [C_PAGEABLE] = {"Pageable", "pageable", TL_COL_INT, 0},
};

enum { K_HTOD, K_DTOH, K_DTOD, K_PTOP, K_HTOH, K_UNKNOWN, K_MEMSET, K_N };
static const char *const kind_names[K_N] = {"Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD",
                                            "Memcpy PtoP", "Memcpy HtoH", "Memcpy (unknown)",
                                            "Memset"};

typedef struct macc {
    int64_t calls, bytes, total, max, min, sync, pageable;
} macc;

static int kind_of(const tl_event *e)
{
    if (e->cat == TL_CAT_MEMSET)
        return K_MEMSET;
    switch ((tl_memcpy_kind)e->copy) {
    case TL_COPY_HTOD:
        return K_HTOD;
    case TL_COPY_DTOH:
        return K_DTOH;
    case TL_COPY_DTOD:
        return K_DTOD;
    case TL_COPY_PTOP:
        return K_PTOP;
    case TL_COPY_HTOH:
        return K_HTOH;
    default:
        return K_UNKNOWN;
    }
}

tl_table *tl_view_memcpy(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    tl_table *tab = tl_table_new("Memory Manipulation Summary", "memcpy", cols, C_NCOLS);
    if (!tab) {
        tl_error_setc(err, TL_ERR_NOMEM, "memcpy view: out of memory");
        return NULL;
    }
    tl_gpu_scope sc;
    if (tl_gpu_scope_init(t, o, &sc) != 0) {
        tl_gpu_scope_free(&sc);
        tl_table_free(tab);
        tl_error_setc(err, TL_ERR_NOMEM, "memcpy view: out of memory");
        return NULL;
    }
    macc acc[K_N] = {{0}};
    for (int k = 0; k < K_N; k++)
        acc[k].min = INT64_MAX;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if ((e->cat != TL_CAT_MEMCPY && e->cat != TL_CAT_MEMSET) || !tl_gpu_scope_counts(t, &sc, e))
            continue;
        macc *a = &acc[kind_of(e)];
        a->calls++;
        a->bytes = tl_add_sat(a->bytes, e->value > 0 ? e->value : 0);
        a->total = tl_add_sat(a->total, e->dur);
        if (e->dur > a->max)
            a->max = e->dur;
        if (e->dur < a->min)
            a->min = e->dur;
        if (e->cat == TL_CAT_MEMCPY) { /* as the findings count them */
            a->sync += tl_copy_is_sync(t, e);
            a->pageable += tl_copy_is_pageable(t, e);
        }
    }
    tl_window w = {.total = sc.total}; /* the steps, or the whole file (--window all) */
    int64_t ncopies = 0;
    for (int k = 0; k < K_N; k++) {
        const macc *a = &acc[k];
        if (!a->calls)
            continue;
        ncopies += a->calls;
        int r = tl_table_add_row(tab);
        if (r < 0)
            break;
        tl_table_str(tab, r, C_NAME, kind_names[k]);
        tl_table_int(tab, r, C_CALLS, a->calls);
        tl_table_bytes(tab, r, C_BYTES, a->bytes);
        tl_table_time(tab, r, C_TOTAL, a->total);
        tl_table_time(tab, r, C_AVG, tl_avg_round(a->total, a->calls));
        tl_table_time(tab, r, C_MAX, a->max);
        tl_table_time(tab, r, C_MIN, a->min);
        if (a->total > 0) {
            /* bytes per ns = GB/s (1e9 bytes per second) */
            tl_table_float(tab, r, C_BW, (double)a->bytes / (double)a->total);
        }
        if (w.total > 0)
            tl_table_pct(tab, r, C_RATIO, 100.0 * (double)a->total / (double)w.total);
        tl_table_int(tab, r, C_SYNC, a->sync);
        tl_table_int(tab, r, C_PAGEABLE, a->pageable);
    }
    if (tl_view_sort(tab, o, NULL, 0, err) != 0) {
        tl_table_free(tab);
        tl_gpu_scope_free(&sc);
        return NULL;
    }
    if (!ncopies)
        tl_table_note(tab, "No device copies or memsets in %s%s.", tl_gpu_scope_name(&sc),
                      sc.linked_only ? " launched from a runtime call in the file" : "");
    else
        tl_table_note(tab,
                      "Time is a sum of durations; GB/s = bytes / time (1e9 bytes a second; sizes "
                      "in KB, MB, GB of 1024, as PyTorch prints them); "
                      "Ratio = time / the window (%s). Counted: %s%s.",
                      tl_gpu_scope_name(&sc),
                      sc.all || !sc.w.nsteps ? "every copy and memset"
                                             : "copies and memsets launched in the steps",
                      sc.linked_only ? " whose launch call is in the file" : "");
    tl_gpu_scope_free(&sc);
    return tab;
}
