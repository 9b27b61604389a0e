/*
 * view_perf.c — the Perf summary (Paddle's benchmark timer), computed from a trace.
 *
 *   batch_cost  = duration of each step
 *   reader_cost = wall time in Dataloader ranges within each step (the union over threads of
 *                 the ranges cut to the step, so nested or concurrent loading counts once)
 *   throughput  = samples per second when the trace carries per-step sample counts
 *                 (tally_step(n)), else steps per second
 *
 * Each with avg/max/min over the steps. avg of a cost = total / number of steps; avg
 * throughput = total samples / total step time (not the mean of per-step rates); max/min of
 * throughput are per-step rates. Reader ratio = total reader time / total step time. Paddle's
 * timer skips the first 10 steps, divides by one step too few and never updates min from the
 * first value; none of that is copied here: every step of the trace counts, exactly once. The
 * steps are those of steps.h: a step closed by tally_stop or by the end of the trace is none.
 */
#include "analysis/steps.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

enum { P_NAME, P_STEPS, P_AVG, P_MAX, P_MIN, P_TOTAL, P_RATIO, P_NCOLS };

static const tl_col cost_cols[P_NCOLS] = {
    [P_NAME] = {"Name", "name", TL_COL_STR, 1},
    [P_STEPS] = {"Steps", "steps", TL_COL_INT, 0},
    [P_AVG] = {"Avg", "avg_us", TL_COL_TIME, 0},
    [P_MAX] = {"Max", "max_us", TL_COL_TIME, 0},
    [P_MIN] = {"Min", "min_us", TL_COL_TIME, 0},
    [P_TOTAL] = {"Total", "total_us", TL_COL_TIME, 0},
    [P_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

enum { I_UNIT, I_AVG, I_MAX, I_MIN, I_SAMPLES, I_NCOLS };

static const tl_col ips_cols[I_NCOLS] = {
    [I_UNIT] = {"Unit", "unit", TL_COL_STR, 1},
    [I_AVG] = {"Avg", "avg", TL_COL_RATE, 0},
    [I_MAX] = {"Max", "max", TL_COL_RATE, 0},
    [I_MIN] = {"Min", "min", TL_COL_RATE, 0},
    [I_SAMPLES] = {"Samples", "samples", TL_COL_INT, 0},
};

static void cost_row(tl_table *tab, const char *name, const int64_t *v, int n, int64_t whole)
{
    int64_t total = 0, mx = 0, mn = 0;
    for (int k = 0; k < n; k++) {
        total = tl_add_sat(total, v[k]);
        if (k == 0 || v[k] > mx)
            mx = v[k];
        if (k == 0 || v[k] < mn)
            mn = v[k];
    }
    int r = tl_table_add_row(tab);
    if (r < 0)
        return;
    tl_table_str(tab, r, P_NAME, name);
    tl_table_int(tab, r, P_STEPS, n);
    tl_table_time(tab, r, P_AVG, n ? total / n : 0);
    tl_table_time(tab, r, P_MAX, mx);
    tl_table_time(tab, r, P_MIN, mn);
    tl_table_time(tab, r, P_TOTAL, total);
    tl_table_pct(tab, r, P_RATIO, whole > 0 ? 100.0 * (double)total / (double)whole : 0.0);
}

tl_table *tl_view_perf(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    (void)o;
    tl_steps steps;
    int n = 0;
    tl_table *tab = NULL;
    int64_t *v = NULL, *reader = NULL;
    tl_ivset *rd = NULL;
    if (tl_steps_load(t, &steps) != 0)
        goto oom;
    n = steps.pseudo ? 0 : steps.n;
    const tl_step *st = steps.v;
    tab = tl_table_new("Perf Summary", "perf", cost_cols, P_NCOLS);
    v = calloc(n ? (size_t)n : 1, sizeof *v);
    reader = calloc(n ? (size_t)n : 1, sizeof *reader);
    rd = calloc(n ? (size_t)n : 1, sizeof *rd);
    if (!tab || !v || !reader || !rd)
        goto oom;
    if (n == 0) {
        tl_table_note(tab, "No steps in this trace: nothing to summarize.");
        goto done;
    }
    int samples_mode = steps.with_samples;

    /* Dataloader ranges cut to each step; the union per step is its reader cost. */
    int any_reader = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_DATALOADER)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_DATALOADER || e->dur <= 0)
            continue;
        int64_t s = e->ts, end = e->ts + e->dur;
        for (int j = tl_steps_from(&steps, s); j < n && st[j].s < end; j++) {
            int64_t a = s > st[j].s ? s : st[j].s, b = end < st[j].e ? end : st[j].e;
            if (b > a) {
                tl_ivset_add(&rd[j], a, b);
                any_reader = 1;
            }
        }
    }
    for (int j = 0; j < n; j++) {
        tl_ivset_normalize(&rd[j]);
        reader[j] = tl_ivset_length(&rd[j]);
    }

    int64_t batch_total = 0;
    for (int j = 0; j < n; j++) {
        v[j] = st[j].e - st[j].s;
        batch_total = tl_add_sat(batch_total, v[j]);
    }
    cost_row(tab, "batch_cost", v, n, batch_total);
    if (any_reader) {
        for (int j = 0; j < n; j++)
            v[j] = reader[j];
        cost_row(tab, "reader_cost", v, n, batch_total);
        int64_t reader_total = 0;
        for (int j = 0; j < n; j++)
            reader_total = tl_add_sat(reader_total, reader[j]);
        tl_table_note(tab, "Reader Ratio: %.3f%% (reader time / step time)",
                      batch_total > 0 ? 100.0 * (double)reader_total / (double)batch_total : 0.0);
    }
    tl_steps_note(&steps, tab);
    tl_table_note(tab, "batch_cost = step duration; reader_cost = time in Dataloader ranges "
                       "within the step; every step counts once.");

    tl_table *ips = tl_table_new("Throughput", "perf_ips", ips_cols, I_NCOLS);
    if (!ips)
        goto oom;
    tab->next = ips;
    int64_t samples = 0;
    double mx = 0, mn = 0;
    for (int j = 0; j < n; j++) {
        int64_t sm = samples_mode ? st[j].samples : 1;
        samples = tl_add_sat(samples, sm);
        double rate = (double)sm / ((double)(st[j].e - st[j].s) / 1e9);
        if (j == 0 || rate > mx)
            mx = rate;
        if (j == 0 || rate < mn)
            mn = rate;
    }
    int r = tl_table_add_row(ips);
    if (r >= 0) {
        const char *unit = "steps";
        if (samples_mode)
            unit = t->samples_unit && *tl_str(&t->strings, t->samples_unit)
                       ? tl_str(&t->strings, t->samples_unit)
                       : "samples";
        tl_table_strf(ips, r, I_UNIT, "%s/s", unit);
        tl_table_float(ips, r, I_AVG,
                       batch_total > 0 ? (double)samples / ((double)batch_total / 1e9) : 0.0);
        tl_table_float(ips, r, I_MAX, mx);
        tl_table_float(ips, r, I_MIN, mn);
        tl_table_int(ips, r, I_SAMPLES, samples);
    }
    tl_table_note(ips, "Avg = all %s / all step time; Max/Min = per-step rates.",
                  samples_mode ? "samples" : "steps");
done:
    for (int j = 0; j < n; j++)
        tl_ivset_free(&rd[j]);
    free(rd);
    free(reader);
    free(v);
    tl_steps_free(&steps);
    return tab;
oom:
    if (rd)
        for (int j = 0; j < n; j++)
            tl_ivset_free(&rd[j]);
    free(rd);
    free(reader);
    free(v);
    tl_steps_free(&steps);
    tl_table_free(tab);
    tl_error_setc(err, TL_ERR_NOMEM, "perf: out of memory");
    return NULL;
}
