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

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- joining two tables ------------------------------------------------------------------ */

typedef struct drow {
    const char *name;
    int64_t calls; /* -1 = unknown */
    double v;      /* metric, as a double (TIME/INT/BYTES exact up to 2^53) */
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

/* Rows of t summed by name and sorted by name; *n gets the count. NULL on OOM (or no rows). */
static drow *collect(const tl_table *t, int cn, int cm, int cc, size_t *n)
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
        const tl_cell *mc = &t->cells[(size_t)i * t->ncols + cm];
        r[k].name = nc->s;
        r[k].v = cell_value(mc, t->cols[cm].type);
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

enum { X_NAME, X_CALLS_A, X_CALLS_B, X_A, X_B, X_DELTA, X_RATIO, X_CHANGE, X_NCOLS };

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

tl_table *tl_table_diff(const tl_table *a, const tl_table *b, const char *metric, const char *title,
                        const char *key, int top, tl_error *err)
{
    int an = name_col(a), bn = name_col(b);
    int am = metric_col(a, metric), bm = metric_col(b, metric);
    if (an < 0 || bn < 0) {
        tl_error_set(err, "diff: table '%s' has no name column", an < 0 ? a->title : b->title);
        return NULL;
    }
    if (am < 0 || bm < 0) {
        tl_error_setc(err, metric ? TL_ERR_USAGE : TL_ERR_INPUT,
                      "diff: no numeric column '%s' in '%s'", metric ? metric : "(time)",
                      am < 0 ? a->title : b->title);
        return NULL;
    }
    int ac = tl_table_find_col(a, "calls"), bc = tl_table_find_col(b, "calls");
    if (ac >= 0 && a->cols[ac].type != TL_COL_INT)
        ac = -1;
    if (bc >= 0 && b->cols[bc].type != TL_COL_INT)
        bc = -1;
    int with_calls = ac >= 0 && bc >= 0;

    /* Column titles and keys built from the metric's: "Total before", "total_before_us". */
    const tl_col *mcol = &a->cols[am];
    char base[64], unit[16] = "";
    snprintf(base, sizeof base, "%s", mcol->key ? mcol->key : "value");
    size_t bl = strlen(base);
    if (bl > 3 && !strcmp(base + bl - 3, "_us")) {
        base[bl - 3] = 0;
        strcpy(unit, "_us");
    } else if (bl > 4 && !strcmp(base + bl - 4, "_pct")) {
        base[bl - 4] = 0;
        strcpy(unit, "_pct");
    }
    char tb[96], ta[96], td[96], kb[96], ka[96], kd[96];
    snprintf(tb, sizeof tb, "%s before", mcol->title);
    snprintf(ta, sizeof ta, "%s after", mcol->title);
    snprintf(td, sizeof td, "Delta");
    snprintf(kb, sizeof kb, "%s_before%s", base, unit);
    snprintf(ka, sizeof ka, "%s_after%s", base, unit);
    snprintf(kd, sizeof kd, "%s_delta%s", base, unit);
    tl_coltype ty = mcol->type;
    tl_col cols[X_NCOLS] = {
        [X_NAME] = {"Name", "name", TL_COL_STR, 1},
        [X_CALLS_A] = {"Calls before", "calls_before", TL_COL_INT, 0},
        [X_CALLS_B] = {"Calls after", "calls_after", TL_COL_INT, 0},
        [X_A] = {tb, kb, ty, 0},
        [X_B] = {ta, ka, ty, 0},
        [X_DELTA] = {td, kd, ty, 0},
        [X_RATIO] = {"Ratio", "ratio", TL_COL_FLOAT, 0},
        [X_CHANGE] = {"Change", "change", TL_COL_STR, 1},
    };
    tl_col used[X_NCOLS];
    int map[X_NCOLS], nu = 0;
    for (int c = 0; c < X_NCOLS; c++) {
        map[c] = -1;
        if (!with_calls && (c == X_CALLS_A || c == X_CALLS_B))
            continue;
        map[c] = nu;
        used[nu++] = cols[c];
    }

    size_t na, nb;
    drow *ra = collect(a, an, am, ac, &na);
    drow *rb = collect(b, bn, bm, bc, &nb);
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
        x->delta = x->b.v - x->a.v;
    }
    qsort(j, nj, sizeof *j, cmp_jrow);
    size_t nnew = 0, ngone = 0;
    for (size_t i = 0; i < nj; i++) {
        nnew += !j[i].a.has;
        ngone += !j[i].b.has;
    }
    size_t keep = top > 0 && (size_t)top < nj ? (size_t)top : nj;
    for (size_t i = 0; i < keep; i++) {
        const jrow *x = &j[i];
        int r = tl_table_add_row(out);
        if (r < 0)
            break;
        tl_table_str(out, r, map[X_NAME], x->name);
        if (with_calls) {
            if (x->a.has && x->a.calls >= 0)
                tl_table_int(out, r, map[X_CALLS_A], x->a.calls);
            if (x->b.has && x->b.calls >= 0)
                tl_table_int(out, r, map[X_CALLS_B], x->b.calls);
        }
        if (x->a.has)
            set_value(out, r, map[X_A], x->a.v);
        if (x->b.has)
            set_value(out, r, map[X_B], x->b.v);
        set_value(out, r, map[X_DELTA], x->delta);
        if (x->a.has && x->a.v != 0)
            tl_table_float(out, r, map[X_RATIO], (x->b.has ? x->b.v : 0) / x->a.v);
        const char *change = !x->a.has      ? "new"
                             : !x->b.has    ? "vanished"
                             : x->delta > 0 ? "up"
                             : x->delta < 0 ? "down"
                                            : "same";
        tl_table_str(out, r, map[X_CHANGE], change);
    }
    tl_table_note(out,
                  "Joined by name; ratio = after / before; sorted by |delta|. %zu new, %zu "
                  "vanished, %zu in both.",
                  nnew, ngone, nj - nnew - ngone);
    if (keep < nj)
        tl_table_note(out, "%zu more rows not shown (--top).", nj - keep);
    free(ra);
    free(rb);
    free(j);
    return out;
}

/* ---- the diff view ----------------------------------------------------------------------- */

typedef struct diff_view {
    const char *name;
    const char *title;
    tl_view_fn fn;
    const char *metric_gpu; /* metric when either trace has device events */
    const char *metric_cpu; /* else */
} diff_view;

static int has_device(const tl_trace *t)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].cat == TL_CAT_KERNEL || t->ev[i].cat == TL_CAT_MEMCPY ||
            t->ev[i].cat == TL_CAT_MEMSET)
            return 1;
    return 0;
}

enum { S_NAME, S_A, S_B, S_DELTA, S_RATIO, S_NCOLS };

static const tl_col step_cols[S_NCOLS] = {
    [S_NAME] = {"Name", "name", TL_COL_STR, 1},
    [S_A] = {"Before", "before_us", TL_COL_TIME, 0},
    [S_B] = {"After", "after_us", TL_COL_TIME, 0},
    [S_DELTA] = {"Delta", "delta_us", TL_COL_TIME, 0},
    [S_RATIO] = {"Ratio", "ratio", TL_COL_FLOAT, 0},
};

static void step_row(tl_table *t, const char *name, int64_t a, int64_t b)
{
    int r = tl_table_add_row(t);
    if (r < 0)
        return;
    tl_table_str(t, r, S_NAME, name);
    tl_table_time(t, r, S_A, a);
    tl_table_time(t, r, S_B, b);
    tl_table_time(t, r, S_DELTA, b - a);
    if (a > 0)
        tl_table_float(t, r, S_RATIO, (double)b / (double)a);
}

static tl_table *step_table(const tl_trace *a, const tl_trace *b)
{
    tl_window wa, wb;
    tl_profiled_window(a, &wa);
    tl_profiled_window(b, &wb);
    tl_table *t = tl_table_new("Step Time", "step_time", step_cols, S_NCOLS);
    if (!t)
        return NULL;
    if (wa.nsteps && wb.nsteps)
        step_row(t, "Avg step", wa.total / wa.nsteps, wb.total / wb.nsteps);
    step_row(t, wa.nsteps && wb.nsteps ? "All steps" : "Trace span", wa.total, wb.total);
    tl_table_note(t, "Before: %d step%s; after: %d step%s.%s", wa.nsteps, wa.nsteps == 1 ? "" : "s",
                  wb.nsteps, wb.nsteps == 1 ? "" : "s",
                  wa.nsteps && wb.nsteps ? ""
                                         : " Without steps in both, the whole spans are compared.");
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

static const char *const diff_names[] = {"ops", "kernel", "ranges"};

int tl_diff_check_views(const char *views, tl_error *err)
{
    if (!views || !*views || !strcmp(views, "all"))
        return 0;
    for (const char *p = views; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int ok = 0;
        for (size_t i = 0; i < sizeof diff_names / sizeof diff_names[0]; i++)
            if (strlen(diff_names[i]) == len && !strncasecmp(p, diff_names[i], len))
                ok = 1;
        if (!ok) {
            tl_error_setc(err, TL_ERR_USAGE,
                          "unknown view '%.*s' for diff; expected ops, kernel, ranges or all",
                          (int)len, p);
            return -1;
        }
        p += len + (q ? 1 : 0);
    }
    return 0;
}

tl_table *tl_view_diff(const tl_trace *a, const tl_trace *b, const char *views,
                       const tl_view_opts *o, tl_error *err)
{
    const diff_view list[] = {
        {diff_names[0], "Ops Diff", tl_view_ops, "self_cuda_us", "self_cpu_us"},
        {diff_names[1], "Kernel Diff", tl_view_kernel, "total_us", "total_us"},
        {diff_names[2], "Ranges Diff", tl_view_ranges, "total_us", "total_us"},
    };
    const size_t nlist = sizeof list / sizeof list[0];
    if (tl_diff_check_views(views, err) != 0)
        return NULL;
    tl_table *head = step_table(a, b);
    if (!head) {
        tl_error_setc(err, TL_ERR_NOMEM, "diff: out of memory");
        return NULL;
    }
    tl_table *tail = head;
    int gpu = has_device(a) || has_device(b);
    int compared = 0;
    tl_view_opts vo = {0};
    if (o)
        vo.threshold_ns = o->threshold_ns;
    for (size_t i = 0; i < nlist; i++) {
        const diff_view *v = &list[i];
        if (!listed(views, v->name))
            continue;
        tl_table *ta = v->fn(a, &vo, err);
        tl_table *tb = ta ? v->fn(b, &vo, err) : NULL;
        if (!ta || !tb) {
            tl_table_free(ta);
            tl_table_free(head);
            return NULL;
        }
        const char *metric = o && o->sort ? o->sort : gpu ? v->metric_gpu : v->metric_cpu;
        if (tl_table_find_col(ta, metric) < 0) {
            if (o && o->sort) { /* --metric names a column of other views only */
                tl_table_note(head, "The %s view has no column '%s': not compared.", v->name,
                              metric);
                tl_table_free(ta);
                tl_table_free(tb);
                continue;
            }
            metric = NULL; /* a default the view lacks: its first time column */
        }
        compared++;
        char key[64];
        snprintf(key, sizeof key, "%s_diff", v->name);
        tl_table *d = tl_table_diff(ta, tb, metric, v->title, key, o ? o->top : 0, err);
        tl_table_free(ta);
        tl_table_free(tb);
        if (!d) {
            tl_table_free(head);
            return NULL;
        }
        tail->next = d;
        tail = d;
    }
    if (o && o->sort && !compared) {
        tl_error_setc(err, TL_ERR_USAGE,
                      "no selected view has a column '%s' (ops: self_cuda_us, self_cpu_us, "
                      "cpu_total_us, ...; kernel and ranges: total_us, calls, ...)",
                      o->sort);
        tl_table_free(head);
        return NULL;
    }
    return head;
}
