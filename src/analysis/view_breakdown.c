/*
 * view_breakdown.c — the step-time breakdown of TensorBoard's PyTorch profiler plugin
 * (torch_tb_profiler 0.4.3: profiler/event_parser.py StepParser, overall_parser.py), the
 * numbers PyTorch users read on its Overview page: per step and on average, Kernel, Memcpy,
 * Memset, Communication, Runtime, DataLoader, CPU Exec and Other.
 *
 * Each moment of a step goes to exactly one category, the first of this priority list that
 * covers it (each category is the union of its events' intervals over all threads and streams):
 *
 *   Kernel        kernels, but those launched from inside a nccl:* / gloo:* cpu_op
 *   Memcpy        device copies
 *   Memset        device memsets
 *   Communication kernels launched from a nccl:* / gloo:* cpu_op (broadcast, reduce,
 *                 all_reduce, all_gather, reduce_scatter), those operators and annotations
 *                 themselves, and tally's Communication ranges
 *   Runtime       CUDA (HIP, MTIA, ...) runtime calls
 *   DataLoader    "enumerate(DataLoader)#*.__next__" and "enumerate(DataPipe)#*" ranges;
 *                 tally's Dataloader ranges
 *   CPU Exec      every other operator and annotation (cpu_op, user_annotation, and — as the
 *                 plugin does — gpu_user_annotation; tally's ranges and phases)
 *   Other         the rest of the step
 *
 * How far a step extends (the plugin's rule, applied when some step launched device work):
 * the device work of a step is what the runtime calls lying wholly inside its host span
 * launched. A step ends at the later of its host end and the end of that work, and starts at
 * the earlier step's (extended) end when that is later than its host start. The first step
 * starts no earlier than the end of the device work launched before any step that ends before
 * the first step's own device work starts. Trailing steps that launched no device work, or
 * fewer than 80% of the device events of the step before, are dropped: the profiler may have
 * missed their kernels. The average is over the steps kept. Steps are those of steps.h; without
 * steps, the span of the host operators is one step.
 *
 * Quirk kept for identical numbers: when the categories before one cover every step entirely,
 * the plugin takes the next category whole and starts over from the steps.
 */
#include "analysis/steps.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

enum { R_KERNEL, R_MEMCPY, R_MEMSET, R_COMM, R_RUNTIME, R_DATALOADER, R_CPU, R_OTHER, R_N };

static const char *const role_names[R_N] = {"Kernel",  "Memcpy",     "Memset",   "Communication",
                                            "Runtime", "DataLoader", "CPU Exec", "Other"};

enum { B_STEP, B_TIME, B_ROLE0, B_NCOLS = B_ROLE0 + R_N };

static const tl_col step_cols[B_NCOLS] = {
    [B_STEP] = {"Step", "step", TL_COL_STR, 1},
    [B_TIME] = {"Step Time", "step_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_KERNEL] = {"Kernel", "kernel_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_MEMCPY] = {"Memcpy", "memcpy_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_MEMSET] = {"Memset", "memset_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_COMM] = {"Communication", "communication_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_RUNTIME] = {"Runtime", "runtime_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_DATALOADER] = {"DataLoader", "dataloader_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_CPU] = {"CPU Exec", "cpu_exec_us", TL_COL_TIME, 0},
    [B_ROLE0 + R_OTHER] = {"Other", "other_us", TL_COL_TIME, 0},
};

enum { A_NAME, A_TIME, A_RATIO, A_NCOLS };

static const tl_col avg_cols[A_NCOLS] = {
    [A_NAME] = {"Category", "category", TL_COL_STR, 1},
    [A_TIME] = {"Time", "time_us", TL_COL_TIME, 0},
    [A_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

typedef struct bstep {
    int64_t s, e;
    uint32_t name;
    int64_t dev_s, dev_e; /* device work launched from inside the step (dev_s > dev_e: none) */
    int64_t matched;      /* device events of that work */
    int64_t cost[R_N];
} bstep;

static int has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static int has_suffix(const char *s, const char *x)
{
    size_t n = strlen(s), m = strlen(x);
    return n >= m && strcmp(s + n - m, x) == 0;
}

/* The plugin's NcclOpNameSet and GlooOpNameSet. */
static int is_comm_op(const char *n)
{
    static const char *const ops[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                      "reduce_scatter"};
    const char *rest = has_prefix(n, "nccl:") || has_prefix(n, "gloo:") ? n + 5 : NULL;
    if (!rest)
        return 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(rest, ops[i]) == 0)
            return 1;
    return 0;
}

static int is_plugin_dataloader(const char *n)
{
    return (has_prefix(n, "enumerate(DataLoader)#") && has_suffix(n, ".__next__")) ||
           has_prefix(n, "enumerate(DataPipe)#");
}

/* What a name says, found once per string id (a trace has millions of events and thousands of
 * names): the N_* bits, with N_SEEN set once known. */
enum {
    N_SEEN = 1,
    N_PLUGIN_DL = 2, /* is_plugin_dataloader */
    N_DL_PREFIX = 4, /* "enumerate(DataLoader)#..." */
    N_STEP = 8,      /* "ProfilerStep#..." */
    N_COMM = 16      /* is_comm_op */
};

typedef struct names {
    const tl_trace *t;
    uint8_t *flags; /* per string id */
} names;

static unsigned name_flags(names *nm, uint32_t id)
{
    if (id >= nm->t->strings.count)
        id = 0; /* tl_str reads such ids as "" */
    if (!nm->flags[id]) {
        const char *n = tl_str(&nm->t->strings, id);
        nm->flags[id] =
            (uint8_t)(N_SEEN | (is_plugin_dataloader(n) ? N_PLUGIN_DL : 0) |
                      (has_prefix(n, "enumerate(DataLoader)#") ? N_DL_PREFIX : 0) |
                      (has_prefix(n, "ProfilerStep#") ? N_STEP : 0) | (is_comm_op(n) ? N_COMM : 0));
    }
    return nm->flags[id];
}

/* The role of a host event, or -1 (steps, runtime handled apart, python functions, memory,
 * instants: none, as in the plugin). */
static int host_role(names *nm, const tl_event *e)
{
    switch ((tl_cat)e->cat) {
    case TL_CAT_RUNTIME:
        return R_RUNTIME;
    case TL_CAT_COMMUNICATION:
        return R_COMM;
    case TL_CAT_DATALOADER: {
        /* PyTorch's enumerate(DataLoader)# ranges other than __next__ are CPU work there */
        unsigned f = name_flags(nm, e->name);
        return (f & N_PLUGIN_DL) || !(f & N_DL_PREFIX) ? R_DATALOADER : R_CPU;
    }
    case TL_CAT_GPU_USER:
        /* the GPU side of a step marks the step: no work (the plugin takes it for a step) */
        if (name_flags(nm, e->name) & N_STEP)
            return -1;
        /* fall through */
    case TL_CAT_USER:
    case TL_CAT_OPERATOR:
    case TL_CAT_FORWARD:
    case TL_CAT_BACKWARD:
    case TL_CAT_OPTIMIZER:
    case TL_CAT_OPERATOR_INNER: {
        unsigned f = name_flags(nm, e->name);
        if (f & N_PLUGIN_DL)
            return R_DATALOADER;
        return f & N_COMM ? R_COMM : R_CPU;
    }
    default:
        return -1;
    }
}

/* Whether kernel k was launched from a nccl/gloo operator. The plugin matches the kernel's
 * external id, which Kineto takes from the innermost cpu_op around the launching runtime call
 * (user annotations give none: a kernel launched inside a "nccl:all_reduce" user_annotation,
 * as older PyTorch wrote them, stays a Kernel there). The model keeps no external ids, so the
 * innermost operator around the call stands for it. */
static int comm_kernel(names *nm, const tl_event *k)
{
    const tl_trace *t = nm->t;
    if (k->link == TL_NONE)
        return 0;
    for (int32_t p = t->ev[k->link].parent; p != TL_NONE; p = t->ev[p].parent) {
        tl_cat c = (tl_cat)t->ev[p].cat;
        if (c == TL_CAT_COMMUNICATION)
            return 1;
        if (c == TL_CAT_OPERATOR)
            return (name_flags(nm, t->ev[p].name) & N_COMM) != 0;
    }
    return 0;
}

/* Index of the host step that holds [s, e) wholly, or -1 (steps sorted by start). */
static int step_holding(const bstep *st, int n, int64_t s, int64_t e)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (st[mid].s <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int k = lo - 1; k >= 0 && k >= lo - 4; k--)
        if (s >= st[k].s && s < st[k].e)
            return e <= st[k].e ? k : -1;
    return -1;
}

/* Length of set within [s, e) (set normalized). */
static int64_t within(const tl_ivset *set, int64_t s, int64_t e)
{
    int64_t n = 0;
    for (size_t k = tl_ivset_from(set, s); k < set->n && set->v[k].s < e; k++) {
        int64_t a = set->v[k].s > s ? set->v[k].s : s;
        int64_t b = set->v[k].e < e ? set->v[k].e : e;
        if (b > a)
            n += b - a;
    }
    return n;
}

/* Device work per step and the steps' extension to it (event_parser.py _find_device_steps,
 * _update_steps_duration). Returns the number of steps kept, or -1 when out of memory. */
static int extend_steps(const tl_trace *t, bstep *st, int n, int *dropped)
{
    *dropped = 0;
    uint8_t *matched = tl_big_calloc(t->nev ? t->nev : 1, 1);
    if (!matched)
        return -1;
    int any = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *d = &t->ev[i];
        if (!tl_cat_is_device_work(d->cat) || d->link == TL_NONE)
            continue;
        const tl_event *r = &t->ev[d->link];
        if (r->cat != TL_CAT_RUNTIME)
            continue;
        int k = step_holding(st, n, r->ts, r->ts + r->dur);
        if (k < 0)
            continue;
        matched[i] = 1;
        any = 1;
        st[k].matched++;
        if (d->ts < st[k].dev_s)
            st[k].dev_s = d->ts;
        if (d->ts + d->dur > st[k].dev_e)
            st[k].dev_e = d->ts + d->dur;
    }
    if (!any) {
        free(matched);
        return n;
    }
    int64_t prev = st[0].s;
    if (st[0].dev_s <= st[0].dev_e) { /* device work launched before the steps, done before */
        tl_cat_walk cw;
        for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
             i = tl_cat_walk_step(&cw, i)) {
            const tl_event *d = &t->ev[i];
            if (tl_cat_is_device_work(d->cat) && !matched[i] && d->ts + d->dur < st[0].dev_s &&
                d->ts + d->dur > prev)
                prev = d->ts + d->dur;
        }
    }
    free(matched);
    for (int k = 0; k < n; k++) {
        int64_t s = prev > st[k].s ? prev : st[k].s, e = st[k].e;
        if (st[k].dev_s > st[k].dev_e) {
            if (e < s)
                e = s;
        } else {
            if (st[k].dev_e > e)
                e = st[k].dev_e;
            if (e < s)
                e = s;
        }
        st[k].s = s;
        st[k].e = e;
        prev = e;
    }
    if (n > 1) {
        int i = n - 1;
        while (i >= 0 && st[i].matched == 0)
            i--;
        if (i >= 0) {
            int keep = i + 1;
            if (i > 0 && (double)st[i - 1].matched * 0.8 > (double)st[i].matched)
                keep = i;
            *dropped = n - keep;
            n = keep;
        }
    }
    return n;
}

/* The role sets, each the union of its events' intervals over the whole trace, filled in parts
 * of the events (each part's sets apart, by a thread of its own) and joined. An event that
 * starts inside the interval added last (a child inside its parent, on one track) extends it
 * instead of adding one: the same union, several times fewer intervals to sort. */
typedef struct role_part {
    const tl_trace *t;
    size_t lo, hi;
    tl_ivset role[R_OTHER];
    int oom;
} role_part;

static void *role_part_main(void *arg)
{
    role_part *p = arg;
    const tl_trace *t = p->t;
    names nm = {t, calloc(t->strings.count ? t->strings.count : 1, 1)};
    if (!nm.flags) {
        p->oom = 1;
        return NULL;
    }
    for (size_t i = p->lo; i < p->hi; i++) {
        const tl_event *e = &t->ev[i];
        if (e->dur <= 0 || (e->flags & TL_EV_INSTANT))
            continue;
        int r;
        switch ((tl_cat)e->cat) {
        case TL_CAT_KERNEL:
            r = comm_kernel(&nm, e) ? R_COMM : R_KERNEL;
            break;
        case TL_CAT_MEMCPY:
            r = R_MEMCPY;
            break;
        case TL_CAT_MEMSET:
            r = R_MEMSET;
            break;
        default:
            r = host_role(&nm, e);
        }
        if (r >= 0)
            tl_ivset_extend(&p->role[r], e->ts, e->ts + e->dur);
    }
    free(nm.flags);
    for (int r = 0; r < R_OTHER; r++)
        p->oom |= p->role[r].oom;
    return NULL;
}

/* What role_sets does beside the parts: the steps' extension (extend_steps). */
typedef struct role_sets_job {
    role_part *parts;
    int k;
    tl_runner run;
} role_sets_job;

/* Start filling role sets in threads; role_sets_end joins them into role (normalized). */
static int role_sets_start(const tl_trace *t, role_sets_job *j)
{
    j->k = tl_view_parts(t, t->nev);
    j->parts = calloc((size_t)j->k, sizeof *j->parts);
    if (!j->parts)
        return -1;
    for (int c = 0; c < j->k; c++) {
        j->parts[c].t = t;
        j->parts[c].lo = t->nev * (size_t)c / (size_t)j->k;
        j->parts[c].hi = t->nev * (size_t)(c + 1) / (size_t)j->k;
    }
    /* the first part here, in role_sets_end: the caller's work goes first meanwhile */
    tl_run_start(&j->run, role_part_main, j->parts, sizeof *j->parts, 1, j->k);
    return 0;
}

static int role_sets_end(role_sets_job *j, tl_ivset *role)
{
    role_part_main(&j->parts[0]);
    tl_run_wait(&j->run);
    int oom = 0;
    for (int r = 0; r < R_OTHER; r++) {
        role[r] = j->parts[0].role[r];
        for (int c = 1; c < j->k; c++) {
            tl_ivset_append(&role[r], &j->parts[c].role[r]);
            tl_ivset_free(&j->parts[c].role[r]);
        }
        tl_ivset_normalize(&role[r]);
        oom |= role[r].oom;
    }
    for (int c = 0; c < j->k; c++)
        oom |= j->parts[c].oom;
    free(j->parts);
    j->parts = NULL;
    return oom ? -1 : 0;
}

tl_table *tl_view_breakdown(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    (void)o;
    tl_steps steps;
    bstep *st = NULL;
    tl_table *tab = NULL;
    tl_ivset role[R_N], cost[R_N], slots = {0}, tmp = {0};
    memset(role, 0, sizeof role);
    memset(cost, 0, sizeof cost);
    role_sets_job rj = {0};
    int n = 0, dropped = 0;
    if (tl_steps_load(t, &steps) != 0)
        goto oom;
    n = steps.n;
    st = calloc(n ? (size_t)n : 1, sizeof *st);
    if (!st || role_sets_start(t, &rj) != 0)
        goto oom;
    if (n) { /* the steps and their extension while the role sets are filled */
        for (int k = 0; k < n; k++) {
            st[k].s = steps.v[k].s;
            st[k].e = steps.v[k].e;
            st[k].name = steps.v[k].name;
            st[k].dev_s = INT64_MAX;
            st[k].dev_e = INT64_MIN;
        }
        if (steps.pseudo) { /* the plugin: the span of the host operators */
            int64_t a = INT64_MAX, b = INT64_MIN;
            for (size_t i = 0; i < t->nev; i++) {
                const tl_event *e = &t->ev[i];
                if (e->cat != TL_CAT_OPERATOR || e->dur < 0)
                    continue;
                a = e->ts < a ? e->ts : a;
                b = e->ts + e->dur > b ? e->ts + e->dur : b;
            }
            if (a < b) {
                st[0].s = a;
                st[0].e = b;
            }
        }
        n = extend_steps(t, st, n, &dropped); /* -1: out of memory, after the join */
    }
    if (role_sets_end(&rj, role) != 0 || n < 0)
        goto oom;
    /* The Communication column only when there is communication (the plugin's way). */
    int any_comm = role[R_COMM].n > 0, col[R_N], ncols = B_ROLE0;
    tl_col cols[B_NCOLS];
    memcpy(cols, step_cols, sizeof cols);
    for (int r = 0; r < R_N; r++) {
        col[r] = r == R_COMM && !any_comm ? -1 : ncols;
        if (col[r] >= 0)
            cols[ncols++] = step_cols[B_ROLE0 + r];
    }
    tab = tl_table_new("Step Time Breakdown", "breakdown", cols, ncols);
    if (!tab)
        goto oom;
    if (n == 0) {
        tl_table_note(tab, "An empty trace: no step to break down.");
        tl_steps_free(&steps);
        free(st);
        return tab;
    }

    /* Each role takes what the roles before it left of the steps. */
    for (int k = 0; k < n; k++)
        tl_ivset_add(&slots, st[k].s, st[k].e);
    tl_ivset_normalize(&slots);
    tl_ivset steps_set = {0};
    tl_ivset_union(&slots, &steps_set, &tmp); /* a copy of the steps, for the quirk */
    tl_ivset_free(&steps_set);
    steps_set = tmp;
    memset(&tmp, 0, sizeof tmp);
    for (int r = 0; r < R_OTHER; r++) {
        if (slots.n) {
            tl_ivset_intersect(&role[r], &slots, &cost[r]);
        } else { /* the quirk: the role whole, the slots the steps again */
            tl_ivset_union(&role[r], &tmp, &cost[r]);
            tl_ivset_union(&steps_set, &tmp, &slots);
        }
        tl_ivset_free(&role[r]); /* its cost is all that is read of it from here */
        tl_ivset_subtract(&slots, &cost[r], &tmp);
        tl_ivset_free(&slots);
        slots = tmp;
        memset(&tmp, 0, sizeof tmp);
    }
    cost[R_OTHER] = slots;
    memset(&slots, 0, sizeof slots);
    tl_ivset_free(&steps_set);

    int64_t sum[R_N + 1] = {0};
    for (int k = 0; k < n; k++) {
        int row = tl_table_add_row(tab);
        if (row < 0)
            goto oom;
        if (steps.pseudo)
            tl_table_str(tab, row, B_STEP, "(whole trace)");
        else
            tl_table_str(tab, row, B_STEP, tl_str(&t->strings, st[k].name));
        tl_table_time(tab, row, B_TIME, st[k].e - st[k].s);
        sum[R_N] = tl_add_sat(sum[R_N], st[k].e - st[k].s);
        for (int r = 0; r < R_N; r++) {
            st[k].cost[r] = within(&cost[r], st[k].s, st[k].e);
            sum[r] = tl_add_sat(sum[r], st[k].cost[r]);
            if (col[r] >= 0)
                tl_table_time(tab, row, col[r], st[k].cost[r]);
        }
    }
    int row = tl_table_add_row(tab);
    if (row < 0)
        goto oom;
    tl_table_str(tab, row, B_STEP, "Average");
    tl_table_time(tab, row, B_TIME, n ? sum[R_N] / n : 0);
    for (int r = 0; r < R_N; r++)
        if (col[r] >= 0)
            tl_table_time(tab, row, col[r], n ? sum[r] / n : 0);
    tl_table_note(tab, "Each moment of a step goes to the first category that covers it, in the "
                       "order of the columns (TensorBoard's PyTorch profiler plugin).");
    if (steps.pseudo)
        tl_table_note(tab, "No steps in this trace: the span of the host operators is one step.");
    if (dropped)
        tl_table_note(tab,
                      "%d trailing step(s) left out, as the plugin does: they launched no device "
                      "work, or much less than the step before (the profiler may have missed "
                      "their kernels); the other views count all %d.",
                      dropped, steps.n);
    int64_t host = 0; /* the steps kept as the other views time them: on the host */
    for (int k = 0; k < n && !steps.pseudo; k++)
        host = tl_add_sat(host, steps.v[k].e - steps.v[k].s);
    if (!steps.pseudo && host / n != sum[R_N] / n) {
        char h[32];
        tl_fmt_time(h, sizeof h, host / n, TL_UNIT_AUTO);
        tl_table_note(tab,
                      "Step Time is the plugin's: a step reaches to the end of the device work "
                      "it launched, from where the step before ended; on the host (the perf "
                      "and model views) %s average %s.",
                      n == steps.n ? "the same steps" : "the steps kept here", h);
    }

    tl_table *avg =
        tl_table_new("Step Time Breakdown (average)", "breakdown_avg", avg_cols, A_NCOLS);
    if (!avg)
        goto oom;
    tab->next = avg;
    for (int r = 0; r < R_N; r++) {
        if (col[r] < 0)
            continue;
        int ar = tl_table_add_row(avg);
        if (ar < 0)
            goto oom;
        tl_table_str(avg, ar, A_NAME, role_names[r]);
        tl_table_time(avg, ar, A_TIME, n ? sum[r] / n : 0);
        tl_table_pct(avg, ar, A_RATIO,
                     sum[R_N] > 0 ? 100.0 * (double)sum[r] / (double)sum[R_N] : 0.0);
    }
    char avg_step[32];
    tl_fmt_time(avg_step, sizeof avg_step, n ? sum[R_N] / n : 0, TL_UNIT_AUTO);
    tl_table_note(avg, "Average over %d step(s) of %s; Ratio = share of the step time.", n,
                  avg_step);

    for (int r = 0; r < R_N; r++) {
        tl_ivset_free(&role[r]);
        tl_ivset_free(&cost[r]);
    }
    free(st);
    tl_steps_free(&steps);
    return tab;
oom:
    for (int r = 0; r < R_N; r++) {
        tl_ivset_free(&role[r]);
        tl_ivset_free(&cost[r]);
    }
    tl_ivset_free(&slots);
    tl_ivset_free(&tmp);
    free(st);
    tl_steps_free(&steps);
    tl_table_free(tab);
    tl_error_setc(err, TL_ERR_NOMEM, "breakdown: out of memory");
    return NULL;
}
