/*
 * view_kernel.c — Kernel summary: every kernel name with its calls and time.
 *
 * One row per kernel name (with o->per_stream, per name and stream): calls, total, avg, max,
 * min, and the share of all kernel time (total / sum of every kernel's duration, as in
 * Paddle's Kernel Summary — a sum, so overlapping streams are not merged here; the Device view
 * gives the unions). Rows are sorted by total time unless --sort says otherwise.
 */
#include "analysis/attrib.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <stdlib.h>

enum { C_NAME, C_DEVICE, C_STREAM, C_CALLS, C_TOTAL, C_AVG, C_MAX, C_MIN, C_RATIO, C_NCOLS };

static const tl_col cols[C_NCOLS] = {
    [C_NAME] = {"Name", "name", TL_COL_STR, 1},
    [C_DEVICE] = {"Dev", "device", TL_COL_INT, 0},
    [C_STREAM] = {"Stream", "stream", TL_COL_INT, 0},
    [C_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [C_TOTAL] = {"Total", "total_us", TL_COL_TIME, 0},
    [C_AVG] = {"Avg", "avg_us", TL_COL_TIME, 0},
    [C_MAX] = {"Max", "max_us", TL_COL_TIME, 0},
    [C_MIN] = {"Min", "min_us", TL_COL_TIME, 0},
    [C_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

/* Columns without Dev/Stream, for the per-name table. */
static const tl_col name_cols[] = {
    {"Name", "name", TL_COL_STR, 1},       {"Calls", "calls", TL_COL_INT, 0},
    {"Total", "total_us", TL_COL_TIME, 0}, {"Avg", "avg_us", TL_COL_TIME, 0},
    {"Max", "max_us", TL_COL_TIME, 0},     {"Min", "min_us", TL_COL_TIME, 0},
    {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

typedef struct kacc {
    uint32_t name;
    uint32_t track;
    int64_t calls, total, max, min;
} kacc;

tl_table *tl_view_kernel(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    int per_stream = o && o->per_stream;
    tl_table *tab = per_stream
                        ? tl_table_new("Kernel Summary (per stream)", "kernel", cols, C_NCOLS)
                        : tl_table_new("Kernel Summary", "kernel", name_cols,
                                       (int)(sizeof name_cols / sizeof name_cols[0]));
    tl_keymap map = {0};
    kacc *acc = NULL;
    size_t nacc = 0, cap = 0;
    int64_t sum = 0;
    tl_gpu_scope sc;
    int scope_ok = tl_gpu_scope_init(t, o, &sc) == 0;
    if (!tab || !scope_ok)
        goto oom;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_KERNEL || !tl_gpu_scope_counts(t, &sc, e))
            continue;
        uint64_t key = per_stream ? tl_key2(e->name, e->track) : e->name;
        int32_t k = tl_keymap_get(&map, key);
        if (k < 0) {
            if (nacc == cap) {
                size_t nc = cap ? cap * 2 : 64;
                kacc *na = realloc(acc, nc * sizeof *na);
                if (!na)
                    goto oom;
                acc = na;
                cap = nc;
            }
            k = (int32_t)nacc++;
            acc[k] = (kacc){e->name, e->track, 0, 0, INT64_MIN, INT64_MAX};
            if (tl_keymap_put(&map, key, k) != 0)
                goto oom;
        }
        kacc *a = &acc[k];
        a->calls++;
        a->total = tl_add_sat(a->total, e->dur);
        if (e->dur > a->max)
            a->max = e->dur;
        if (e->dur < a->min)
            a->min = e->dur;
        sum = tl_add_sat(sum, e->dur);
    }
    /* column indices of the table actually built */
    int cn = 0, cc = per_stream ? C_CALLS : 1, ct = cc + 1, ca = cc + 2, cx = cc + 3, cm = cc + 4,
        cr = cc + 5;
    for (size_t k = 0; k < nacc; k++) {
        const kacc *a = &acc[k];
        int r = tl_table_add_row(tab);
        if (r < 0)
            goto oom;
        tl_table_str(tab, r, cn, tl_str(&t->strings, a->name));
        if (per_stream) {
            const tl_track *tr = &t->tracks[a->track];
            tl_table_int(tab, r, C_DEVICE, tr->device);
            tl_table_int(tab, r, C_STREAM, tr->tid);
        }
        tl_table_int(tab, r, cc, a->calls);
        tl_table_time(tab, r, ct, a->total);
        tl_table_time(tab, r, ca, tl_avg_round(a->total, a->calls));
        tl_table_time(tab, r, cx, a->max);
        tl_table_time(tab, r, cm, a->min);
        if (sum > 0)
            tl_table_pct(tab, r, cr, 100.0 * (double)a->total / (double)sum);
    }
    if (tl_view_sort(tab, o, "total_us", 0, err) != 0) {
        tl_table_free(tab);
        tl_keymap_free(&map);
        free(acc);
        tl_gpu_scope_free(&sc);
        return NULL;
    }
    if (!nacc)
        tl_table_note(tab, "No kernels in %s%s.", tl_gpu_scope_name(&sc),
                      sc.linked_only ? " launched from a runtime call in the file" : "");
    else {
        char s[32];
        tl_fmt_time(s, sizeof s, sum, TL_UNIT_AUTO);
        tl_table_note(tab,
                      "%zu kernel names, %s of kernel time in all (a sum over streams); "
                      "Ratio = total / that sum.",
                      nacc, s);
    }
    if ((!sc.all && sc.w.nsteps) || sc.linked_only)
        tl_table_note(tab, "Kernels %s%s (--window, --linked-only).",
                      sc.all || !sc.w.nsteps ? "in the whole file" : "launched in the steps",
                      sc.linked_only ? " whose launch call is in the file" : "");
    tl_keymap_free(&map);
    free(acc);
    tl_gpu_scope_free(&sc);
    return tab;
oom:
    tl_table_free(tab);
    tl_keymap_free(&map);
    free(acc);
    tl_gpu_scope_free(&sc);
    tl_error_setc(err, TL_ERR_NOMEM, "kernel view: out of memory");
    return NULL;
}
