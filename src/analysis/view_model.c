/*
 * view_model.c — the Model view: where each step's time goes, by training phase.
 *
 * The phases are the ranges of category Dataloader, Forward, Backward and Optimization. Only
 * the outermost phase range on each path counts (Paddle's rule): a Forward range nested in
 * another Forward, or in a Dataloader, is part of the outer one and not counted again. Each
 * phase range is cut at step boundaries and its pieces belong to the steps they fall in.
 *
 *   phase time of a step = sum of the step's pieces of that phase (CPU time; ranges of one
 *                          phase on two threads at once count twice, like CPU time does)
 *   Other of a step      = step time minus the union of all phase pieces in the step, so the
 *                          phases plus Other add up to the step whenever the phases do not
 *                          overlap each other; it is never negative.
 *
 * GPU part, when the trace has kernels: a kernel belongs to the phase range (and the step) in
 * which the runtime call that launched it ran; kernel time is summed (Paddle's gpu_time, kernels
 * only, streams not merged). GPU Other = the step's kernel time minus its phases' kernel time.
 * Kernels whose launch is unknown belong to no step and are counted in a note.
 *
 * Steps are those of steps.h; without steps the whole trace is one pseudo-step.
 *
 * Which ranges are phases is tl_phases_find (declared in views.h, shared with the HTML timeline).
 * PyTorch's traces mark no phase; there the phases are PyTorch's own ranges (torch_phase):
 * autograd's evaluate_function ranges (or, in PyTorch 1.x, the autograd nodes themselves) are
 * Backward; module ranges (nn.Module: ..., DistributedDataParallel.forward) are Forward, and
 * without them the step thread's top-level operators that end before the step's backward
 * begins. The reader already files enumerate(DataLoader)# and Optimizer.step# ranges as
 * Dataloader and Optimization.
 */
#include "analysis/steps.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

const tl_cat tl_phase_cats[TL_NPHASES] = {TL_CAT_DATALOADER, TL_CAT_FORWARD, TL_CAT_BACKWARD,
                                          TL_CAT_OPTIMIZER};

/* The phases as indexes of tl_phase_cats (and of the per-phase arrays below). */
enum { PH_DATALOADER, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_N = TL_NPHASES };

int tl_phase_index(tl_cat c)
{
    for (int p = 0; p < PH_N; p++)
        if (tl_phase_cats[p] == c)
            return p;
    return -1;
}

static int has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* An autograd node's name: "AddmmBackward0", "CudnnConvolutionBackward" (PyTorch 1.x). */
static int is_autograd_node(const char *n)
{
    const char *b = strstr(n, "Backward");
    if (!b || b == n)
        return 0;
    for (b += 8; *b; b++)
        if (*b < '0' || *b > '9')
            return 0;
    return 1;
}

/* The phase PyTorch's own ranges stand for, or -1 (PyTorch marks no forward or backward range;
 * see the top). Dataloader and Optimization come from the reader's categories. */
static int torch_phase(const tl_trace *t, const tl_event *e)
{
    const char *n = tl_str(&t->strings, e->name);
    switch ((tl_cat)e->cat) {
    case TL_CAT_OPERATOR:
    case TL_CAT_USER:
        if (has_prefix(n, "autograd::engine::evaluate_function:") || is_autograd_node(n) ||
            strcmp(n, "torch::autograd::AccumulateGrad") == 0)
            return PH_BACKWARD;
        if (strcmp(n, "DistributedDataParallel.forward") == 0 ||
            strcmp(n, "DataParallel.forward") == 0)
            return PH_FORWARD;
        return -1;
    case TL_CAT_PYTHON:
        return has_prefix(n, "nn.Module: ") ? PH_FORWARD : -1;
    default:
        return -1;
    }
}

static int is_torch(const tl_trace *t)
{
    return t->source == TL_SRC_KINETO || t->source == TL_SRC_TORCH_LEGACY;
}

typedef struct step {
    int64_t s, e;      /* [s, e) */
    uint32_t name;     /* string id; 0 for the pseudo-step */
    int64_t cpu[PH_N]; /* phase time in this step */
    int64_t gpu[PH_N]; /* kernel time launched from each phase in this step */
    int64_t gpu_all;   /* kernel time launched in this step */
    tl_ivset cover;    /* phase pieces, for Other */
} step;

static int add_range(tl_phases *ph, size_t *cap, int32_t ev, int phase)
{
    if (ph->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        tl_phase_range *nv = realloc(ph->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        ph->v = nv;
        *cap = nc;
    }
    ph->v[ph->n++] = (tl_phase_range){ev, phase};
    return 0;
}

void tl_phases_free(tl_phases *ph)
{
    free(ph->v);
    free(ph->outer);
    memset(ph, 0, sizeof *ph);
}

int tl_phases_find(const tl_trace *t, const tl_steps *steps, tl_phases *ph)
{
    memset(ph, 0, sizeof *ph);
    size_t cap = 0;
    int32_t *outer = ph->outer = tl_big_alloc((t->nev ? t->nev : 1) * sizeof *outer);
    if (!outer)
        return -1;
    /* Events are sorted so that a parent precedes its children. */
    int torch = is_torch(t), any_forward = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        outer[i] = -1;
        if (tl_cat_is_device((tl_cat)e->cat))
            continue;
        if (e->parent != TL_NONE && e->parent < (int32_t)i && outer[e->parent] >= 0) {
            outer[i] = outer[e->parent];
        } else if (e->dur > 0) {
            int p = tl_phase_index((tl_cat)e->cat);
            if (p < 0 && torch)
                p = torch_phase(t, e);
            if (p < 0)
                continue;
            if (add_range(ph, &cap, (int32_t)i, p) != 0)
                goto oom;
            outer[i] = (int32_t)(ph->n - 1);
            any_forward |= p == PH_FORWARD;
        }
    }
    if (!torch || any_forward || steps->pseudo)
        return 0;
    /* PyTorch without module ranges: the forward is what the step's thread runs at its top level
     * before the step's backward begins (the whole step when it has no backward). */
    int nst = steps->n;
    int64_t *bwd = malloc((nst ? (size_t)nst : 1) * sizeof *bwd);
    if (!bwd)
        goto oom;
    for (int k = 0; k < nst; k++)
        bwd[k] = steps->v[k].e;
    for (size_t q = 0; q < ph->n; q++) {
        const tl_event *e = &t->ev[ph->v[q].ev];
        int k = tl_steps_at(steps, e->ts);
        if (ph->v[q].phase == PH_BACKWARD && k >= 0 && e->ts < bwd[k])
            bwd[k] = e->ts;
    }
    size_t n0 = ph->n;
    for (int k = 0; k < nst; k++) {
        int32_t sev = steps->v[k].ev;
        for (size_t i = (size_t)sev + 1;
             i < t->nev && t->ev[i].track == t->ev[sev].track && t->ev[i].ts < steps->v[k].e; i++) {
            const tl_event *e = &t->ev[i];
            if (e->parent != sev || outer[i] >= 0 || e->dur <= 0 ||
                (e->cat != TL_CAT_OPERATOR && e->cat != TL_CAT_USER) || e->ts + e->dur > bwd[k])
                continue;
            if (add_range(ph, &cap, (int32_t)i, PH_FORWARD) != 0) {
                free(bwd);
                goto oom;
            }
            outer[i] = (int32_t)(ph->n - 1);
        }
    }
    free(bwd);
    if (ph->n > n0) /* what the new forward ranges hold belongs to them */
        for (size_t i = 0; i < t->nev; i++) {
            const tl_event *e = &t->ev[i];
            if (outer[i] < 0 && e->parent != TL_NONE && e->parent < (int32_t)i &&
                outer[e->parent] >= 0 && !tl_cat_is_device((tl_cat)e->cat))
                outer[i] = outer[e->parent];
        }
    return 0;
oom:
    tl_phases_free(ph);
    return -1;
}

static void *phases_make(const tl_trace *t)
{
    tl_phases *ph = malloc(sizeof *ph);
    tl_steps st;
    if (!ph || tl_steps_load(t, &st) != 0) {
        free(ph);
        return NULL;
    }
    int rc = tl_phases_find(t, &st, ph);
    tl_steps_free(&st);
    if (rc != 0) {
        free(ph);
        return NULL;
    }
    return ph;
}

static void phases_drop(void *p)
{
    if (p)
        tl_phases_free(p);
    free(p);
}

const tl_phases *tl_phases_of(const tl_trace *t)
{
    return tl_trace_memo(t, TL_MEMO_PHASES, phases_make, phases_drop);
}

typedef struct phase_stat {
    int64_t calls, total, max, min;
    int64_t gpu_total, gpu_max, gpu_min;
} phase_stat;

enum {
    MS_NAME,
    MS_CALLS,
    MS_CPU_TOTAL,
    MS_CPU_AVG,
    MS_CPU_MAX,
    MS_CPU_MIN,
    MS_CPU_RATIO,
    MS_GPU_TOTAL,
    MS_GPU_AVG,
    MS_GPU_MAX,
    MS_GPU_MIN,
    MS_GPU_RATIO,
    MS_NCOLS
};

static const tl_col summary_cols[MS_NCOLS] = {
    [MS_NAME] = {"Name", "name", TL_COL_STR, 1},
    [MS_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [MS_CPU_TOTAL] = {"CPU Total", "cpu_total_us", TL_COL_TIME, 0},
    [MS_CPU_AVG] = {"CPU Avg", "cpu_avg_us", TL_COL_TIME, 0},
    [MS_CPU_MAX] = {"CPU Max", "cpu_max_us", TL_COL_TIME, 0},
    [MS_CPU_MIN] = {"CPU Min", "cpu_min_us", TL_COL_TIME, 0},
    [MS_CPU_RATIO] = {"CPU Ratio", "cpu_ratio_pct", TL_COL_PCT, 0},
    [MS_GPU_TOTAL] = {"GPU Total", "gpu_total_us", TL_COL_TIME, 0},
    [MS_GPU_AVG] = {"GPU Avg", "gpu_avg_us", TL_COL_TIME, 0},
    [MS_GPU_MAX] = {"GPU Max", "gpu_max_us", TL_COL_TIME, 0},
    [MS_GPU_MIN] = {"GPU Min", "gpu_min_us", TL_COL_TIME, 0},
    [MS_GPU_RATIO] = {"GPU Ratio", "gpu_ratio_pct", TL_COL_PCT, 0},
};

enum { PS_STEP, PS_TIME, PS_PHASE0, PS_OTHER = PS_PHASE0 + PH_N, PS_NCOLS };

static const tl_col step_cols[PS_NCOLS] = {
    [PS_STEP] = {"Step", "step", TL_COL_STR, 1},
    [PS_TIME] = {"Step Time", "step_us", TL_COL_TIME, 0},
    [PS_PHASE0 + PH_DATALOADER] = {"Dataloader", "dataloader_us", TL_COL_TIME, 0},
    [PS_PHASE0 + PH_FORWARD] = {"Forward", "forward_us", TL_COL_TIME, 0},
    [PS_PHASE0 + PH_BACKWARD] = {"Backward", "backward_us", TL_COL_TIME, 0},
    [PS_PHASE0 + PH_OPTIMIZER] = {"Optimization", "optimization_us", TL_COL_TIME, 0},
    [PS_OTHER] = {"Other", "other_us", TL_COL_TIME, 0},
};

static double pct(int64_t a, int64_t b)
{
    return b > 0 ? 100.0 * (double)a / (double)b : 0.0;
}

/* One row of the summary: CPU stats, and GPU stats when gpu is set. */
static void summary_row(tl_table *tab, const char *name, int indent, const phase_stat *ps,
                        int64_t window, int64_t gpu_step, int gpu, int per_call)
{
    int r = tl_table_add_row(tab);
    if (r < 0)
        return;
    tl_table_str(tab, r, MS_NAME, name);
    tl_table_indent(tab, r, MS_NAME, indent);
    if (per_call)
        tl_table_int(tab, r, MS_CALLS, ps->calls);
    tl_table_time(tab, r, MS_CPU_TOTAL, ps->total);
    if (per_call && ps->calls > 0) {
        tl_table_time(tab, r, MS_CPU_AVG, ps->total / ps->calls);
        tl_table_time(tab, r, MS_CPU_MAX, ps->max);
        tl_table_time(tab, r, MS_CPU_MIN, ps->min);
    }
    tl_table_pct(tab, r, MS_CPU_RATIO, pct(ps->total, window));
    if (!gpu)
        return;
    tl_table_time(tab, r, MS_GPU_TOTAL, ps->gpu_total);
    if (per_call && ps->calls > 0) {
        tl_table_time(tab, r, MS_GPU_AVG, ps->gpu_total / ps->calls);
        tl_table_time(tab, r, MS_GPU_MAX, ps->gpu_max);
        tl_table_time(tab, r, MS_GPU_MIN, ps->gpu_min);
    }
    tl_table_pct(tab, r, MS_GPU_RATIO, pct(ps->gpu_total, gpu_step));
}

static void stat_add(int64_t *total, int64_t *max, int64_t *min, int64_t calls, int64_t v)
{
    *total = tl_add_sat(*total, v);
    if (calls == 1 || v > *max)
        *max = v;
    if (calls == 1 || v < *min)
        *min = v;
}

tl_table *tl_view_model(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    (void)o;
    tl_table *tab = NULL;
    const tl_phases *php = NULL;
    int64_t *icpu = NULL, *igpu = NULL; /* per phase range: CPU time in the steps, kernel time */
    step *st = NULL;
    int nst = 0;
    tl_steps steps = {0};

    /* Steps (steps.h), sorted by start; without steps the whole trace is one. */
    if (tl_steps_load(t, &steps) != 0)
        goto oom;
    int pseudo = steps.pseudo;
    nst = steps.n;
    st = calloc(nst ? (size_t)nst : 1, sizeof *st);
    if (!st || !(php = tl_phases_of(t)))
        goto oom;
    const tl_phases ph = *php; /* the trace's: not freed here */
    for (int k = 0; k < nst; k++) {
        st[k].s = steps.v[k].s;
        st[k].e = steps.v[k].e;
        st[k].name = steps.v[k].name;
    }
    const int32_t *outer = ph.outer;
    size_t nit = ph.n;
    icpu = calloc(nit ? nit : 1, sizeof *icpu);
    igpu = calloc(nit ? nit : 1, sizeof *igpu);
    if (!icpu || !igpu)
        goto oom;
    int have_kernels = tl_trace_has_cats(t, TL_CATBIT(TL_CAT_KERNEL));

    /* Cut each phase range at step boundaries. */
    phase_stat ps[PH_N];
    memset(ps, 0, sizeof ps);
    for (size_t q = 0; q < nit; q++) {
        const tl_event *e = &t->ev[ph.v[q].ev];
        int p = ph.v[q].phase;
        int64_t s = e->ts, end = e->ts + e->dur, in = 0;
        for (int k = tl_steps_from(&steps, s); k < nst; k++) {
            if (st[k].e <= s)
                continue;
            if (st[k].s >= end)
                break;
            int64_t a = s > st[k].s ? s : st[k].s, b = end < st[k].e ? end : st[k].e;
            st[k].cpu[p] = tl_add_sat(st[k].cpu[p], b - a);
            tl_ivset_extend(&st[k].cover, a, b);
            in = tl_add_sat(in, b - a);
        }
        icpu[q] = in;
        if (in > 0) {
            ps[p].calls++;
            stat_add(&ps[p].total, &ps[p].max, &ps[p].min, ps[p].calls, in);
        }
    }

    /* Kernels to the phase and step of the call that launched them. */
    int64_t unlinked = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_KERNEL)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_KERNEL)
            continue;
        if (e->link == TL_NONE) {
            unlinked++;
            continue;
        }
        int k = tl_steps_at(&steps, t->ev[e->link].ts);
        if (k < 0)
            continue;
        st[k].gpu_all = tl_add_sat(st[k].gpu_all, e->dur);
        int32_t q = outer[e->link];
        if (q >= 0 && icpu[q] > 0) {
            st[k].gpu[ph.v[q].phase] = tl_add_sat(st[k].gpu[ph.v[q].phase], e->dur);
            igpu[q] = tl_add_sat(igpu[q], e->dur);
        }
    }
    int64_t gcount[PH_N] = {0};
    for (size_t q = 0; q < nit && have_kernels; q++) {
        if (icpu[q] <= 0)
            continue;
        int p = ph.v[q].phase;
        gcount[p]++;
        stat_add(&ps[p].gpu_total, &ps[p].gpu_max, &ps[p].gpu_min, gcount[p], igpu[q]);
    }

    /* Step totals and Other. */
    phase_stat step_ps = {0}, other_ps = {0};
    int64_t window = 0, other_gpu = 0;
    int64_t *other = calloc(nst ? (size_t)nst : 1, sizeof *other);
    if (!other)
        goto oom;
    for (int k = 0; k < nst; k++) {
        int64_t d = st[k].e - st[k].s;
        window = tl_add_sat(window, d);
        step_ps.calls++;
        stat_add(&step_ps.total, &step_ps.max, &step_ps.min, step_ps.calls, d);
        stat_add(&step_ps.gpu_total, &step_ps.gpu_max, &step_ps.gpu_min, step_ps.calls,
                 st[k].gpu_all);
        tl_ivset_normalize(&st[k].cover);
        other[k] = d - tl_ivset_length(&st[k].cover);
        other_ps.total = tl_add_sat(other_ps.total, other[k]);
        int64_t g = st[k].gpu_all;
        for (int p = 0; p < PH_N; p++)
            g = tl_sub_sat(g, st[k].gpu[p]);
        other_gpu = tl_add_sat(other_gpu, g);
    }
    other_ps.gpu_total = other_gpu;

    /* Table 1: the summary, one row per phase. */
    tab = tl_table_new("Model Summary", "model", summary_cols,
                       have_kernels ? MS_NCOLS : MS_GPU_TOTAL);
    if (!tab) {
        free(other);
        goto oom;
    }
    summary_row(tab, pseudo ? "Whole trace" : "ProfileStep", 0, &step_ps, window, step_ps.gpu_total,
                have_kernels, 1);
    for (int p = 0; p < PH_N; p++)
        summary_row(tab, tl_cat_name(tl_phase_cats[p]), 1, &ps[p], window, step_ps.gpu_total,
                    have_kernels, 1);
    summary_row(tab, "Other", 1, &other_ps, window, step_ps.gpu_total, have_kernels, 0);
    if (pseudo)
        tl_table_note(tab, "No steps in this trace: the whole trace is taken as one step.");
    tl_steps_note(&steps, tab);
    tl_table_note(tab, "Phases count their outermost ranges only; Other = step time not covered "
                       "by any phase. CPU Ratio is against the total step time.");
    if (have_kernels)
        tl_table_note(tab, "GPU: kernel time launched from each phase (summed over streams); GPU "
                           "Ratio is against the kernel time launched in the steps.");
    if (unlinked)
        tl_table_note(tab, "%lld kernel(s) with no known launching call are not attributed.",
                      (long long)unlinked);

    /* Table 2 (and 3): per step, with the average over steps. */
    for (int g = 0; g <= have_kernels; g++) {
        tl_table *pt = tl_table_new(g ? "Model per Step (GPU)" : "Model per Step",
                                    g ? "model_steps_gpu" : "model_steps", step_cols, PS_NCOLS);
        if (!pt) {
            free(other);
            goto oom;
        }
        tl_table *last = tab;
        while (last->next)
            last = last->next;
        last->next = pt;
        int64_t sum[PS_NCOLS] = {0};
        for (int k = 0; k < nst; k++) {
            int r = tl_table_add_row(pt);
            if (r < 0)
                break;
            if (pseudo)
                tl_table_str(pt, r, PS_STEP, "(whole trace)");
            else
                tl_table_str(pt, r, PS_STEP, tl_str(&t->strings, st[k].name));
            int64_t v = g ? st[k].gpu_all : st[k].e - st[k].s;
            tl_table_time(pt, r, PS_TIME, v);
            sum[PS_TIME] = tl_add_sat(sum[PS_TIME], v);
            int64_t rest = v;
            for (int p = 0; p < PH_N; p++) {
                v = g ? st[k].gpu[p] : st[k].cpu[p];
                tl_table_time(pt, r, PS_PHASE0 + p, v);
                sum[PS_PHASE0 + p] = tl_add_sat(sum[PS_PHASE0 + p], v);
                rest = tl_sub_sat(rest, v);
            }
            v = g ? rest : other[k];
            tl_table_time(pt, r, PS_OTHER, v);
            sum[PS_OTHER] = tl_add_sat(sum[PS_OTHER], v);
        }
        if (nst > 1) {
            int r = tl_table_add_row(pt);
            if (r >= 0) {
                tl_table_str(pt, r, PS_STEP, "Average");
                for (int c = PS_TIME; c < PS_NCOLS; c++)
                    tl_table_time(pt, r, c, sum[c] / nst);
            }
        }
        tl_table_note(pt, g ? "Kernel time launched in each step and phase; Other = kernels "
                              "launched outside the phases."
                            : "CPU time of each phase in each step; Other = step time not "
                              "covered by any phase.");
    }
    free(other);

    for (int k = 0; k < nst; k++)
        tl_ivset_free(&st[k].cover);
    free(st);
    free(icpu);
    free(igpu);
    tl_steps_free(&steps);
    return tab;
oom:
    if (st)
        for (int k = 0; k < nst; k++)
            tl_ivset_free(&st[k].cover);
    free(st);
    free(icpu);
    free(igpu);
    tl_steps_free(&steps);
    tl_table_free(tab);
    tl_error_setc(err, TL_ERR_NOMEM, "model: out of memory");
    return NULL;
}
