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

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

/* Row r of the table: cn.. the columns of the table built (per_stream: Dev and Stream too);
 * ref: the name cell borrows the trace's string (a table of made rows, freed before the trace)
 * instead of holding a copy. */
static void put_row(tl_table *tab, int r, const tl_trace *t, const kacc *a, int per_stream,
                    int64_t sum, int ref)
{
    int cc = per_stream ? C_CALLS : 1;
    const char *name = tl_str(&t->strings, a->name);
    if (ref)
        tl_table_str_ref(tab, r, 0, name);
    else
        tl_table_str(tab, r, 0, name);
    if (per_stream) {
        const tl_track *tr = &t->tracks[a->track];
        tl_table_int(tab, r, C_DEVICE, tr->device);
        tl_table_int(tab, r, C_STREAM, tr->tid);
    }
    tl_table_int(tab, r, cc, a->calls);
    tl_table_time(tab, r, cc + 1, a->total);
    tl_table_time(tab, r, cc + 2, tl_avg_round(a->total, a->calls));
    tl_table_time(tab, r, cc + 3, a->max);
    tl_table_time(tab, r, cc + 4, a->min);
    if (sum > 0)
        tl_table_pct(tab, r, cc + 5, 100.0 * (double)a->total / (double)sum);
}

/* A table of made rows (o->made_rows): the aggregates are the rows, made as they are written;
 * a million kernel names are held as a million kaccs, not as their cells as well. */
typedef struct made {
    const tl_trace *t;
    kacc *acc;
    int per_stream;
    int64_t sum;
} made;

static void made_fill(const void *ctx, int row, tl_table *one)
{
    const made *m = ctx;
    put_row(one, 0, m->t, &m->acc[row], m->per_stream, m->sum, 1);
}

static void made_free(void *ctx)
{
    made *m = ctx;
    if (m)
        free(m->acc);
    free(m);
}

/* The row of kernel e: by name id (byid) for the trace's own ids, else by (name, stream) or a
 * name id out of the table (a damaged model) in map. */
static int32_t row_of(const tl_trace *t, const int32_t *byid, const tl_keymap *map,
                      const tl_event *e, int per_stream)
{
    if (!per_stream && e->name < t->strings.count)
        return byid[e->name];
    return tl_keymap_get(map, per_stream ? tl_key2(e->name, e->track) : e->name);
}

tl_table *tl_view_kernel(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    int per_stream = o && o->per_stream;
    int lazy = o && o->made_rows;
    const char *title = per_stream ? "Kernel Summary (per stream)" : "Kernel Summary";
    const tl_col *tc = per_stream ? cols : name_cols;
    int ntc = per_stream ? C_NCOLS : (int)(sizeof name_cols / sizeof name_cols[0]);
    tl_table *tab = lazy ? NULL : tl_table_new(title, "kernel", tc, ntc);
    tl_keymap map = {0};
    kacc *acc = NULL;
    size_t nacc = 0;
    int64_t sum = 0;
    tl_gpu_scope sc;
    int scope_ok = tl_gpu_scope_init(t, o, &sc) == 0;
    /* name id -> its row in acc, -1 = none yet (per name: ids are dense, an array) */
    int32_t *byid =
        per_stream ? NULL : malloc((t->strings.count ? t->strings.count : 1) * sizeof *byid);
    if ((!tab && !lazy) || !scope_ok || (!per_stream && !byid))
        goto oom;
    if (byid)
        memset(byid, 0xff, (t->strings.count ? t->strings.count : 1) * sizeof *byid);
    /* The rows, numbered in order of their first kernel, then made at their exact count (a
     * doubled array's slack is up to a row per name) */
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_KERNEL)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_KERNEL || !tl_gpu_scope_counts(t, &sc, e) ||
            row_of(t, byid, &map, e, per_stream) >= 0)
            continue;
        if (nacc >= INT32_MAX)
            goto oom;
        if (!per_stream && e->name < t->strings.count)
            byid[e->name] = (int32_t)nacc;
        else if (tl_keymap_put(&map, per_stream ? tl_key2(e->name, e->track) : e->name,
                               (int32_t)nacc) != 0)
            goto oom;
        nacc++;
    }
    if (!(acc = tl_big_calloc(nacc ? nacc : 1, sizeof *acc))) /* calls 0: not met yet */
        goto oom;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_KERNEL)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_KERNEL || !tl_gpu_scope_counts(t, &sc, e))
            continue;
        kacc *a = &acc[row_of(t, byid, &map, e, per_stream)];
        if (!a->calls)
            *a = (kacc){e->name, e->track, 0, 0, INT64_MIN, INT64_MAX};
        a->calls++;
        a->total = tl_add_sat(a->total, e->dur);
        if (e->dur > a->max)
            a->max = e->dur;
        if (e->dur < a->min)
            a->min = e->dur;
        sum = tl_add_sat(sum, e->dur);
    }
    free(byid);
    byid = NULL;
    tl_keymap_free(&map);
    if (lazy) {
        made *m = malloc(sizeof *m);
        if (!m || nacc > INT_MAX) {
            free(m);
            goto oom;
        }
        *m = (made){t, acc, per_stream, sum};
        acc = NULL; /* the table's now */
        if (!(tab =
                  tl_table_new_rows(title, "kernel", tc, ntc, (int)nacc, made_fill, m, made_free)))
            goto oom;
    } else {
        if (tl_table_reserve(tab, nacc > INT_MAX ? INT_MAX : (int)nacc) != 0)
            goto oom;
        for (size_t k = 0; k < nacc; k++) {
            int r = tl_table_add_row(tab);
            if (r < 0)
                goto oom;
            put_row(tab, r, t, &acc[k], per_stream, sum, 0);
        }
        free(acc);
        acc = NULL;
    }
    if (tl_view_sort(tab, o, "total_us", 0, err) != 0) {
        tl_table_free(tab);
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
    tl_gpu_scope_free(&sc);
    return tab;
oom:
    tl_table_free(tab);
    tl_keymap_free(&map);
    free(acc);
    free(byid);
    tl_gpu_scope_free(&sc);
    tl_error_setc(err, TL_ERR_NOMEM, "kernel view: out of memory");
    return NULL;
}
