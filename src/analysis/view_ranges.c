/*
 * view_ranges.c — the UserDefined view: the program's own ranges, aggregated by name.
 *
 * Per name: calls, total (sum of durations, so a range nested in itself or running on two
 * threads at once counts each time, like CPU time), self (duration minus the direct children
 * on the same thread, tl_self_times), avg/max/min of the duration, and total as a share of the
 * profiled window. With thread_sep the rows are grouped per thread, each group sorted and cut
 * on its own; a "Thread" column says which.
 */
#include "analysis/steps.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { R_THREAD, R_NAME, R_CALLS, R_TOTAL, R_SELF, R_AVG, R_MAX, R_MIN, R_RATIO, R_NCOLS };

static const tl_col cols[R_NCOLS] = {
    [R_THREAD] = {"Thread", "thread", TL_COL_INT, 0},
    [R_NAME] = {"Name", "name", TL_COL_STR, 1},
    [R_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [R_TOTAL] = {"Total", "total_us", TL_COL_TIME, 0},
    [R_SELF] = {"Self", "self_us", TL_COL_TIME, 0},
    [R_AVG] = {"Avg", "avg_us", TL_COL_TIME, 0},
    [R_MAX] = {"Max", "max_us", TL_COL_TIME, 0},
    [R_MIN] = {"Min", "min_us", TL_COL_TIME, 0},
    [R_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

typedef struct agg {
    uint32_t name;
    uint32_t calls; /* at most one an event (nev <= INT32_MAX) */
    int64_t total, self, max, min;
    int64_t first; /* the earliest start: rows of equal totals keep this order */
} agg;
_Static_assert(sizeof(agg) == 48, "a name's aggregate is 48 bytes");

static int agg_by_first(const void *a, const void *b)
{
    const agg *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

/* Row r of the table (off: the column shift without the Thread column). */
static void put_row(tl_table *tab, int r, int off, const tl_trace *t, const agg *a, int64_t wtotal)
{
    /* the trace's own string: the table is freed before the trace */
    tl_table_str_ref(tab, r, R_NAME + off, tl_str(&t->strings, a->name));
    tl_table_int(tab, r, R_CALLS + off, a->calls);
    tl_table_time(tab, r, R_TOTAL + off, a->total);
    tl_table_time(tab, r, R_SELF + off, a->self);
    tl_table_time(tab, r, R_AVG + off, a->total / a->calls);
    tl_table_time(tab, r, R_MAX + off, a->max);
    tl_table_time(tab, r, R_MIN + off, a->min);
    tl_table_pct(tab, r, R_RATIO + off,
                 wtotal > 0 ? 100.0 * (double)a->total / (double)wtotal : 0.0);
}

/* A table of made rows (o->made_rows, one group): the aggregates are the rows, made as they
 * are written; a million names are held as a million aggs, not as their cells as well. */
typedef struct made {
    const tl_trace *t;
    agg *ag;
    int64_t wtotal;
} made;

static void made_fill(const void *ctx, int row, tl_table *one)
{
    const made *m = ctx;
    put_row(one, 0, -R_NAME, m->t, &m->ag[row], m->wtotal);
}

static void made_free(void *ctx)
{
    made *m = ctx;
    if (m)
        free(m->ag);
    free(m);
}

tl_table *tl_view_ranges(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    int sep = o && o->thread_sep;
    tl_window w;
    tl_steps steps;
    if (tl_steps_load(t, &steps) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "ranges: out of memory");
        return NULL;
    }
    tl_steps_window(&steps, &w);
    tl_steps_free(&steps);
    int lazy = !sep && o && o->made_rows;
    /* Without thread_sep the Thread column is left out: columns from R_NAME on. A table of made
     * rows is made once the aggregates are (below). */
    tl_table *tab = lazy ? NULL
                         : tl_table_new("UserDefined Summary", "ranges", sep ? cols : cols + R_NAME,
                                        sep ? R_NCOLS : R_NCOLS - R_NAME);
    /* the ranges' self times, numbered in event order (not one an event: 8 bytes a range) */
    tl_evrank rk = {0};
    int rk_ok = tl_evrank_build(t, 1u << TL_CAT_USER, &rk) == 0;
    int64_t *self = rk_ok ? tl_big_alloc((rk.n ? rk.n : 1) * sizeof *self) : NULL;
    int32_t *slot = malloc((t->strings.count ? t->strings.count : 1) * sizeof *slot);
    agg *ag = NULL;
    size_t nag = 0, cap = 0;
    if ((!tab && !lazy) || !self || !slot)
        goto oom;
    tl_self_times_of(t, &rk, self);
    for (uint32_t s = 0; s < t->strings.count; s++)
        slot[s] = -1;
    int off = sep ? 0 : -R_NAME; /* column index shift */

    /* Events are grouped by track after finish: one pass per group (all tracks, or one). */
    size_t i = 0;
    int64_t nranges = 0;
    while (i < t->nev) {
        size_t end = t->nev;
        if (sep) {
            end = i;
            while (end < t->nev && t->ev[end].track == t->ev[i].track)
                end++;
        }
        for (size_t j = i; j < end; j++) {
            const tl_event *e = &t->ev[j];
            if (e->cat != TL_CAT_USER || (e->flags & TL_EV_INSTANT))
                continue;
            uint32_t nm = e->name < t->strings.count ? e->name : 0;
            if (slot[nm] < 0) {
                if (nag == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    agg *na = realloc(ag, nc * sizeof *na);
                    if (!na)
                        goto oom;
                    ag = na;
                    cap = nc;
                }
                memset(&ag[nag], 0, sizeof *ag);
                ag[nag].name = nm;
                slot[nm] = (int32_t)nag++;
            }
            agg *a = &ag[slot[nm]];
            a->calls++;
            a->total = tl_add_sat(a->total, e->dur);
            a->self = tl_add_sat(a->self, self[tl_evrank_of(&rk, j)]);
            if (a->calls == 1 || e->dur > a->max)
                a->max = e->dur;
            if (a->calls == 1 || e->dur < a->min)
                a->min = e->dur;
            if (a->calls == 1 || e->ts < a->first)
                a->first = e->ts;
            nranges++;
        }
        if (lazy) { /* one group: the aggregates in order of their first start are the rows */
            free(self);
            free(slot);
            tl_evrank_free(&rk);
            self = NULL;
            slot = NULL;
            if (nag > 1)
                qsort(ag, nag, sizeof *ag, agg_by_first);
            made *m = malloc(sizeof *m);
            if (!m || nag > INT_MAX) {
                free(m);
                goto oom;
            }
            *m = (made){t, ag, w.total};
            ag = NULL; /* the table's now */
            tab = tl_table_new_rows("UserDefined Summary", "ranges", cols + R_NAME,
                                    R_NCOLS - R_NAME, (int)nag, made_fill, m, made_free);
            if (!tab)
                goto oom;
            if (tl_view_sort(tab, o, "total_us", 0, err) != 0)
                goto fail;
            break;
        }
        int from = tab->nrows;
        const tl_track *tr = t->ev[i].track < t->ntracks ? &t->tracks[t->ev[i].track] : NULL;
        if (nag > (size_t)(INT_MAX - from) || tl_table_reserve(tab, from + (int)nag) != 0)
            goto oom;
        /* Rows in order of their first start (then the sort by total is stable): an order
         * of the trace's times, not of the order its threads come in the file. */
        if (nag > 1)
            qsort(ag, nag, sizeof *ag, agg_by_first);
        /* The table takes the names from the end of ag (reversed first, to keep their order),
         * which gives back its memory as the table grows: a row per distinct name is held
         * once (as an agg, then as cells), not twice. */
        for (size_t k = 0; k < nag / 2; k++) {
            agg x = ag[k];
            ag[k] = ag[nag - 1 - k];
            ag[nag - 1 - k] = x;
        }
        while (nag > 0) {
            size_t k = --nag;
            int r = tl_table_add_row(tab);
            if (r < 0)
                goto oom;
            if (sep && tr)
                tl_table_int(tab, r, R_THREAD + off, tr->tid);
            put_row(tab, r, off, t, &ag[k], w.total);
            slot[ag[k].name] = -1; /* for the next group (thread_sep) */
            if (k % 65536 == 0 && k > 0) {
                agg *na = realloc(ag, k * sizeof *na);
                if (na) {
                    ag = na;
                    cap = k;
                }
            }
        }
        if (tl_view_sort(tab, o, "total_us", from, err) != 0)
            goto fail;
        i = end;
    }
    if (!tab && !(tab = tl_table_new("UserDefined Summary", "ranges", cols + R_NAME,
                                     R_NCOLS - R_NAME))) /* made rows, of a trace of no events */
        goto oom;
    if (!nranges)
        tl_table_note(tab, "No user-defined ranges in this trace.");
    else
        tl_table_note(tab,
                      "Total sums durations (nested or concurrent calls count each time); "
                      "Self excludes direct children; Ratio = Total / %s.",
                      w.nsteps ? "step time" : "trace span");
    free(self);
    free(slot);
    free(ag);
    tl_evrank_free(&rk);
    return tab;
oom:
    tl_error_setc(err, TL_ERR_NOMEM, "ranges: out of memory");
fail:
    free(self);
    free(slot);
    free(ag);
    tl_evrank_free(&rk);
    tl_table_free(tab);
    return NULL;
}
