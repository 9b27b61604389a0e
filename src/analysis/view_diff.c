/*
 * view_diff.c — `tally diff A B`: what changed between two traces.
 *
 * Diff never aggregates anything itself. It runs the same view functions the report uses (the
 * ops table, the kernel summary, the user ranges) on both traces and joins their tables by the
 * name column, so a row of the diff always shows the numbers the two reports show. The join is
 * generic (tl_table_diff works on any table with a name column and a numeric column), which
 * keeps one piece of code per idea: a new view is diffable by naming it in the list below.
 *
 * Rows whose name appears several times in one table (one per thread or stream, one per input
 * shape) are summed first. Step time comes from the profiled window of each trace.
 */
#include "analysis/insight.h"
#include "analysis/steps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- noise ------------------------------------------------------------------------------ */

/* The run-to-run noise of a trace: the mean and the standard deviation of its step times (steps
 * that took time; n < 2 gives no spread). */
typedef struct step_spread {
    int n;
    double mean, sd;
} step_spread;

static void mean_sd(const double *v, int n, step_spread *s)
{
    s->n = n;
    s->mean = s->sd = 0;
    for (int i = 0; i < n; i++)
        s->mean += v[i] / n;
    if (n < 2)
        return;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (v[i] - s->mean) * (v[i] - s->mean);
    s->sd = sqrt(ss / (n - 1));
}

/* The spread of t's steps (steps.h: the ones every view counts; none for the pseudo-step). */
static int step_times(const tl_trace *t, step_spread *s)
{
    tl_steps st;
    if (tl_steps_load(t, &st) != 0)
        return -1;
    int n = st.pseudo ? 0 : st.n;
    double *v = malloc((n ? (size_t)n : 1) * sizeof *v);
    int rc = v ? 0 : -1;
    for (int i = 0; v && i < n; i++)
        v[i] = (double)(st.v[i].e - st.v[i].s);
    if (v)
        mean_sd(v, n, s);
    free(v);
    tl_steps_free(&st);
    return rc;
}

/* How a change reads: time that went down is "faster", other numbers go "down"; a change no
 * larger than the noise is "noise". noise < 0: not judged. */
static const char *change_word(int has_a, int has_b, double delta, double noise, int time)
{
    if (!has_a)
        return "new";
    if (!has_b)
        return "vanished";
    if (delta == 0)
        return "same";
    if (noise >= 0 && fabs(delta) <= noise)
        return "noise";
    if (time)
        return delta < 0 ? "faster" : "slower";
    return delta < 0 ? "down" : "up";
}

/* ---- joining two tables ------------------------------------------------------------------ */

typedef struct drow {
    const char *name;
    int64_t calls; /* -1 = unknown */
    double v, v2;  /* the metric and the column shown beside it (TIME/INT/BYTES exact to 2^53) */
    int has;       /* the name occurs in this table */
} drow;

typedef struct jrow {
    const char *name;
    drow a, b;
    double delta;
} jrow;

static int cmp_drow(const void *pa, const void *pb)
{
    return strcmp(((const drow *)pa)->name, ((const drow *)pb)->name);
}

static int is_numeric(tl_coltype ty)
{
    return ty != TL_COL_STR;
}

static double cell_value(const tl_cell *c, tl_coltype ty)
{
    if (!c->set)
        return 0;
    switch (ty) {
    case TL_COL_INT:
    case TL_COL_TIME:
    case TL_COL_BYTES:
        return (double)c->i;
    default:
        return c->d;
    }
}

static int name_col(const tl_table *t)
{
    int c = tl_table_find_col(t, "name");
    if (c >= 0 && t->cols[c].type == TL_COL_STR)
        return c;
    for (c = 0; c < t->ncols; c++)
        if (t->cols[c].type == TL_COL_STR)
            return c;
    return -1;
}

/* The numeric column named metric, or with metric NULL the first time column (else the first
 * numeric one); -1 if none. */
static int metric_col(const tl_table *t, const char *metric)
{
    if (metric) {
        int c = tl_table_find_col(t, metric);
        return c >= 0 && is_numeric(t->cols[c].type) ? c : -1;
    }
    for (int c = 0; c < t->ncols; c++)
        if (t->cols[c].type == TL_COL_TIME)
            return c;
    for (int c = 0; c < t->ncols; c++)
        if (is_numeric(t->cols[c].type))
            return c;
    return -1;
}

static double value_at(const tl_table *t, int row, int col)
{
    return col < 0 ? 0 : cell_value(&t->cells[(size_t)row * t->ncols + col], t->cols[col].type);
}

/* Rows of t summed by name and sorted by name; *n gets the count. NULL on OOM (or no rows).
 * cm, cm2: the metric and the column beside it (-1: the table lacks it; 0 is stored). */
static drow *collect(const tl_table *t, int cn, int cm, int cm2, int cc, size_t *n)
{
    *n = 0;
    if (t->nrows == 0)
        return NULL;
    drow *r = malloc((size_t)t->nrows * sizeof *r);
    if (!r)
        return NULL;
    size_t k = 0;
    for (int i = 0; i < t->nrows; i++) {
        const tl_cell *nc = &t->cells[(size_t)i * t->ncols + cn];
        if (!nc->set || !nc->s)
            continue;
        r[k].name = nc->s;
        r[k].v = value_at(t, i, cm);
        r[k].v2 = value_at(t, i, cm2);
        r[k].calls = -1;
        if (cc >= 0) {
            const tl_cell *cl = &t->cells[(size_t)i * t->ncols + cc];
            if (cl->set)
                r[k].calls = cl->i;
        }
        r[k].has = 1;
        k++;
    }
    qsort(r, k, sizeof *r, cmp_drow);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        if (w && !strcmp(r[w - 1].name, r[i].name)) {
            r[w - 1].v += r[i].v;
            r[w - 1].v2 += r[i].v2;
            if (r[i].calls >= 0)
                r[w - 1].calls = (r[w - 1].calls > 0 ? r[w - 1].calls : 0) + r[i].calls;
        } else {
            r[w++] = r[i];
        }
    }
    *n = w;
    return r;
}

static int cmp_jrow(const void *pa, const void *pb)
{
    const jrow *a = pa, *b = pb;
    double da = fabs(a->delta), db = fabs(b->delta);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void set_value(tl_table *t, int r, int c, double v)
{
    switch (t->cols[c].type) {
    case TL_COL_INT:
        tl_table_int(t, r, c, (int64_t)llround(v));
        break;
    case TL_COL_TIME:
        tl_table_time(t, r, c, (int64_t)llround(v));
        break;
    case TL_COL_BYTES:
        tl_table_bytes(t, r, c, (int64_t)llround(v));
        break;
    case TL_COL_PCT:
        tl_table_pct(t, r, c, v);
        break;
    default:
        tl_table_float(t, r, c, v);
        break;
    }
}

/* Three columns before, after and delta of column c of a table: titles "Total before", ...,
 * keys "total_before_us", ... (the unit suffix kept last). */
typedef struct trio {
    char title[3][96], key[3][96];
} trio;

static void make_trio(const tl_col *c, int short_delta, trio *x)
{
    char base[64], unit[16] = "";
    snprintf(base, sizeof base, "%s", c->key ? c->key : "value");
    size_t bl = strlen(base);
    static const char *const units[] = {"_us", "_pct", "_bytes"};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        size_t ul = strlen(units[i]);
        if (bl > ul && !strcmp(base + bl - ul, units[i])) {
            base[bl - ul] = 0;
            snprintf(unit, sizeof unit, "%s", units[i]);
            break;
        }
    }
    static const char *const what[] = {"before", "after", "delta"};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && short_delta)
            snprintf(x->title[i], sizeof x->title[i], "Delta");
        else
            snprintf(x->title[i], sizeof x->title[i], "%s %s", c->title,
                     i == 2 ? "delta" : what[i]);
        snprintf(x->key[i], sizeof x->key[i], "%s_%s%s", base, what[i], unit);
    }
}

enum {
    X_NAME,
    X_CALLS_A,
    X_CALLS_B,
    X_A,
    X_B,
    X_DELTA,
    X_A2,
    X_B2,
    X_DELTA2,
    X_RATIO,
    X_CHANGE,
    X_NCOLS
};

/* The join of a and b by name on the column metric (decides the order and the change), with
 * the column also shown beside it when both tables have it (NULL: none). A table without the
 * metric gives empty cells on its side, never an error, unless neither has it. noise_rel >= 0:
 * a change of at most noise_rel times the larger value is "noise"; < 0: not judged. */
static tl_table *diff_join(const tl_table *a, const tl_table *b, const char *metric,
                           const char *also, const char *title, const char *key, int top,
                           double noise_rel, tl_error *err)
{
    int an = name_col(a), bn = name_col(b);
    if (an < 0 || bn < 0) {
        tl_error_set(err, "diff: table '%s' has no name column", an < 0 ? a->title : b->title);
        return NULL;
    }
    int am = metric_col(a, metric), bm = metric_col(b, metric);
    if (am < 0 && bm < 0) {
        tl_error_setc(err, metric ? TL_ERR_USAGE : TL_ERR_INPUT,
                      "diff: no numeric column '%s' in '%s'", metric ? metric : "(time)", a->title);
        return NULL;
    }
    /* the column of the side that has it names the other side's */
    const tl_col *mcol = am >= 0 ? &a->cols[am] : &b->cols[bm];
    if (am < 0 || bm < 0) {
        if (am < 0)
            am = tl_table_find_col(a, mcol->key);
        else
            bm = tl_table_find_col(b, mcol->key);
    }
    int a2 = also ? metric_col(a, also) : -1, b2 = also ? metric_col(b, also) : -1;
    int with_also = a2 >= 0 || b2 >= 0;
    const tl_col *acol = a2 >= 0 ? &a->cols[a2] : b2 >= 0 ? &b->cols[b2] : NULL;
    int ac = tl_table_find_col(a, "calls"), bc = tl_table_find_col(b, "calls");
    if (ac >= 0 && a->cols[ac].type != TL_COL_INT)
        ac = -1;
    if (bc >= 0 && b->cols[bc].type != TL_COL_INT)
        bc = -1;
    /* (not when the metric, or the column beside it, is the calls: they are shown then) */
    int with_calls = (ac >= 0 || bc >= 0) && strcmp(mcol->key, "calls") &&
                     !(acol && !strcmp(acol->key, "calls"));

    trio m, m2;
    make_trio(mcol, !with_also, &m);
    if (with_also)
        make_trio(acol, 0, &m2);
    tl_coltype ty = mcol->type, ty2 = with_also ? acol->type : TL_COL_FLOAT;
    tl_col cols[X_NCOLS] = {
        [X_NAME] = {"Name", "name", TL_COL_STR, 1},
        [X_CALLS_A] = {"Calls before", "calls_before", TL_COL_INT, 0},
        [X_CALLS_B] = {"Calls after", "calls_after", TL_COL_INT, 0},
        [X_A] = {m.title[0], m.key[0], ty, 0},
        [X_B] = {m.title[1], m.key[1], ty, 0},
        [X_DELTA] = {m.title[2], m.key[2], ty, 0},
        [X_A2] = {with_also ? m2.title[0] : "", with_also ? m2.key[0] : "", ty2, 0},
        [X_B2] = {with_also ? m2.title[1] : "", with_also ? m2.key[1] : "", ty2, 0},
        [X_DELTA2] = {with_also ? m2.title[2] : "", with_also ? m2.key[2] : "", ty2, 0},
        [X_RATIO] = {"Ratio", "ratio", TL_COL_FLOAT, 0},
        [X_CHANGE] = {"Change", "change", TL_COL_STR, 1},
    };
    tl_col used[X_NCOLS];
    int map[X_NCOLS], nu = 0;
    for (int c = 0; c < X_NCOLS; c++) {
        map[c] = -1;
        if (!with_calls && (c == X_CALLS_A || c == X_CALLS_B))
            continue;
        if (!with_also && (c == X_A2 || c == X_B2 || c == X_DELTA2))
            continue;
        map[c] = nu;
        used[nu++] = cols[c];
    }

    size_t na, nb;
    drow *ra = collect(a, an, am, a2, ac, &na);
    drow *rb = collect(b, bn, bm, b2, bc, &nb);
    jrow *j = malloc((na + nb + 1) * sizeof *j);
    tl_table *out = tl_table_new(title, key, used, nu);
    if ((a->nrows && !ra) || (b->nrows && !rb) || !j || !out) {
        free(ra);
        free(rb);
        free(j);
        tl_table_free(out);
        tl_error_setc(err, TL_ERR_NOMEM, "diff: out of memory");
        return NULL;
    }
    /* merge the two name-sorted lists */
    size_t ia = 0, ib = 0, nj = 0;
    while (ia < na || ib < nb) {
        int c = ia == na ? 1 : ib == nb ? -1 : strcmp(ra[ia].name, rb[ib].name);
        jrow *x = &j[nj++];
        memset(x, 0, sizeof *x);
        if (c <= 0) {
            x->a = ra[ia++];
            x->name = x->a.name;
        }
        if (c >= 0) {
            x->b = rb[ib++];
            x->name = x->b.name;
        }
        x->delta = am >= 0 && bm >= 0 ? x->b.v - x->a.v : 0;
    }
    qsort(j, nj, sizeof *j, cmp_jrow);
    size_t nnew = 0, ngone = 0, nnoise = 0;
    for (size_t i = 0; i < nj; i++) {
        nnew += !j[i].a.has;
        ngone += !j[i].b.has;
    }
    int time = ty == TL_COL_TIME, judge = noise_rel >= 0 && time;
    size_t keep = top > 0 && (size_t)top < nj ? (size_t)top : nj;
    for (size_t i = 0; i < nj; i++) {
        const jrow *x = &j[i];
        double noise = judge ? noise_rel * fmax(fabs(x->a.v), fabs(x->b.v)) : -1;
        const char *change = change_word(x->a.has, x->b.has, x->delta, noise, time);
        nnoise += !strcmp(change, "noise");
        int r = i < keep ? tl_table_add_row(out) : -1;
        if (r < 0)
            continue;
        tl_table_str(out, r, map[X_NAME], x->name);
        if (with_calls) {
            if (x->a.has && x->a.calls >= 0)
                tl_table_int(out, r, map[X_CALLS_A], x->a.calls);
            if (x->b.has && x->b.calls >= 0)
                tl_table_int(out, r, map[X_CALLS_B], x->b.calls);
        }
        if (x->a.has && am >= 0)
            set_value(out, r, map[X_A], x->a.v);
        if (x->b.has && bm >= 0)
            set_value(out, r, map[X_B], x->b.v);
        if (with_also) {
            if (x->a.has && a2 >= 0)
                set_value(out, r, map[X_A2], x->a.v2);
            if (x->b.has && b2 >= 0)
                set_value(out, r, map[X_B2], x->b.v2);
            if (a2 >= 0 && b2 >= 0)
                set_value(out, r, map[X_DELTA2], x->b.v2 - x->a.v2);
        }
        if (am < 0 || bm < 0)
            continue; /* one side has no such column: nothing to compare */
        set_value(out, r, map[X_DELTA], x->delta);
        if (x->a.has && x->a.v != 0)
            tl_table_float(out, r, map[X_RATIO], (x->b.has ? x->b.v : 0) / x->a.v);
        tl_table_str(out, r, map[X_CHANGE], change);
    }
    tl_table_note(out,
                  "Joined by name; %s decides: ratio = after / before; sorted by |delta|. %zu new, "
                  "%zu vanished, %zu in both%s.",
                  mcol->title, nnew, ngone, nj - nnew - ngone,
                  nnoise ? ", some within the noise" : "");
    if (am < 0 || bm < 0)
        tl_table_note(out, "The %s trace has no '%s' column: its side is empty.",
                      am < 0 ? "before" : "after", mcol->title);
    if (keep < nj)
        tl_table_note(out, "%zu more rows not shown (--top).", nj - keep);
    free(ra);
    free(rb);
    free(j);
    return out;
}

tl_table *tl_table_diff(const tl_table *a, const tl_table *b, const char *metric, const char *title,
                        const char *key, int top, tl_error *err)
{
    return diff_join(a, b, metric, NULL, title, key, top, -1, err);
}

/* ---- the per-step breakdown ---------------------------------------------------------------- */

/* A table whose rows are steps and whose time columns are the parts of a step (the model
 * view's "Model per Step": Dataloader, Forward, ...). Each part is compared as its mean per
 * step; its noise is the larger standard deviation over the steps of the two traces. Rows that
 * are not steps (a closing "Average" or "Total") are left out. */
static int is_summary_row(const tl_table *t, int r)
{
    for (int c = 0; c < t->ncols; c++) {
        const tl_cell *x = &t->cells[(size_t)r * t->ncols + c];
        if (t->cols[c].type == TL_COL_STR && x->set && x->s)
            return !strcasecmp(x->s, "Average") || !strcasecmp(x->s, "Total");
    }
    return 0;
}

static int column_spread(const tl_table *t, int c, step_spread *s)
{
    double *v = malloc((t->nrows ? (size_t)t->nrows : 1) * sizeof *v);
    if (!v)
        return -1;
    int n = 0;
    for (int r = 0; r < t->nrows; r++)
        if (!is_summary_row(t, r))
            v[n++] = value_at(t, r, c);
    mean_sd(v, n, s);
    free(v);
    return 0;
}

enum { S_NAME, S_A, S_B, S_DELTA, S_RATIO, S_NOISE, S_CHANGE, S_NCOLS };

static const tl_col step_cols[S_NCOLS] = {
    [S_NAME] = {"Name", "name", TL_COL_STR, 1},
    [S_A] = {"Before", "before_us", TL_COL_TIME, 0},
    [S_B] = {"After", "after_us", TL_COL_TIME, 0},
    [S_DELTA] = {"Delta", "delta_us", TL_COL_TIME, 0},
    [S_RATIO] = {"Ratio", "ratio", TL_COL_FLOAT, 0},
    [S_NOISE] = {"Noise", "noise_us", TL_COL_TIME, 0},
    [S_CHANGE] = {"Change", "change", TL_COL_STR, 1},
};

/* The noise of a mean per step: the larger standard deviation of the two; -1 (not judged)
 * when either has fewer than 2 steps. */
static double spread_noise(const step_spread *sa, const step_spread *sb)
{
    return sa->n >= 2 && sb->n >= 2 ? fmax(sa->sd, sb->sd) : -1;
}

/* One row of a before/after table; a change within noise is "noise" (noise < 0: not judged
 * against noise); judge 0: no change word at all (the two values are not of one kind). */
static void step_row(tl_table *t, const char *name, double a, double b, double noise, int judge)
{
    int r = tl_table_add_row(t);
    if (r < 0)
        return;
    /* means of whole ns cut to the ns, as the views' own means are (sum / n): the report of
     * each trace shows the same figure */
    int64_t ia = tl_d_to_i64(trunc(a)), ib = tl_d_to_i64(trunc(b)); /* (saturating) */
    tl_table_str(t, r, S_NAME, name);
    tl_table_time(t, r, S_A, ia);
    tl_table_time(t, r, S_B, ib);
    tl_table_time(t, r, S_DELTA, tl_sub_sat(ib, ia));
    if (a > 0)
        tl_table_float(t, r, S_RATIO, b / a);
    if (noise >= 0)
        tl_table_time(t, r, S_NOISE, llround(noise));
    if (judge)
        tl_table_str(t, r, S_CHANGE, change_word(1, 1, (double)tl_sub_sat(ib, ia), noise, 1));
}

/* A per-step table of A against B's; wa, wb: the trace has no steps (its one "step" in the
 * table is the whole trace, steps.h's pseudo-step). */
static tl_table *breakdown_diff(const tl_table *a, const tl_table *b, int wa, int wb, tl_error *err)
{
    char title[160], key[160];
    snprintf(title, sizeof title, "%s Diff", a->title);
    snprintf(key, sizeof key, "%s_diff", a->key);
    tl_table *t = tl_table_new(title, key, step_cols, S_NCOLS);
    if (!t)
        goto oom;
    int na = 0, nb = 0;
    for (int c = 0; c < a->ncols; c++) {
        if (a->cols[c].type != TL_COL_TIME)
            continue;
        int cb = tl_table_find_col(b, a->cols[c].key);
        if (cb < 0 || b->cols[cb].type != TL_COL_TIME)
            continue;
        step_spread sa, sb;
        if (column_spread(a, c, &sa) != 0 || column_spread(b, cb, &sb) != 0)
            goto oom;
        step_row(t, a->cols[c].title, sa.mean, sb.mean, spread_noise(&sa, &sb), wa == wb);
        na = sa.n;
        nb = sb.n;
    }
    tl_table_note(t,
                  "Mean per step: before %d step%s, after %d step%s. Noise: the larger standard "
                  "deviation over the steps; a delta within it is marked noise%s.",
                  na, na == 1 ? "" : "s", nb, nb == 1 ? "" : "s",
                  na < 2 || nb < 2 ? " (not judged: fewer than 2 steps)" : "");
    if (wa != wb)
        tl_table_note(t,
                      "The %s trace has no steps: its one step here is the whole trace, not a "
                      "step like the other's; no change is judged.",
                      wa ? "before" : "after");
    if (!strcmp(a->key, "breakdown"))
        tl_table_note(t, "Step Time here is TensorBoard's (a step reaches to the end of the "
                         "device work it launched), not the host step time of the tables above.");
    return t;
oom:
    tl_table_free(t);
    tl_error_setc(err, TL_ERR_NOMEM, "diff: out of memory");
    return NULL;
}

/* ---- the diff view ----------------------------------------------------------------------- */

/* A view diff compares. Joined views (steps == NULL): their rows joined by name on a metric,
 * the first of metric_gpu / metric_cpu that both traces' tables have, shown with the column
 * also_gpu / also_cpu beside it. Step-breakdown views: the tables of the view whose keys are
 * listed in steps (rows = steps, columns = parts of a step), compared per part. */
typedef struct diff_view {
    const char *name;
    const char *title;
    tl_view_fn fn;
    const char *metric_gpu, *also_gpu; /* when either trace has device events */
    const char *metric_cpu, *also_cpu; /* else, and when a trace lacks the GPU metric */
    const char *steps;                 /* step breakdown: keys of the per-step tables, "a,b" */
} diff_view;

/* The views diff knows, in print order. A step breakdown is one line: {name, NULL, view, NULL,
 * NULL, NULL, NULL, "key of its per-step table"}. */
static const diff_view diff_views[] = {
    {"model", NULL, tl_view_model, NULL, NULL, NULL, NULL, "model_steps,model_steps_gpu"},
    {"breakdown", NULL, tl_view_breakdown, NULL, NULL, NULL, NULL, "breakdown"},
    {"ops", "Ops Diff", tl_view_ops, "cuda_total_us", "self_cuda_us", "cpu_total_us", "self_cpu_us",
     NULL},
    {"kernel", "Kernel Diff", tl_view_kernel, "total_us", NULL, "total_us", NULL, NULL},
    {"ranges", "Ranges Diff", tl_view_ranges, "total_us", "self_us", "total_us", "self_us", NULL},
};
static const size_t ndiff_views = sizeof diff_views / sizeof diff_views[0];

/* The steps' times compared: the mean step (noise: the larger standard deviation) and all the
 * steps together (noise: the same share of the larger total as the joined rows' noise_rel, so
 * that the two rows of one change read alike), or the spans of traces without steps. */
static tl_table *step_table(const tl_trace *a, const tl_trace *b, tl_window wa, tl_window wb,
                            const step_spread *sa, const step_spread *sb, double noise_rel)
{
    tl_table *t = tl_table_new("Step Time", "step_time", step_cols, S_NCOLS);
    if (!t)
        return NULL;
    int steps = wa.nsteps && wb.nsteps;
    if (steps) {
        step_row(t, "Avg step", (double)wa.total / wa.nsteps, (double)wb.total / wb.nsteps,
                 spread_noise(sa, sb), 1);
        step_row(t, "All steps", (double)wa.total, (double)wb.total,
                 noise_rel >= 0 ? noise_rel * fmax((double)wa.total, (double)wb.total) : -1, 1);
    } else { /* a trace without steps: the whole spans, first event to last, of both */
        int64_t a0, a1, b0, b1;
        tl_trace_span(a, &a0, &a1);
        tl_trace_span(b, &b0, &b1);
        step_row(t, "Trace span", (double)tl_sub_sat(a1, a0), (double)tl_sub_sat(b1, b0), -1, 1);
    }
    tl_table_note(t, "Before: %d step%s; after: %d step%s.%s", wa.nsteps, wa.nsteps == 1 ? "" : "s",
                  wb.nsteps, wb.nsteps == 1 ? "" : "s",
                  steps ? ""
                  : wa.nsteps || wb.nsteps
                      ? " One trace has no steps: the whole spans are compared."
                      : " Without steps, the whole spans are compared.");
    if (sa->n >= 2 && sb->n >= 2)
        tl_table_note(t,
                      "Noise: the step times' standard deviation, before %.1f%%, after %.1f%% of "
                      "the mean step; a change within the larger of the two (of each value below) "
                      "is marked noise.",
                      100 * sa->sd / sa->mean, 100 * sb->sd / sb->mean);
    else
        tl_table_note(t, "Noise: not judged (fewer than 2 steps in a trace).");
    return t;
}

static int listed(const char *views, const char *name)
{
    if (!views || !*views || !strcmp(views, "all"))
        return 1;
    size_t n = strlen(name);
    for (const char *p = views; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && !strncasecmp(p, name, n))
            return 1;
        p += len + (q ? 1 : 0);
    }
    return 0;
}

int tl_diff_check_views(const char *views, tl_error *err)
{
    if (!views || !*views || !strcmp(views, "all"))
        return 0;
    for (const char *p = views; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int ok = 0;
        for (size_t i = 0; i < ndiff_views; i++)
            if (strlen(diff_views[i].name) == len && !strncasecmp(p, diff_views[i].name, len))
                ok = 1;
        if (!ok) {
            char names[256];
            size_t k = 0;
            names[0] = 0;
            for (size_t i = 0; i < ndiff_views && k < sizeof names; i++)
                k += (size_t)snprintf(names + k, sizeof names - k, "%s, ", diff_views[i].name);
            tl_error_setc(err, TL_ERR_USAGE, "unknown view '%.*s' for diff; expected %sor all",
                          (int)len, p, names);
            return -1;
        }
        p += len + (q ? 1 : 0);
    }
    return 0;
}

/* The step-breakdown tables of view v compared, appended after *tail; wa, wb: as
 * breakdown_diff's. */
static int diff_steps(const diff_view *v, const tl_table *ta, const tl_table *tb, int wa, int wb,
                      tl_table ***tail, tl_error *err)
{
    for (const tl_table *x = ta; x; x = x->next) {
        if (!listed(v->steps, x->key))
            continue;
        const tl_table *y = tb;
        while (y && strcmp(y->key, x->key) != 0)
            y = y->next;
        if (!y)
            continue; /* e.g. the GPU per-step table of a trace without kernels */
        tl_table *d = breakdown_diff(x, y, wa, wb, err);
        if (!d)
            return -1;
        **tail = d;
        *tail = &d->next;
    }
    return 0;
}

tl_table *tl_view_diff(const tl_trace *a, const tl_trace *b, const char *views,
                       const tl_view_opts *o, tl_error *err)
{
    if (tl_diff_check_views(views, err) != 0)
        return NULL;
    step_spread sa, sb;
    tl_window wa, wb; /* the steps every view counts (none: the trace has no steps) */
    tl_profiled_window(a, &wa);
    tl_profiled_window(b, &wb);
    tl_table *head = NULL;
    double noise_rel = -1;
    if (step_times(a, &sa) == 0 && step_times(b, &sb) == 0) {
        /* the relative noise of joined rows: the larger relative spread of the step times */
        if (sa.n >= 2 && sb.n >= 2 && sa.mean > 0 && sb.mean > 0)
            noise_rel = fmax(sa.sd / sa.mean, sb.sd / sb.mean);
        head = step_table(a, b, wa, wb, &sa, &sb, noise_rel);
    }
    if (!head) {
        tl_error_setc(err, TL_ERR_NOMEM, "diff: out of memory");
        return NULL;
    }
    tl_table **tail = &head->next;
    int gpu = tl_trace_has_cats(a, TL_DEVICE_WORK) || tl_trace_has_cats(b, TL_DEVICE_WORK);
    int compared = 0;
    tl_view_opts vo = {.kinds_apart = 1}; /* rows are joined by name */
    if (o)
        vo.threshold_ns = o->threshold_ns;
    const char *given = o && o->sort ? o->sort : NULL;
    for (size_t i = 0; i < ndiff_views; i++) {
        const diff_view *v = &diff_views[i];
        if (!listed(views, v->name))
            continue;
        tl_table *ta = v->fn(a, &vo, err);
        tl_table *tb = ta ? v->fn(b, &vo, err) : NULL;
        if (!ta || !tb) {
            tl_table_free(ta);
            tl_table_free(head);
            return NULL;
        }
        if (v->steps) {
            int rc = diff_steps(v, ta, tb, !wa.nsteps, !wb.nsteps, &tail, err);
            tl_table_free(ta);
            tl_table_free(tb);
            if (rc != 0) {
                tl_table_free(head);
                return NULL;
            }
            continue;
        }
        const char *metric = given, *also = NULL;
        if (!given) {
            /* the GPU metric only when both tables have it: a CPU-only trace has no CUDA
             * columns, and comparing them with nothing would say nothing */
            int both_gpu = gpu && tl_table_find_col(ta, v->metric_gpu) >= 0 &&
                           tl_table_find_col(tb, v->metric_gpu) >= 0;
            metric = both_gpu ? v->metric_gpu : v->metric_cpu;
            also = both_gpu ? v->also_gpu : v->also_cpu;
        }
        if (tl_table_find_col(ta, metric) < 0 && tl_table_find_col(tb, metric) < 0) {
            if (given) { /* --metric names a column of other views only */
                tl_table_note(head, "The %s view has no column '%s': not compared.", v->name,
                              metric);
                tl_table_free(ta);
                tl_table_free(tb);
                continue;
            }
            metric = NULL; /* a default the view lacks: its first time column */
            also = NULL;
        }
        compared++;
        char key[64];
        snprintf(key, sizeof key, "%s_diff", v->name);
        tl_table *d =
            diff_join(ta, tb, metric, also, v->title, key, o ? o->top : 0, noise_rel, err);
        tl_table_free(ta);
        tl_table_free(tb);
        if (!d) {
            tl_table_free(head);
            return NULL;
        }
        *tail = d;
        tail = &d->next;
    }
    if (given && !compared) {
        tl_error_setc(err, TL_ERR_USAGE,
                      "no selected view has a column '%s' (ops: cpu_total_us, self_cpu_us, "
                      "cuda_total_us, self_cuda_us, ...; kernel and ranges: total_us, calls, ...)",
                      given);
        tl_table_free(head);
        return NULL;
    }
    return head;
}
