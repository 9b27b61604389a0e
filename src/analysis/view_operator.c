/*
 * view_operator.c — Operator summary: host operators by name, with the GPU work they launched.
 *
 * Rows are the host operators (TL_CAT_OPERATOR: cpu_op, aten ops, Paddle Operators) keyed by
 * name. Nested operators are rows of their own, as in Paddle's Operator Summary.
 *   CPU total  inclusive duration; Self CPU: minus the direct children (spans and runtime
 *              calls nested in it on its thread)
 *   GPU        kernels launched by runtime calls nested in the operator — the innermost
 *              operator around a runtime call owns the kernel it launched (correlation id /
 *              flow, event.link) — plus those of the operators nested in it (inclusive).
 *              Avg/Max/Min are per call of the operator.
 *   Device     the same for all device work: kernels + copies + memsets (Paddle's "general
 *              GPU time").
 * Ratios: CPU = op CPU total / sum of CPU totals of all operator rows; GPU = op device total /
 * sum of device totals of all rows (Paddle's denominators: op items, not the step).
 * With o->expand, each operator is followed by the device work it owns itself (not that of
 * nested operators), aggregated by name, indented.
 */
#include "analysis/attrib.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum {
    C_NAME,
    C_CALLS,
    C_CPU_TOTAL,
    C_CPU_SELF,
    C_CPU_AVG,
    C_CPU_MAX,
    C_CPU_MIN,
    C_CPU_RATIO,
    C_GPU_TOTAL,
    C_GPU_AVG,
    C_GPU_MAX,
    C_GPU_MIN,
    C_DEV_TOTAL,
    C_GPU_RATIO,
    C_NCOLS
};

static const tl_col cols[C_NCOLS] = {
    [C_NAME] = {"Name", "name", TL_COL_STR, 1},
    [C_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [C_CPU_TOTAL] = {"CPU Total", "cpu_total_us", TL_COL_TIME, 0},
    [C_CPU_SELF] = {"Self CPU", "self_cpu_us", TL_COL_TIME, 0},
    [C_CPU_AVG] = {"CPU Avg", "cpu_avg_us", TL_COL_TIME, 0},
    [C_CPU_MAX] = {"CPU Max", "cpu_max_us", TL_COL_TIME, 0},
    [C_CPU_MIN] = {"CPU Min", "cpu_min_us", TL_COL_TIME, 0},
    [C_CPU_RATIO] = {"CPU %", "cpu_ratio_pct", TL_COL_PCT, 0},
    [C_GPU_TOTAL] = {"GPU Total", "gpu_total_us", TL_COL_TIME, 0},
    [C_GPU_AVG] = {"GPU Avg", "gpu_avg_us", TL_COL_TIME, 0},
    [C_GPU_MAX] = {"GPU Max", "gpu_max_us", TL_COL_TIME, 0},
    [C_GPU_MIN] = {"GPU Min", "gpu_min_us", TL_COL_TIME, 0},
    [C_DEV_TOTAL] = {"Device Total", "device_total_us", TL_COL_TIME, 0},
    [C_GPU_RATIO] = {"GPU %", "gpu_ratio_pct", TL_COL_PCT, 0},
};

typedef struct op_acc {
    uint32_t name;
    int32_t first_child; /* expand: first of this op's device-name entries, -1 = none */
    int64_t calls, cpu, self, cpu_max, cpu_min;
} op_acc;
_Static_assert(sizeof(op_acc) == 48, "an operator name's aggregate is 48 bytes");

/* Its device work, kept apart: only a trace with device work has it */
typedef struct op_gacc {
    int64_t gpu, gpu_max, gpu_min, dev;
} op_gacc;

/* one operator call: kernel and device time of its subtree (its self CPU time apart) */
typedef struct op_call {
    int64_t kern, dev;
} op_call;

/* expand: device work owned by one op name, aggregated by device-event name */
typedef struct child_acc {
    uint32_t name;
    int64_t calls, total, max, min;
    int32_t next; /* next entry of the same op, -1 = end */
} child_acc;

/* g: its device work, NULL when the trace has none: the GPU cells stay empty (and text leaves
 * them out) rather than showing zeros. ref: the name cell borrows the trace's string (a table
 * of made rows, freed before the trace) instead of holding a copy. */
static void put_op_row(tl_table *tab, int r, const tl_trace *t, const op_acc *a, const op_gacc *g,
                       int64_t sum_cpu, int64_t sum_dev, int ref)
{
    if (ref)
        tl_table_str_ref(tab, r, C_NAME, tl_str(&t->strings, a->name));
    else
        tl_table_str(tab, r, C_NAME, tl_str(&t->strings, a->name));
    tl_table_int(tab, r, C_CALLS, a->calls);
    tl_table_time(tab, r, C_CPU_TOTAL, a->cpu);
    tl_table_time(tab, r, C_CPU_SELF, a->self);
    tl_table_time(tab, r, C_CPU_AVG, tl_avg_round(a->cpu, a->calls));
    tl_table_time(tab, r, C_CPU_MAX, a->cpu_max);
    tl_table_time(tab, r, C_CPU_MIN, a->cpu_min);
    if (sum_cpu > 0)
        tl_table_pct(tab, r, C_CPU_RATIO, 100.0 * (double)a->cpu / (double)sum_cpu);
    if (!g)
        return;
    tl_table_time(tab, r, C_GPU_TOTAL, g->gpu);
    tl_table_time(tab, r, C_GPU_AVG, tl_avg_round(g->gpu, a->calls));
    tl_table_time(tab, r, C_GPU_MAX, g->gpu_max);
    tl_table_time(tab, r, C_GPU_MIN, g->gpu_min);
    tl_table_time(tab, r, C_DEV_TOTAL, g->dev);
    if (sum_dev > 0)
        tl_table_pct(tab, r, C_GPU_RATIO, 100.0 * (double)g->dev / (double)sum_dev);
}

/* Finding an op again by the name printed in a sorted row: acc indices sorted by name. */
typedef struct name_ctx {
    const tl_trace *t;
    const op_acc *acc;
} name_ctx;

static int by_name(const void *pa, const void *pb, void *p)
{
    const name_ctx *x = p;
    return strcmp(tl_str(&x->t->strings, x->acc[*(const int32_t *)pa].name),
                  tl_str(&x->t->strings, x->acc[*(const int32_t *)pb].name));
}

static int32_t find_op(const tl_trace *t, const op_acc *acc, const int32_t *byname, size_t n,
                       const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi && name) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(tl_str(&t->strings, acc[byname[mid]].name), name);
        if (c == 0)
            return byname[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The row of name id nm: byid for the trace's own ids, map for any other (a damaged model). */
static int32_t row_of(const tl_trace *t, const int32_t *byid, const tl_keymap *map, uint32_t nm)
{
    return nm < t->strings.count ? byid[nm] : tl_keymap_get(map, nm);
}

/* A table of made rows (o->made_rows, without expand): the aggregates are the rows, made as
 * they are written; a million operator names are held as a million op_accs, not as their
 * cells as well. */
typedef struct made {
    const tl_trace *t;
    op_acc *acc;
    op_gacc *gacc; /* NULL: no device work */
    int64_t sum_cpu, sum_dev;
} made;

static void made_fill(const void *ctx, int row, tl_table *one)
{
    const made *m = ctx;
    put_op_row(one, 0, m->t, &m->acc[row], m->gacc ? &m->gacc[row] : NULL, m->sum_cpu, m->sum_dev,
               1);
}

static void made_free(void *ctx)
{
    made *m = ctx;
    if (m) {
        free(m->acc);
        free(m->gacc);
    }
    free(m);
}

tl_table *tl_view_operator(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    int expand = o && o->expand;
    int lazy = !expand && o && o->made_rows; /* a table of made rows, made once acc is */
    tl_table *tab = lazy ? NULL : tl_table_new("Operator Summary", "operator", cols, C_NCOLS);
    tl_table *out = NULL;
    /* per operator call: its ordinal (a bit an event: tl_evrank) and its times */
    tl_evrank rk = {0};
    int rk_ok = tl_evrank_build(t, 1u << TL_CAT_OPERATOR, &rk) == 0;
    /* name id -> its row in acc, -1 = none yet (ids are dense: an array, not a hash) */
    int32_t *byid = malloc((t->strings.count ? t->strings.count : 1) * sizeof *byid);
    op_call *oc = NULL;
    int64_t *self = NULL; /* per operator call: duration minus its direct children */
    size_t nops = 0;
    uint64_t unlinked = 0;
    int gpu = 0; /* any device work in the trace */
    tl_keymap map = {0}, cmap = {0};
    op_acc *acc = NULL;
    op_gacc *gacc = NULL; /* a trace with device work */
    child_acc *ch = NULL;
    int32_t *byname = NULL;
    size_t nacc = 0, nch = 0, chcap = 0;
    if ((!tab && !lazy) || !rk_ok || !byid)
        goto oom;
    memset(byid, 0xff, (t->strings.count ? t->strings.count : 1) * sizeof *byid);
    /* The rows, numbered in order of their names' first call, then made at their exact count
     * (a doubled array's slack is up to a row per name) */
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_OPERATOR || row_of(t, byid, &map, e->name) >= 0)
            continue;
        if (nacc >= INT32_MAX)
            goto oom;
        if (e->name < t->strings.count)
            byid[e->name] = (int32_t)nacc;
        else if (tl_keymap_put(&map, e->name, (int32_t)nacc) != 0)
            goto oom;
        nacc++;
    }
    acc = tl_big_calloc(nacc ? nacc : 1, sizeof *acc); /* calls 0: not met yet */
    nops = rk.n;
    self = tl_big_alloc((nops ? nops : 1) * sizeof *self);
    if (!acc || !self)
        goto oom;
    tl_self_times_of(t, &rk, self); /* children: spans and runtime calls on its thread */
    /* device work: to its owner and every operator above it */
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (!tl_is_device_work(e))
            continue;
        /* the calls' device time: made with the first device work (16 bytes a call that a
         * trace of host operators only would hold for nothing) */
        if (!gpu && !(oc = tl_big_calloc(nops ? nops : 1, sizeof *oc)))
            goto oom;
        gpu = 1;
        int32_t ow = tl_launch_owner(t, i, TL_CATBIT(TL_CAT_OPERATOR));
        if (ow == TL_NONE) {
            unlinked++;
            continue;
        }
        for (int32_t a = ow; a != TL_NONE; a = t->ev[a].parent) {
            int64_t k = tl_evrank_of(&rk, (size_t)a);
            if (k < 0)
                continue;
            oc[k].dev = tl_add_sat(oc[k].dev, e->dur);
            if (e->cat == TL_CAT_KERNEL)
                oc[k].kern = tl_add_sat(oc[k].kern, e->dur);
        }
    }

    if (gpu && !(gacc = tl_big_calloc(nacc ? nacc : 1, sizeof *gacc)))
        goto oom;
    int64_t sum_cpu = 0, sum_dev = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_OPERATOR)
            continue;
        int32_t k = row_of(t, byid, &map, e->name);
        op_acc *a = &acc[k];
        if (!a->calls)
            *a = (op_acc){
                .name = e->name, .cpu_max = INT64_MIN, .cpu_min = INT64_MAX, .first_child = -1};
        int64_t c = tl_evrank_of(&rk, i);
        a->calls++;
        a->cpu = tl_add_sat(a->cpu, e->dur);
        a->self = tl_add_sat(a->self, self[c]);
        a->cpu_max = e->dur > a->cpu_max ? e->dur : a->cpu_max;
        a->cpu_min = e->dur < a->cpu_min ? e->dur : a->cpu_min;
        sum_cpu = tl_add_sat(sum_cpu, e->dur);
        if (!gacc)
            continue;
        op_gacc *ga = &gacc[k];
        const op_call *call = &oc[c];
        int64_t g = call->kern;
        if (a->calls == 1)
            *ga = (op_gacc){.gpu_max = INT64_MIN, .gpu_min = INT64_MAX};
        ga->gpu = tl_add_sat(ga->gpu, g);
        ga->gpu_max = g > ga->gpu_max ? g : ga->gpu_max;
        ga->gpu_min = g < ga->gpu_min ? g : ga->gpu_min;
        ga->dev = tl_add_sat(ga->dev, call->dev);
        sum_dev = tl_add_sat(sum_dev, call->dev);
    }
    /* the per-call scratch is done with before the rows are made and sorted */
    free(oc);
    free(self);
    oc = NULL;
    self = NULL;
    tl_evrank_free(&rk);
    if (lazy) {
        free(byid);
        byid = NULL;
        tl_keymap_free(&map);
        made *m = malloc(sizeof *m);
        if (!m || nacc > INT_MAX) {
            free(m);
            goto oom;
        }
        *m = (made){t, acc, gacc, sum_cpu, sum_dev};
        acc = NULL; /* the table's now */
        gacc = NULL;
        tab = tl_table_new_rows("Operator Summary", "operator", cols, C_NCOLS, (int)nacc, made_fill,
                                m, made_free);
        if (!tab)
            goto oom;
        if (tl_view_sort(tab, o, "cpu_total_us", 0, err) != 0)
            goto fail;
        goto notes;
    }
    if (expand) {
        /* device work by (owning op name, device-event name) */
        tl_cat_walk cw;
        for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
             i = tl_cat_walk_step(&cw, i)) {
            const tl_event *e = &t->ev[i];
            if (!tl_is_device_work(e))
                continue;
            int32_t ow = tl_launch_owner(t, i, TL_CATBIT(TL_CAT_OPERATOR));
            if (ow == TL_NONE)
                continue;
            int32_t k = row_of(t, byid, &map, t->ev[ow].name);
            if (k < 0)
                continue;
            uint64_t key = tl_key2((uint32_t)k, e->name);
            int32_t c = tl_keymap_get(&cmap, key);
            if (c < 0) {
                if (nch == chcap) {
                    size_t nc = chcap ? chcap * 2 : 64;
                    child_acc *nn = realloc(ch, nc * sizeof *nn);
                    if (!nn)
                        goto oom;
                    ch = nn;
                    chcap = nc;
                }
                c = (int32_t)nch++;
                ch[c] = (child_acc){e->name, 0, 0, INT64_MIN, INT64_MAX, -1};
                /* append at the end of the op's list to keep first-seen order */
                int32_t *link = &acc[k].first_child;
                while (*link >= 0)
                    link = &ch[*link].next;
                *link = c;
                if (tl_keymap_put(&cmap, key, c) != 0)
                    goto oom;
            }
            child_acc *ca = &ch[c];
            ca->calls++;
            ca->total = tl_add_sat(ca->total, e->dur);
            ca->max = e->dur > ca->max ? e->dur : ca->max;
            ca->min = e->dur < ca->min ? e->dur : ca->min;
        }
    }
    for (size_t k = 0; k < nacc; k++) {
        int r = tl_table_add_row(tab);
        if (r < 0)
            goto oom;
        put_op_row(tab, r, t, &acc[k], gacc ? &gacc[k] : NULL, sum_cpu, sum_dev, 0);
    }
    if (tl_view_sort(tab, o, "cpu_total_us", 0, err) != 0) {
        tl_table_free(tab);
        tab = NULL;
        goto fail;
    }
    if (expand) {
        /* rebuild in the sorted order with each op's device work under it */
        out = tl_table_new("Operator Summary", "operator", cols, C_NCOLS);
        byname = malloc((nacc ? nacc : 1) * sizeof *byname);
        if (!out || !byname)
            goto oom;
        for (size_t k = 0; k < nacc; k++)
            byname[k] = (int32_t)k;
        name_ctx ctx = {t, acc};
        qsort_r(byname, nacc, sizeof *byname, by_name, &ctx);
        for (int r = 0; r < tab->nrows; r++) {
            const char *name = tab->cells[(size_t)r * C_NCOLS + C_NAME].s;
            int32_t k = find_op(t, acc, byname, nacc, name);
            if (k < 0)
                continue;
            int nr = tl_table_add_row(out);
            if (nr < 0)
                goto oom;
            put_op_row(out, nr, t, &acc[k], gacc ? &gacc[k] : NULL, sum_cpu, sum_dev, 0);
            for (int32_t c = acc[k].first_child; c >= 0; c = ch[c].next) {
                int cr = tl_table_add_row(out);
                if (cr < 0)
                    goto oom;
                tl_table_str(out, cr, C_NAME, tl_str(&t->strings, ch[c].name));
                tl_table_indent(out, cr, C_NAME, 1);
                tl_table_int(out, cr, C_CALLS, ch[c].calls);
                tl_table_time(out, cr, C_GPU_TOTAL, ch[c].total);
                tl_table_time(out, cr, C_GPU_AVG, tl_avg_round(ch[c].total, ch[c].calls));
                tl_table_time(out, cr, C_GPU_MAX, ch[c].max);
                tl_table_time(out, cr, C_GPU_MIN, ch[c].min);
                tl_table_time(out, cr, C_DEV_TOTAL, ch[c].total);
                if (gacc[k].dev > 0)
                    tl_table_pct(out, cr, C_GPU_RATIO,
                                 100.0 * (double)ch[c].total / (double)gacc[k].dev);
            }
        }
        tl_table_free(tab);
        tab = out;
        out = NULL;
    }
notes:
    if (!nacc)
        tl_table_note(tab, "No host operators in this trace.");
    else {
        if (gpu) {
            tl_table_note(tab, "GPU = kernels launched by the operator and the operators nested "
                               "in it (a sum); Device = kernels + copies + memsets.");
            tl_table_note(tab,
                          "CPU %% = CPU total / sum over all operator rows; GPU %% = device "
                          "total / sum over all operator rows%s.",
                          expand ? "; under an operator: share of its device total" : "");
        } else
            tl_table_note(tab, "CPU %% = CPU total / sum over all operator rows. No device work "
                               "in this trace: the GPU columns are left out.");
        if (unlinked)
            tl_table_note(tab,
                          "%llu device items were launched outside any operator or are not "
                          "linked to a runtime call.",
                          (unsigned long long)unlinked);
    }
    goto done;
oom:
    tl_error_setc(err, TL_ERR_NOMEM, "operator view: out of memory");
fail:
    tl_table_free(tab);
    tl_table_free(out);
    tab = NULL;
done:
    tl_evrank_free(&rk);
    free(byid);
    free(oc);
    free(self);
    tl_keymap_free(&map);
    tl_keymap_free(&cmap);
    free(acc);
    free(gacc);
    free(ch);
    free(byname);
    return tab;
}
