/*
 * view_findings.c — the end of `tally report`: up to five things worth fixing, each with the
 * numbers that show it and the time at stake (how much of the profiled window it accounts for,
 * an upper bound on what fixing it could save), ranked by that time.
 *
 * Each check is one function that looks at the trace and either adds a finding or stays quiet.
 * The numbers come from the same code as the views that show them in full (insight_idle.c for
 * gaps and launches, tl_comm_compute for communication), so a finding never disagrees with the
 * table it points to. Thresholds are constants below, chosen so that a healthy trace says
 * nothing: a finding is a claim that something is wrong, not a summary.
 */
#include "analysis/attrib.h"
#include "analysis/insight.h"
#include "analysis/memory.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define IDLE_PCT_MIN       20.0 /* GPU idle share of the window worth a finding */
#define DATALOADER_PCT_MIN 10.0 /* data loading share of the window */
#define SHORT_SHARE_MIN    30.0 /* share of kernels that are short, for "launch-bound" */
#define SHORT_COUNT_MIN    50   /* and at least this many short kernels */
#define LAUNCH_PCT_MIN     1.0  /* and its launch gaps, % of window (below: little gain) */
#define COPY_STAKE_PCT_MIN 0.5  /* sync/pageable copies: host time blocked, % of window */
#define LONG_GAP_NS        TL_LONG_GAP_NS /* a "long" GPU gap: 1 ms */
#define DOMINANT_PCT_MIN   30.0           /* one operator's share of (GPU or self CPU) time */
#define EXPOSED_PCT_MIN    5.0            /* exposed communication, % of window */
#define MAX_FINDINGS       5
/* Memory (ranked after the time findings, by bytes at stake): */
#define PEAK_SHARE_MIN   25.0                /* one owner's blocks of one kind, % of the peak */
#define FRAG_PCT_MIN     25.0                /* reserved but not allocated at the peak, % */
#define FRAG_MIN_BYTES   ((int64_t)64 << 20) /* ... and at least this much */
#define MAX_MEM_FINDINGS 3

typedef struct finding {
    int64_t stake;
    int memory; /* stake is bytes of memory, not time */
    char what[256];
    char evidence[384];
    char hint[160];
} finding;

typedef struct ctx {
    const tl_trace *t;
    tl_window w;
    tl_ivset window;  /* the profiled window as a set (the steps, or the whole span) */
    int has_device;   /* any kernel, copy or memset */
    tl_gpu_scope sc;  /* the device work and window of --window / --linked-only */
    tl_idle idle;     /* per-stream idle and launch statistics, inside sc */
    int64_t short_ns; /* short-kernel threshold */
    finding *f;
    int nf, cap;
    const tl_mem *mem; /* the memory replay (tl_mem_of; NULL without memory events) */
} ctx;

/* Times in findings are read, not compared: three significant digits ("6.97 us", "12 ms"). */
static void tm(char *buf, size_t n, int64_t ns)
{
    double v = (double)ns;
    if (ns < 1000 && ns > -1000)
        snprintf(buf, n, "%lld ns", (long long)ns);
    else if (ns < 1000000 && ns > -1000000)
        snprintf(buf, n, "%.3g us", v / 1e3);
    else if (ns < 1000000000 && ns > -1000000000)
        snprintf(buf, n, "%.3g ms", v / 1e6);
    else
        snprintf(buf, n, "%.3g s", v / 1e9);
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static finding *add(ctx *c, int64_t stake)
{
    if (c->nf == c->cap) {
        int nc = c->cap ? c->cap * 2 : 8;
        finding *nf = realloc(c->f, (size_t)nc * sizeof *nf);
        if (!nf)
            return NULL;
        c->f = nf;
        c->cap = nc;
    }
    finding *f = &c->f[c->nf++];
    memset(f, 0, sizeof *f);
    f->stake = stake;
    return f;
}

/* "of the step" when the window is made of steps, else "of the trace". */
static const char *of_window(const ctx *c)
{
    return c->w.nsteps ? "of the step time" : "of the trace";
}

/* |set ∩ window| for a normalized set. */
static int64_t in_window(const ctx *c, const tl_ivset *set)
{
    tl_ivset tmp = {0};
    tl_ivset_intersect(set, &c->window, &tmp);
    int64_t n = tl_ivset_length(&tmp);
    tl_ivset_free(&tmp);
    return n;
}

/* ---- the checks ------------------------------------------------------------------------- */

/* Low GPU utilization: the least busy device, busy = union of its ops within the window. */
static void check_gpu_idle(ctx *c)
{
    if (!c->has_device || c->w.total <= 0)
        return;
    const tl_trace *t = c->t;
    int32_t devs[64];
    int ndev = 0;
    tl_ivset sets[64];
    memset(sets, 0, sizeof sets);
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (!tl_is_device_work(e))
            continue;
        int32_t d = t->tracks[e->track].device;
        int k = 0;
        while (k < ndev && devs[k] != d)
            k++;
        if (k == ndev) {
            if (ndev == 64)
                continue;
            devs[ndev++] = d;
        }
        tl_ivset_extend(&sets[k], e->ts, e->ts + e->dur);
    }
    int worst = -1;
    int64_t worst_busy = 0;
    for (int k = 0; k < ndev; k++) {
        tl_ivset_normalize(&sets[k]);
        int64_t busy = in_window(c, &sets[k]);
        if (worst < 0 || busy < worst_busy) {
            worst = k;
            worst_busy = busy;
        }
        tl_ivset_free(&sets[k]);
    }
    if (worst < 0)
        return;
    int64_t idle = c->w.total - worst_busy;
    double p = pct(idle, c->w.total);
    if (p < IDLE_PCT_MIN)
        return;
    finding *f = add(c, idle);
    if (!f)
        return;
    char a[32], b[32];
    int n = c->w.nsteps > 0 ? c->w.nsteps : 1;
    tm(a, sizeof a, worst_busy / n);
    tm(b, sizeof b, c->w.total / n);
    const char *accel = tl_accel_name(c->t);
    snprintf(f->what, sizeof f->what, "%s idle %.0f%% %s", accel, p, of_window(c));
    snprintf(f->evidence, sizeof f->evidence, "%s %d busy %s of %s%s", accel, (int)devs[worst], a,
             b, c->w.nsteps ? " per step" : "");
    snprintf(f->hint, sizeof f->hint,
             "the %s waits on the host: see 'tally gaps' for when and what the host was doing",
             accel);
}

static int is_dataloader(const tl_trace *t, const tl_event *e)
{
    if (e->cat == TL_CAT_DATALOADER)
        return 1;
    if (e->cat != TL_CAT_USER && e->cat != TL_CAT_PYTHON)
        return 0;
    const char *n = tl_str(&t->strings, e->name);
    for (; *n; n++)
        if (strncasecmp(n, "dataloader", 10) == 0)
            return 1;
    return 0;
}

/* Steps bound by data loading: union of data-loading ranges inside the window. */
static void check_dataloader(ctx *c)
{
    const tl_trace *t = c->t;
    tl_ivset dl = {0};
    int64_t calls = 0;
    /* per string id: 0 = not looked at yet, 1 = no, 2 = a data-loading name */
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1);
    if (!named)
        return;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->dur <= 0)
            continue;
        int dlname = 0;
        if ((e->cat == TL_CAT_USER || e->cat == TL_CAT_PYTHON) && e->name < t->strings.count) {
            if (!named[e->name])
                named[e->name] = 1 + is_dataloader(t, e);
            dlname = named[e->name] == 2;
        }
        if (e->cat == TL_CAT_DATALOADER || dlname) {
            tl_ivset_extend(&dl, e->ts, e->ts + e->dur);
            calls++;
        }
    }
    free(named);
    tl_ivset_normalize(&dl);
    int64_t time = in_window(c, &dl);
    tl_ivset_free(&dl);
    double p = pct(time, c->w.total);
    if (!calls || p < DATALOADER_PCT_MIN)
        return;
    finding *f = add(c, time);
    if (!f)
        return;
    char a[32], b[32];
    int n = c->w.nsteps > 0 ? c->w.nsteps : 1;
    tm(a, sizeof a, time / n);
    tm(b, sizeof b, c->w.total / n);
    snprintf(f->what, sizeof f->what, "Data loading takes %.0f%% %s", p, of_window(c));
    snprintf(f->evidence, sizeof f->evidence, "%s of %s%s waiting for the next batch", a, b,
             c->w.nsteps ? " per step" : "");
    snprintf(f->hint, sizeof f->hint,
             "more DataLoader workers, pin_memory=True, prefetch or move preprocessing off the "
             "training loop");
}

/* Phases: the user ranges (not operators) kernels are attributed to by launch. */
#define PHASE_MASK                                                                                 \
    (TL_CATBIT(TL_CAT_USER) | TL_CATBIT(TL_CAT_DATALOADER) | TL_CATBIT(TL_CAT_FORWARD) |           \
     TL_CATBIT(TL_CAT_BACKWARD) | TL_CATBIT(TL_CAT_OPTIMIZER))

/* "GPU 0 stream 7" ("MTIA 9 stream 1": what the trace calls its accelerators) */
static void stream_name(const tl_trace *t, const tl_stream_stats *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s %d stream %lld", tl_accel_name(t), (int)s->device,
             (long long)t->tracks[s->track].tid);
}

/* Launch-bound: a compute stream whose kernels are mostly tiny and which waited for their
 * launches. Only compute streams: a communication stream waits for the next collective, a side
 * stream for work the compute stream hands it, by design. The time at stake is that stream's
 * launch gaps: host or kernel waits before a kernel, each shorter than TL_LONG_GAP_NS (a longer
 * wait is the host doing something else: the long-gap finding). */
static void check_launch_bound(ctx *c)
{
    const tl_idle *x = &c->idle;
    const tl_stream_stats *s = NULL;
    for (size_t i = 0; i < x->nstreams; i++) {
        const tl_stream_stats *q = &x->streams[i];
        if (q->role != TL_ROLE_COMPUTE || q->short_kernels < SHORT_COUNT_MIN ||
            pct(q->short_kernels, q->kernels) < SHORT_SHARE_MIN || q->launch_wait <= 0)
            continue;
        if (!s || q->launch_wait > s->launch_wait)
            s = q;
    }
    if (!s || pct(s->launch_wait, c->w.total) < LAUNCH_PCT_MIN)
        return;
    double share = pct(s->short_kernels, s->kernels);
    /* The phase (user range) that launched most of this stream's short kernels. */
    const tl_trace *t = c->t;
    uint32_t *count = calloc(t->strings.count ? t->strings.count : 1, sizeof *count);
    uint32_t best = 0, best_n = 0;
    if (count) {
        tl_cat_walk cw;
        for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_KERNEL)); i < t->nev;
             i = tl_cat_walk_step(&cw, i)) {
            const tl_event *e = &t->ev[i];
            if (e->cat != TL_CAT_KERNEL || e->track != s->track || e->dur >= x->short_ns ||
                e->link == TL_NONE || !tl_gpu_scope_touches(&c->sc, e))
                continue;
            int32_t p = tl_launch_owner(t, i, PHASE_MASK);
            if (p == TL_NONE)
                continue;
            uint32_t nm = t->ev[p].name;
            if (nm < t->strings.count && ++count[nm] > best_n) {
                best_n = count[nm];
                best = nm;
            }
        }
        free(count);
    }
    finding *f = add(c, s->launch_wait);
    if (!f)
        return;
    char th[32], ka[32], ca[32], w[32], sn[64];
    tm(th, sizeof th, x->short_ns);
    tm(ka, sizeof ka, s->kernels ? s->kernel_time / s->kernels : 0);
    tm(ca, sizeof ca, s->linked ? s->call_time / s->linked : 0);
    tm(w, sizeof w, s->launch_wait);
    stream_name(t, s, sn, sizeof sn);
    if (best_n * 2 >= (uint32_t)s->short_kernels && best_n > 0)
        snprintf(f->what, sizeof f->what, "Launch-bound on %s in %s: %.0f%% of kernels < %s", sn,
                 tl_str(&t->strings, best), share, th);
    else
        snprintf(f->what, sizeof f->what, "Launch-bound on %s: %.0f%% of kernels < %s", sn, share,
                 th);
    if (s->linked)
        snprintf(f->evidence, sizeof f->evidence,
                 "%lld/%lld kernels short; avg %s vs launch %s; launch gaps %s",
                 (long long)s->short_kernels, (long long)s->kernels, ka, ca, w);
    else
        snprintf(f->evidence, sizeof f->evidence, "%lld/%lld kernels short; avg kernel %s",
                 (long long)s->short_kernels, (long long)s->kernels, ka);
    snprintf(f->hint, sizeof f->hint,
             "fuse small ops (torch.compile)%s, batch per-item tensor ops (zeros/cat in loops)",
             strcmp(tl_accel_name(c->t), "GPU") ? "" : ", use CUDA graphs");
}

/* Synchronous or pageable copies: the host is blocked for the copy. */
static void check_copies(ctx *c)
{
    const tl_trace *t = c->t;
    int64_t n = 0, nsync = 0, npage = 0, bytes = 0, stake = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_MEMCPY)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_MEMCPY || !tl_gpu_scope_counts(t, &c->sc, e)) /* the memcpy view's */
            continue;
        const tl_event *call = e->link != TL_NONE ? &t->ev[e->link] : NULL;
        int pageable = tl_copy_is_pageable(t, e), sync = tl_copy_is_sync(t, e);
        if (!pageable && !sync)
            continue;
        n++;
        nsync += sync;
        npage += pageable;
        bytes = tl_add_sat(bytes, e->value);
        int64_t blocked = e->dur;
        if (call && call->dur > blocked)
            blocked = call->dur;
        stake = tl_add_sat(stake, blocked);
    }
    if (!n || pct(stake, c->w.total) < COPY_STAKE_PCT_MIN)
        return;
    finding *f = add(c, stake);
    if (!f)
        return;
    char b[32], s[32];
    tl_fmt_bytes(b, sizeof b, bytes);
    tm(s, sizeof s, stake);
    snprintf(f->what, sizeof f->what, "%lld %s cop%s block%s the host", (long long)n,
             npage && nsync ? "synchronous/pageable"
             : npage        ? "pageable"
                            : "synchronous",
             n > 1 ? "ies" : "y", n > 1 ? "" : "s");
    snprintf(f->evidence, sizeof f->evidence, "%s; host blocked %s (%lld pageable, %lld sync)", b,
             s, (long long)npage, (long long)nsync);
    snprintf(f->hint, sizeof f->hint,
             "pin host memory (pin_memory=True) and copy with non_blocking=True / "
             "cudaMemcpyAsync");
}

/* Long GPU gaps: idle stretches of 1 ms or more on a compute stream (the idle of a
 * communication or side stream is no problem of its own). The time at stake is the stream's
 * that has most (streams idle at once would count twice), inside the window. */
static void check_long_gaps(ctx *c)
{
    const tl_idle *x = &c->idle;
    const tl_stream_stats *s = NULL;
    for (size_t k = 0; k < x->nstreams; k++) {
        const tl_stream_stats *q = &x->streams[k];
        if (q->role == TL_ROLE_COMPUTE && q->long_gaps && (!s || q->long_time > s->long_time))
            s = q;
    }
    if (!s)
        return;
    const tl_gap *g = s->long_max.len > 0 ? &s->long_max : NULL;
    finding *f = g ? add(c, s->long_time) : NULL;
    if (!f)
        return;
    const tl_trace *t = c->t;
    char lg[32], in[32], at[32], thr[32], ctxs[160] = "", sn[64], part[64] = "";
    tl_track_index ix;
    if (tl_track_index_build(t, &ix) == 0) {
        tl_host_context(t, &ix, g->s, g->e, ctxs, sizeof ctxs);
        tl_track_index_free(&ix);
    }
    int64_t t0, t1;
    tl_trace_span(t, &t0, &t1);
    /* the gap as long as it was (>= the threshold by construction); the part in the steps is
     * what is at stake and what 'tally gaps' lists */
    tm(lg, sizeof lg, g->e - g->s);
    if (g->len < g->e - g->s) {
        tm(in, sizeof in, g->len);
        snprintf(part, sizeof part, ", %s of it in the steps", in);
    }
    tm(at, sizeof at, g->s - t0);
    tm(thr, sizeof thr, LONG_GAP_NS);
    stream_name(t, s, sn, sizeof sn);
    snprintf(f->what, sizeof f->what, "%lld %s gap%s >= %s on %s (longest %s)",
             (long long)s->long_gaps, tl_accel_name(t), s->long_gaps > 1 ? "s" : "", thr, sn, lg);
    snprintf(f->evidence, sizeof f->evidence, "longest at +%s%s, %s%s%s", at, part,
             tl_wait_name((tl_wait)g->cause), ctxs[0] ? ", host in " : "", ctxs);
    snprintf(f->hint, sizeof f->hint,
             "'tally gaps' lists every gap with the host ranges running during it");
}

/* One operator dominating: GPU time of the computation kernels it launched when the trace has
 * them (collectives aside: their time is the communication finding's, and an operator such as
 * record_param_comms "dominating" by them would get advice for computation), else self CPU
 * time of operators (or of user ranges when there are no operators). */
static void check_dominant(ctx *c)
{
    const tl_trace *t = c->t;
    uint32_t ns = t->strings.count ? t->strings.count : 1;
    int64_t *acc = calloc(ns, sizeof *acc);
    uint8_t *comm = calloc(ns, 1); /* tl_is_comm_kernel_id's answers */
    if (!acc || !comm) {
        free(acc);
        free(comm);
        return;
    }
    int64_t total = 0;
    const char *what = NULL;
    int gpu = 0, cpu_cat = -1;
    /* GPU: kernel time by the innermost operator around its launch call, or by the innermost
     * named range when no operator encloses it (tally's own traces); attrib.c decides. */
    const uint32_t ranges = TL_OWNER_ANY_SPAN & ~TL_CATBIT(TL_CAT_STEP) & ~TL_CATBIT(TL_CAT_OTHER);
    /* the owner of each linked kernel, in event order, for the second pass below */
    int32_t *owner = NULL;
    size_t nowner = 0, capowner = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_KERNEL)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_KERNEL || e->link == TL_NONE)
            continue;
        int32_t j = TL_NONE; /* a collective is no one's here, nor work outside the window */
        if (!tl_is_comm_kernel_id(t, comm, e->name) && tl_gpu_scope_counts(t, &c->sc, e)) {
            j = tl_launch_owner(t, i, TL_CATBIT(TL_CAT_OPERATOR));
            if (j == TL_NONE)
                j = tl_launch_owner(t, i, ranges);
        }
        if (nowner == capowner) {
            capowner = capowner ? capowner * 2 : 1024;
            int32_t *no = realloc(owner, capowner * sizeof *no);
            if (!no) {
                free(owner);
                free(acc);
                free(comm);
                return;
            }
            owner = no;
        }
        owner[nowner++] = j;
        if (j == TL_NONE)
            continue;
        acc[t->ev[j].name] = tl_add_sat(acc[t->ev[j].name], e->dur);
        total = tl_add_sat(total, e->dur);
        gpu = 1;
    }
    free(comm);
    if (gpu) {
        what = "of GPU computation kernel time";
    } else if (c->has_device) {
        free(acc); /* kernels, but none launched from a named place */
        free(owner);
        return;
    } else {
        /* the self times of the operators and ranges, numbered in event order */
        tl_evrank rk;
        int64_t *self = NULL;
        if (tl_evrank_build(t, 1u << TL_CAT_OPERATOR | 1u << TL_CAT_USER, &rk) != 0 ||
            !(self = tl_big_alloc((rk.n ? rk.n : 1) * sizeof *self))) {
            tl_evrank_free(&rk);
            free(acc);
            free(owner);
            return;
        }
        tl_self_times_of(t, &rk, self);
        int cat = TL_CAT_OPERATOR;
        for (int pass = 0; pass < 2 && !total; pass++, cat = TL_CAT_USER) {
            for (size_t i = 0, k = 0; i < t->nev; i++) {
                if (tl_evrank_of(&rk, i) < 0)
                    continue;
                int64_t v = self[k++];
                if (t->ev[i].cat != cat || v <= 0)
                    continue;
                acc[t->ev[i].name] = tl_add_sat(acc[t->ev[i].name], v);
                total = tl_add_sat(total, v);
            }
            what = cat == TL_CAT_OPERATOR ? "of operator self CPU time" : "of range self time";
            cpu_cat = cat;
        }
        free(self);
        tl_evrank_free(&rk);
    }
    uint32_t best = 0;
    int64_t second = 0;
    for (uint32_t k = 1; k < ns; k++)
        if (acc[k] > acc[best])
            best = k;
    for (uint32_t k = 0; k < ns; k++)
        if (k != best && acc[k] > second)
            second = acc[k];
    int64_t top = acc[best];
    free(acc);
    double p = pct(top, total);
    /* one name alone is not "dominating" anything */
    if (!total || !second || p < DOMINANT_PCT_MIN) {
        free(owner);
        return;
    }
    /* Time at stake: the wall time its work covers in the window (the union of its kernels, or
     * of its calls), not the sum, which counts threads and streams that run at once. */
    tl_ivset mine = {0};
    for (size_t i = 0, k = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (gpu) {
            if (e->cat != TL_CAT_KERNEL || e->link == TL_NONE)
                continue;
            int32_t j = owner[k++];
            if (j == TL_NONE || t->ev[j].name != best)
                continue;
        } else if ((int)e->cat != cpu_cat || e->name != best)
            continue;
        tl_ivset_extend(&mine, e->ts, e->ts + e->dur);
    }
    free(owner);
    tl_ivset_normalize(&mine);
    int64_t stake = in_window(c, &mine);
    tl_ivset_free(&mine);
    finding *f = add(c, stake < top ? stake : top);
    if (!f)
        return;
    char a[32], b[32];
    tm(a, sizeof a, top);
    tm(b, sizeof b, total);
    if (gpu)
        snprintf(f->what, sizeof f->what, "%s takes %.0f%% of %s computation kernel time",
                 tl_str(&t->strings, best), p, tl_accel_name(t));
    else
        snprintf(f->what, sizeof f->what, "%s takes %.0f%% %s", tl_str(&t->strings, best), p, what);
    snprintf(f->evidence, sizeof f->evidence, "%s of %s; next largest %.0f%%", a, b,
             pct(second, total));
    snprintf(f->hint, sizeof f->hint,
             "optimise this first: 'tally ops' shows its calls, shapes and kernels");
}

/* Communication not overlapped with computation, on the device that has most of it; named by
 * the communication stream with most collective time there. */
static void check_exposed_comm(ctx *c)
{
    const tl_idle *x = &c->idle;
    tl_comm m, best;
    int32_t dev = -1;
    memset(&best, 0, sizeof best);
    for (size_t i = 0; i < x->nstreams; i++) {
        int32_t d = x->streams[i].device;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= x->streams[j].device == d;
        if (seen || tl_comm_compute_ex(c->t, &c->sc, d, &m) != 0)
            continue;
        if (dev < 0 || m.exposed > best.exposed) {
            best = m;
            dev = d;
        }
    }
    if (dev < 0 || best.comm <= 0)
        return;
    double p = pct(best.exposed, best.window.total);
    if (p < EXPOSED_PCT_MIN)
        return;
    finding *f = add(c, best.exposed);
    if (!f)
        return;
    char a[32], b[32], where[160];
    tm(a, sizeof a, best.exposed);
    tm(b, sizeof b, best.comm);
    /* the device's communication is the evidence: every stream it ran on is named */
    size_t len = (size_t)snprintf(where, sizeof where, "%s %d", tl_accel_name(c->t), (int)dev);
    int ncomm = 0;
    for (size_t i = 0; i < x->nstreams; i++)
        ncomm += x->streams[i].device == dev && x->streams[i].comm_time > 0;
    for (size_t i = 0, k = 0; i < x->nstreams && len < sizeof where; i++)
        if (x->streams[i].device == dev && x->streams[i].comm_time > 0)
            len += (size_t)snprintf(where + len, sizeof where - len, "%s%lld",
                                    k++         ? ", "
                                    : ncomm > 1 ? " streams "
                                                : " stream ",
                                    (long long)c->t->tracks[x->streams[i].track].tid);
    snprintf(f->what, sizeof f->what, "Communication not overlapped on %s: %.0f%% %s", where, p,
             of_window(c));
    snprintf(f->evidence, sizeof f->evidence, "%s of %s communication had no compute beside it", a,
             b);
    snprintf(f->hint, sizeof f->hint,
             "overlap communication with backward (DDP bucket size, async collectives); look "
             "for stragglers");
}

/* Collectives on the host, in a trace without device work (a CPU-only job: gloo): the union of
 * the host communication ranges in the window, as the distributed view and the breakdown's
 * Communication column count it; named by its collective with most time and its threads. (With
 * device work, the collectives' time is their kernels': check_exposed_comm.) */
static void check_host_comm(ctx *c)
{
    const tl_trace *t = c->t;
    tl_comm m;
    if (c->has_device || c->w.total <= 0 || tl_comm_compute_ex(t, &c->sc, -1, &m) != 0 || !m.nhost)
        return;
    double p = pct(m.host_comm, c->w.total);
    if (p < EXPOSED_PCT_MIN)
        return;
    /* the collective with most time (a few names: a short list) and the threads that ran them */
    enum { NAMES = 16, THREADS = 4 };
    uint32_t name[NAMES], tid_track[THREADS];
    int64_t name_ns[NAMES] = {0}, name_calls[NAMES] = {0};
    int nn = 0, nt = 0, more_threads = 0;
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1);
    if (!named)
        return;
    for (size_t i = 0; i < t->nev; i++) { /* the distributed view's host collectives */
        const tl_event *e = &t->ev[i];
        if (e->dur <= 0 || tl_cat_is_device((tl_cat)e->cat) || e->track >= t->ntracks ||
            !tl_is_host_comm_event(t, named, e) ||
            tl_gpu_scope_len(&c->sc, e->ts, tl_add_sat(e->ts, e->dur)) <= 0)
            continue;
        int k = 0;
        while (k < nn && name[k] != e->name)
            k++;
        if (k == nn && nn < NAMES)
            name[nn++] = e->name;
        if (k < nn) {
            name_ns[k] = tl_add_sat(name_ns[k], e->dur);
            name_calls[k]++;
        }
        int j = 0;
        while (j < nt && tid_track[j] != e->track)
            j++;
        if (j == nt && nt < THREADS)
            tid_track[nt++] = e->track;
        else if (j == nt)
            more_threads = 1;
    }
    free(named);
    if (!nn)
        return;
    int best = 0;
    for (int k = 1; k < nn; k++)
        if (name_ns[k] > name_ns[best])
            best = k;
    finding *f = add(c, m.host_comm);
    if (!f)
        return;
    char a[32], b[32], threads[96];
    int n = c->w.nsteps > 0 ? c->w.nsteps : 1;
    tm(a, sizeof a, m.host_comm / n);
    tm(b, sizeof b, c->w.total / n);
    size_t len = 0;
    for (int j = 0; j < nt && len < sizeof threads; j++)
        len += (size_t)snprintf(threads + len, sizeof threads - len, "%s%lld", j ? ", " : "",
                                (long long)t->tracks[tid_track[j]].tid);
    if (more_threads && len < sizeof threads)
        snprintf(threads + len, sizeof threads - len, ", ...");
    snprintf(f->what, sizeof f->what, "Host communication takes %.0f%% %s", p, of_window(c));
    snprintf(f->evidence, sizeof f->evidence,
             "collectives on the host cover %s of %s%s (%lld calls of %s, on thread%s %s); the "
             "trace has no GPU work",
             a, b, c->w.nsteps ? " per step" : "", (long long)name_calls[best],
             tl_str(&t->strings, name[best]), nt > 1 ? "s" : "", threads);
    snprintf(f->hint, sizeof f->hint,
             "fewer, larger collectives (DDP bucket_cap_mb) overlapped with compute; a report of "
             "every rank's trace shows whether one rank is a straggler");
}

/* ---- memory ------------------------------------------------------------------------------ */

/* What a category's bytes at the peak could be traded for. */
static const char *peak_hint(int category)
{
    switch (category) {
    case TL_MEM_ACTIVATION:
        return "recompute them in the backward pass (activation checkpointing), or a smaller "
               "micro-batch or sequence; 'tally memory' has the layout";
    case TL_MEM_PARAMETER:
    case TL_MEM_GRADIENT:
        return "shard them across ranks (FSDP, ZeRO) or keep them in bf16; 'tally memory' has "
               "the layout";
    case TL_MEM_OPTIMIZER_STATE:
        return "shard the optimizer state (ZeRO-1), or an 8-bit or state-free optimizer";
    case TL_MEM_TEMPORARY:
        return "fuse the operators that make these temporaries (torch.compile) or free them "
               "sooner";
    default:
        return "'tally memory' shows what is alive at the peak and who allocated it";
    }
}

typedef struct peak_arg {
    const tl_mem_device *d;
    int category;
} peak_arg;

static int alive_at_peak_of(const tl_mem_block *b, const void *arg)
{
    const peak_arg *a = arg;
    return b->category == a->category && tl_mem_alive_at_peak(b, a->d);
}

/* What the peak is made of: the kind of memory with the most bytes at the peak (parameters,
 * activations, ...) when it is a large share, named by the range or operator that made most of
 * it; in a trace whose memory says nothing of its kind, the operator that allocated most. */
static void check_mem_peak(ctx *c)
{
    static const char *const kinds[TL_MEM_CAT_COUNT] = {
        [TL_MEM_OTHER] = "Memory",           [TL_MEM_PARAMETER] = "Parameters",
        [TL_MEM_GRADIENT] = "Gradients",     [TL_MEM_OPTIMIZER_STATE] = "Optimizer state",
        [TL_MEM_ACTIVATION] = "Activations", [TL_MEM_INPUT] = "Inputs",
        [TL_MEM_TEMPORARY] = "Temporaries"};
    const tl_mem_device *d = tl_mem_main_device(c->mem);
    if (!d)
        return;
    int cat = TL_MEM_OTHER; /* the kind with the most bytes, "other" when no kind is known */
    for (int k = 1; k < TL_MEM_CAT_COUNT; k++)
        if (d->at_peak[k] > (cat == TL_MEM_OTHER ? 0 : d->at_peak[cat]))
            cat = k;
    peak_arg pa = {d, cat};
    tl_mem_group *g;
    size_t n;
    if (tl_mem_group_blocks(c->t, c->mem, d->device, alive_at_peak_of, &pa, &g, &n) != 0)
        return;
    int64_t kind = d->at_peak[cat], top = n ? g[0].bytes : 0;
    /* the whole kind, unless one owner's part of it is itself large (or the kind is unknown) */
    int by_owner = n && g[0].owner && (cat == TL_MEM_OTHER || pct(top, d->peak) >= PEAK_SHARE_MIN);
    int64_t stake = by_owner ? top : kind;
    if ((cat == TL_MEM_OTHER && !by_owner) || pct(stake, d->peak) < PEAK_SHARE_MIN) {
        free(g);
        return;
    }
    finding *f = add(c, stake);
    if (f) {
        char dev[32], owner[96] = "", b[32], pk[32], at[32], step[32] = "", part[160] = "";
        f->memory = 1;
        tl_mem_device_name(d->device, dev, sizeof dev);
        if (n && g[0].owner)
            tl_mem_group_name(c->t, &g[0], owner, sizeof owner);
        tl_fmt_bytes(b, sizeof b, stake);
        tl_fmt_bytes(pk, sizeof pk, d->peak);
        int64_t t0, t1;
        tl_trace_span(c->t, &t0, &t1);
        tm(at, sizeof at, d->peak_ts - t0);
        if (d->peak_step >= 0)
            snprintf(step, sizeof step, " (step %lld)",
                     (long long)c->mem->steps[d->peak_step].number);
        double p = pct(stake, d->peak);
        if (cat == TL_MEM_OTHER)
            snprintf(f->what, sizeof f->what, "Memory allocated by %s is %.0f%% of the %s peak",
                     owner, p, dev);
        else if (by_owner)
            snprintf(f->what, sizeof f->what, "%s of %s are %.0f%% of the %s peak", kinds[cat],
                     owner, p, dev);
        else
            snprintf(f->what, sizeof f->what, "%s are %.0f%% of the %s peak", kinds[cat], p, dev);
        if (!by_owner && owner[0]) {
            char tb[32];
            tl_fmt_bytes(tb, sizeof tb, top);
            snprintf(part, sizeof part, "; the most made in %s: %s", owner, tb);
        }
        snprintf(f->evidence, sizeof f->evidence, "%s of %s at +%s%s%s", b, pk, at, step, part);
        snprintf(f->hint, sizeof f->hint, "%s", peak_hint(cat));
    }
    free(g);
}

/* Reserved but not allocated when allocated memory peaked: the caching allocator's free blocks. */
static void check_mem_fragmentation(ctx *c)
{
    for (size_t i = 0; i < c->mem->ndev; i++) {
        const tl_mem_device *d = &c->mem->dev[i];
        if (!d->timeline || d->peak <= 0 || d->res_at_peak <= d->peak)
            continue;
        int64_t slack = d->res_at_peak - d->peak;
        double p = pct(slack, d->res_at_peak);
        if (p < FRAG_PCT_MIN || slack < FRAG_MIN_BYTES)
            continue;
        finding *f = add(c, slack);
        if (!f)
            return;
        char dev[32], s[32], r[32], a[32];
        f->memory = 1;
        tl_mem_device_name(d->device, dev, sizeof dev);
        tl_fmt_bytes(s, sizeof s, slack);
        tl_fmt_bytes(r, sizeof r, d->res_at_peak);
        tl_fmt_bytes(a, sizeof a, d->peak);
        snprintf(f->what, sizeof f->what, "%s: %.0f%% of reserved memory unused at the peak", dev,
                 p);
        snprintf(f->evidence, sizeof f->evidence,
                 "%s reserved, %s allocated: %s cached in free blocks (fragmentation)", r, a, s);
        snprintf(f->hint, sizeof f->hint,
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; fewer distinct tensor sizes "
                 "(pad or bucket shapes)");
    }
}

/* Memory allocated step after step and never freed. */
static void check_mem_leak(ctx *c)
{
    for (size_t i = 0; i < c->mem->ndev; i++) {
        const tl_mem_device *d = &c->mem->dev[i];
        if (!d->leak)
            continue;
        int steps = d->leak_last - d->leak_first + 1;
        finding *f = add(c, d->leak_per_step * steps);
        if (!f)
            return;
        char dev[32], per[32], owner[256] = "";
        f->memory = 1;
        tl_mem_device_name(d->device, dev, sizeof dev);
        tl_fmt_bytes(per, sizeof per, d->leak_per_step);
        tl_mem_group *g;
        size_t n;
        if (tl_mem_group_blocks(c->t, c->mem, d->device, tl_mem_kept, d, &g, &n) == 0) {
            if (n)
                tl_mem_group_name(c->t, &g[0], owner, sizeof owner);
            free(g);
        }
        snprintf(f->what, sizeof f->what, "%s keeps %s per step it never frees", dev, per);
        snprintf(f->evidence, sizeof f->evidence,
                 "steps %lld..%lld each kept memory%s%s while allocated memory grew",
                 (long long)c->mem->steps[d->leak_first].number,
                 (long long)c->mem->steps[d->leak_last].number, owner[0] ? " allocated by " : "",
                 owner);
        snprintf(f->hint, sizeof f->hint,
                 "a tensor kept across steps: a loss summed without .item(), outputs appended to "
                 "a list, a cache that grows");
    }
}

/* ---- the view ---------------------------------------------------------------------------- */

/* Time findings first, by time at stake; then memory findings, by bytes at stake. */
static int cmp_finding(const void *pa, const void *pb)
{
    const finding *a = pa, *b = pb;
    if (a->memory != b->memory)
        return a->memory - b->memory;
    return (a->stake < b->stake) - (a->stake > b->stake);
}

enum { F_RANK, F_WHAT, F_STAKE, F_BYTES, F_EVIDENCE, F_NCOLS };

static const tl_col find_cols[F_NCOLS] = {
    [F_RANK] = {"#", "rank", TL_COL_INT, 0},
    [F_WHAT] = {"Finding", "finding", TL_COL_STR, 1},
    [F_STAKE] = {"Time at stake", "at_stake_us", TL_COL_TIME, 0},
    [F_BYTES] = {"Memory at stake", "at_stake_bytes", TL_COL_BYTES, 0},
    [F_EVIDENCE] = {"Evidence", "evidence", TL_COL_STR, 1},
};

/* ---- the checks, in threads ------------------------------------------------------------- */

/* One check with a context of its own (its findings apart; the rest shared, read only). */
typedef struct check_item {
    void (*check)(ctx *c);
    int needs_idle; /* reads c->idle: run after tl_idle_compute_ex */
    ctx c;
} check_item;

static void *check_main(void *arg)
{
    check_item *it = *(check_item **)arg;
    it->check(&it->c);
    return NULL;
}

/* The time checks, their findings added to c in this order whatever thread found them (the
 * ranking's ties are then broken as one thread would). The checks that do not read the idle
 * statistics run in threads of their own while this one computes them and runs the others. */
static int run_checks(ctx *c)
{
    check_item it[] = {{check_gpu_idle, 0, *c},     {check_dataloader, 0, *c},
                       {check_launch_bound, 1, *c}, {check_copies, 0, *c},
                       {check_long_gaps, 1, *c},    {check_dominant, 0, *c},
                       {check_exposed_comm, 1, *c}, {check_host_comm, 0, *c}};
    enum { NCHECKS = sizeof it / sizeof it[0] };
    check_item *early[NCHECKS];
    int nearly = 0;
    int apart = tl_view_parts(c->t, c->t->nev) > 1;
    for (int k = 0; k < NCHECKS; k++) {
        it[k].c.f = NULL;
        it[k].c.nf = it[k].c.cap = 0;
        if (apart && !it[k].needs_idle)
            early[nearly++] = &it[k];
    }
    tl_runner r;
    tl_run_start(&r, check_main, early, sizeof *early, 0, nearly);
    /* no list of gaps: a stream's longest long one is all it reads (long_max) */
    int rc = tl_idle_compute_top(c->t, &c->sc, c->short_ns, 0, 0, &c->idle);
    for (int k = 0; k < NCHECKS && rc == 0; k++)
        if (!apart || it[k].needs_idle) {
            it[k].c.idle = c->idle;
            it[k].check(&it[k].c);
        }
    tl_run_wait(&r);
    for (int k = 0; k < NCHECKS; k++) {
        for (int i = 0; i < it[k].c.nf && rc == 0; i++) {
            finding *f = add(c, it[k].c.f[i].stake);
            if (f)
                *f = it[k].c.f[i];
            else
                rc = -1;
        }
        free(it[k].c.f);
    }
    return rc;
}

tl_table *tl_view_findings(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    tl_profiled_window(t, &c.w);
    c.has_device = tl_trace_has_cats(t, TL_DEVICE_WORK);
    tl_profiled_window_set(t, &c.window);
    c.short_ns = o && o->threshold_ns > 0 ? o->threshold_ns : TL_SHORT_KERNEL_NS_DEFAULT;
    tl_table *tab = tl_table_new("Findings", "findings", find_cols, F_NCOLS);
    int scope_ok = tl_gpu_scope_init(t, o, &c.sc) == 0;
    if (scope_ok && c.sc.all) { /* --window all: every finding over the whole file */
        tl_ivset none = {0};
        tl_ivset_free(&c.window);
        tl_ivset_union(&c.sc.window, &none, &c.window); /* (a copy) */
        scope_ok = !c.window.oom;
        tl_trace_span(t, &c.w.t0, &c.w.t1);
        c.w.total = c.sc.total;
        c.w.nsteps = 0; /* "of the trace", not per step */
    }
    if (!tab || !scope_ok) {
        tl_table_free(tab);
        tl_gpu_scope_free(&c.sc);
        tl_ivset_free(&c.window);
        tl_error_setc(err, TL_ERR_NOMEM, "findings: out of memory");
        return NULL;
    }

    if (run_checks(&c) != 0) {
        free(c.f);
        tl_table_free(tab);
        tl_idle_free(&c.idle);
        tl_gpu_scope_free(&c.sc);
        tl_ivset_free(&c.window);
        tl_error_setc(err, TL_ERR_NOMEM, "findings: out of memory");
        return NULL;
    }
    /* last: the memory view, in another thread, computes the replay both read meanwhile (the
     * replay and the checks above are the two longest parts of a report: 0.6 and 0.4 s for
     * 2 GB on the 16-core machine, one after the other when this took it first) */
    c.mem = t->nmem ? tl_mem_of(t) : NULL;
    if (c.mem) {
        check_mem_peak(&c);
        check_mem_fragmentation(&c);
        check_mem_leak(&c);
    }

    if (c.nf > 1)
        qsort(c.f, (size_t)c.nf, sizeof *c.f, cmp_finding);
    int max = o && o->top > 0 ? o->top : MAX_FINDINGS;
    int ntime = 0, nmem = 0, shown = 0, any_mem = 0;
    int *rank = calloc((size_t)(c.nf ? c.nf : 1), sizeof *rank); /* 0: not shown */
    for (int i = 0; i < c.nf && rank; i++) {
        if (c.f[i].memory ? nmem >= MAX_MEM_FINDINGS || nmem >= max : ntime >= max)
            continue;
        int r = tl_table_add_row(tab);
        if (r < 0)
            break;
        rank[i] = ++shown;
        c.f[i].memory ? nmem++ : ntime++;
        any_mem |= c.f[i].memory;
        tl_table_int(tab, r, F_RANK, shown);
        tl_table_str(tab, r, F_WHAT, c.f[i].what);
        if (c.f[i].memory)
            tl_table_bytes(tab, r, F_BYTES, c.f[i].stake);
        else
            tl_table_time(tab, r, F_STAKE, c.f[i].stake);
        tl_table_str(tab, r, F_EVIDENCE, c.f[i].evidence);
    }
    for (int i = 0; i < c.nf && rank; i++)
        if (rank[i])
            tl_table_note(tab, "%d. Try: %s.", rank[i], c.f[i].hint);
    free(rank);
    if (c.nf == 0)
        tl_table_note(tab, "Nothing stood out: no idle GPU, data-loading, launch, copy, gap, "
                           "dominant-operator, communication or memory problem above its "
                           "threshold.");
    else
        tl_table_note(tab,
                      "Time at stake: time the problem covers in the profiled window (%s), "
                      "an upper bound on what fixing it saves.%s Findings overlap.",
                      c.w.nsteps ? "its steps" : "the whole trace",
                      any_mem ? " Memory at stake: bytes at the peak (or kept) that fixing it "
                                "could free."
                              : "");
    free(c.f);
    tl_idle_free(&c.idle);
    tl_gpu_scope_free(&c.sc);
    tl_ivset_free(&c.window);
    return tab;
}
