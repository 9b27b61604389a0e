/*
 * view_overview.c — the Overview: how much of the profiled time each type of event covers.
 *
 * Per type the time is the length of the union of its intervals (merged within each thread or
 * stream, then across threads, streams and devices), so concurrent or nested events of one
 * type are never counted twice. Different types nest (an operator inside a forward range), so
 * their ratios need not add up to 100%. The phases — Dataloader, Forward, Backward,
 * Optimization — and "Other" (step time covered by none of them) do add up to the step time
 * when the phases do not overlap each other, which is how a training loop is normally laid out.
 * The phases are the Model view's (tl_phases_of: the outermost phase ranges, and on PyTorch's
 * traces the ranges it derives Forward and Backward from), so the two views' Other agree.
 *
 * Host times are clipped to the profiled window (the union of the steps of steps.h, or the
 * whole trace without steps): work outside the steps is outside what the ratios are taken against.
 * Device work is not clipped — a kernel usually runs after the host step that launched it has ended
 * — but only device work launched inside the window (or, when its launch is unknown, starting
 * inside the window's span) is counted.
 */
#include "analysis/insight.h"
#include "analysis/steps.h"
#include "analysis/views.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OV_NAME, OV_CALLS, OV_TIME, OV_RATIO, OV_NCOLS };

static const tl_col host_cols[OV_NCOLS] = {
    [OV_NAME] = {"Event Type", "type", TL_COL_STR, 1},
    [OV_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [OV_TIME] = {"CPU Time", "cpu_time_us", TL_COL_TIME, 0},
    [OV_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

static const tl_col dev_cols[OV_NCOLS] = {
    [OV_NAME] = {"Event Type", "type", TL_COL_STR, 1},
    [OV_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [OV_TIME] = {"GPU Time", "gpu_time_us", TL_COL_TIME, 0},
    [OV_RATIO] = {"Ratio", "ratio_pct", TL_COL_PCT, 0},
};

/* Host categories that carry time on a thread. Instants, counters, memory records and the
 * profiler's own overhead are not "event types" of the program. */
static int host_timed(tl_cat c)
{
    return !tl_cat_is_device(c) && c != TL_CAT_INSTANT && c != TL_CAT_COUNTER &&
           c != TL_CAT_MEMORY && c != TL_CAT_OVERHEAD && c != TL_CAT_OTHER;
}

/* Does the normalized set contain point x? */
static double ratio(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

typedef struct ov_acc {
    tl_ivset iv;
    int64_t calls;
} ov_acc;

/* Length of s clipped to the window set (both normalized). */
static int64_t clipped_length(const tl_ivset *s, const tl_ivset *win, int clip)
{
    if (!clip)
        return tl_ivset_length(s);
    tl_ivset tmp = {0};
    tl_ivset_intersect(s, win, &tmp);
    int64_t n = tl_ivset_length(&tmp);
    tl_ivset_free(&tmp);
    return n;
}

/* Whether a host interval [s, end) counts: with steps (clip), when it reaches into one. *hint:
 * the step the last one fell in (a track's events come in time order: most fall in it too). */
static int reaches_window(const tl_ivset *win, int clip, int64_t s, int64_t end, size_t *hint)
{
    if (!clip)
        return 1;
    size_t k = *hint;
    if (k < win->n && win->v[k].s <= s && s < win->v[k].e)
        return 1;
    *hint = k = tl_ivset_from(win, s);
    return k < win->n && win->v[k].s < end;
}

/* A host category's row: Paddle's names (CudaRuntime), the runtime named after the trace's
 * accelerator when it is not a GPU (MtiaRuntime, as Kineto's mtia_runtime). */
static const char *host_cat_name(const tl_trace *t, tl_cat c, char *buf, size_t n)
{
    const char *accel = tl_accel_name(t);
    if (c != TL_CAT_RUNTIME || !strcmp(accel, "GPU"))
        return tl_cat_name(c);
    snprintf(buf, n, "%c%sRuntime", accel[0], accel + 1);
    for (char *p = buf + 1; *p && p < buf + strlen(accel); p++)
        *p = (char)tolower((unsigned char)*p);
    return buf;
}

static void add_row(tl_table *tab, const char *name, int indent, int64_t calls, int64_t time,
                    int64_t whole)
{
    int r = tl_table_add_row(tab);
    if (r < 0)
        return;
    tl_table_str(tab, r, OV_NAME, name);
    tl_table_indent(tab, r, OV_NAME, indent);
    if (calls >= 0)
        tl_table_int(tab, r, OV_CALLS, calls);
    tl_table_time(tab, r, OV_TIME, time);
    tl_table_pct(tab, r, OV_RATIO, ratio(time, whole));
}

tl_table *tl_view_overview(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    /* The window (steps.h): the steps, or the whole span; as a set too. The GPU part follows
     * --window and --linked-only (analysis.h's GPU scope), the host part the steps. */
    tl_steps steps;
    tl_window w;
    tl_ivset win = {0};
    tl_gpu_scope sc;
    char cat_buf[48]; /* host_cat_name */
    if (tl_gpu_scope_init(t, o, &sc) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "overview: out of memory");
        return NULL;
    }
    if (tl_steps_load(t, &steps) != 0) {
        tl_gpu_scope_free(&sc);
        tl_error_setc(err, TL_ERR_NOMEM, "overview: out of memory");
        return NULL;
    }
    tl_steps_window(&steps, &w);
    tl_steps_set(&steps, &win);
    int clip = w.nsteps > 0;

    ov_acc host[TL_CAT_COUNT];
    memset(host, 0, sizeof host);
    /* device: kernel, memcpy, memset, communication kernels */
    enum { D_KERNEL, D_COMM, D_MEMCPY, D_MEMSET, D_N };
    ov_acc dev[D_N];
    memset(dev, 0, sizeof dev);
    int ndev_events = 0;

    uint8_t *comm_name =
        calloc(t->strings.count ? t->strings.count : 1, 1); /* tl_is_comm_kernel_id */
    tl_table *tab = tl_table_new("Overview", "overview", host_cols, OV_NCOLS);
    const tl_phases *ph = tl_phases_of(t); /* the Model view's, shared: not freed here */
    if (!comm_name || !tab || !ph)
        goto oom;

    size_t hint = 0; /* reaches_window's */
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        tl_cat c = (tl_cat)e->cat;
        int64_t s = e->ts, end = e->ts + e->dur;
        if (tl_cat_is_device(c)) {
            int d = c == TL_CAT_KERNEL   ? D_KERNEL
                    : c == TL_CAT_MEMCPY ? D_MEMCPY
                    : c == TL_CAT_MEMSET ? D_MEMSET
                                         : -1;
            if (d < 0)
                continue;
            if (!tl_gpu_scope_counts(t, &sc, e))
                continue;
            ndev_events++;
            tl_ivset_extend(&dev[d].iv, s, end);
            dev[d].calls++;
            if (d == D_KERNEL) { /* NCCL/RCCL/oneCCL/HCCL kernels, whatever their stream */
                if (tl_is_comm_kernel_id(t, comm_name, e->name)) {
                    tl_ivset_extend(&dev[D_COMM].iv, s, end);
                    dev[D_COMM].calls++;
                }
            }
            continue;
        }
        if (!host_timed(c) || e->dur <= 0 || c == TL_CAT_STEP || tl_phase_index(c) >= 0 ||
            !reaches_window(&win, clip, s, end, &hint))
            continue;
        tl_ivset_extend(&host[c].iv, s, end);
        host[c].calls++;
    }
    /* The phases are the Model view's (tl_phases_of): their outermost ranges, and on
     * PyTorch's traces the Forward and Backward it derives from PyTorch's own ranges */
    for (size_t q = 0; q < ph->n; q++) {
        const tl_event *e = &t->ev[ph->v[q].ev];
        tl_cat c = tl_phase_cats[ph->v[q].phase];
        if (!reaches_window(&win, clip, e->ts, e->ts + e->dur, &hint))
            continue;
        tl_ivset_extend(&host[c].iv, e->ts, e->ts + e->dur);
        host[c].calls++;
    }

    int64_t htime[TL_CAT_COUNT];
    for (int c = 0; c < TL_CAT_COUNT; c++) {
        tl_ivset_normalize(&host[c].iv);
        htime[c] = clipped_length(&host[c].iv, &win, clip);
    }

    /* ProfileStep, then the phases and Other indented under it, then every other type by time. */
    if (w.nsteps)
        add_row(tab, tl_cat_name(TL_CAT_STEP), 0, w.nsteps, w.total, w.total);
    tl_ivset phase_union = {0};
    for (int p = 0; p < TL_NPHASES; p++) { /* in the views' order (view_model.c) */
        tl_cat c = tl_phase_cats[p];
        if (!host[c].calls)
            continue;
        add_row(tab, host_cat_name(t, c, cat_buf, sizeof cat_buf), w.nsteps ? 1 : 0, host[c].calls,
                htime[c], w.total);
        tl_ivset tmp = {0};
        tl_ivset_union(&phase_union, &host[c].iv, &tmp);
        tl_ivset_free(&phase_union);
        phase_union = tmp;
    }
    int any_phase = phase_union.n > 0;
    if (w.nsteps) { /* the model view's Other: the whole step when no phase marks any of it */
        int64_t covered = clipped_length(&phase_union, &win, 1);
        add_row(tab, "Other", 1, -1, w.total - covered, w.total);
    }
    tl_ivset_free(&phase_union);
    int from = tab->nrows;
    for (int c = 0; c < TL_CAT_COUNT; c++) {
        if (c == TL_CAT_STEP || tl_phase_index((tl_cat)c) >= 0 || !host[c].calls)
            continue;
        add_row(tab, host_cat_name(t, (tl_cat)c, cat_buf, sizeof cat_buf), 0, host[c].calls,
                htime[c], w.total);
    }
    tl_table_sort(tab, OV_TIME, 1, from);
    if (w.nsteps)
        tl_table_note(tab,
                      "Time per type is the union of its intervals within the %d step(s) "
                      "(%s is the step time the ratios are taken against).",
                      w.nsteps, tl_cat_name(TL_CAT_STEP));
    else
        tl_table_note(tab, "No steps in this trace: ratios are taken against the whole trace.");
    if (any_phase && w.nsteps)
        tl_table_note(tab, "The indented phases and Other add up to the step time when the "
                           "phases do not overlap; other types nest, so ratios need not sum to "
                           "100%%.");
    else
        tl_table_note(tab, "Types nest (an operator inside a range), so ratios need not sum to "
                           "100%%.");

    if (ndev_events) {
        tl_table *g = tl_table_new("Overview (GPU)", "overview_gpu", dev_cols, OV_NCOLS);
        if (!g)
            goto oom;
        tab->next = g;
        static const char *const dnames[D_N] = {"Kernel", "Communication", "Memcpy", "Memset"};
        for (int d = 0; d < D_N; d++) {
            if (!dev[d].calls)
                continue;
            tl_ivset_normalize(&dev[d].iv);
            add_row(g, dnames[d], d == D_COMM ? 1 : 0, dev[d].calls, tl_ivset_length(&dev[d].iv),
                    sc.all ? sc.total : w.total);
        }
        if (sc.all)
            tl_table_note(g,
                          "GPU time is the union over all streams and devices of the work in "
                          "the whole file%s; ratios are against the span of the trace.",
                          sc.linked_only ? " whose launch is in it (--linked-only)" : "");
        else
            tl_table_note(g,
                          "GPU time is the union over all streams and devices of the work "
                          "launched in the window%s; ratios are against the profiled window "
                          "(host steps).",
                          sc.linked_only ? " (--linked-only: only work whose launch is in the "
                                           "file)"
                                         : "");
        if (dev[D_COMM].calls)
            tl_table_note(g, "Communication: NCCL/RCCL/oneCCL kernels, also counted in Kernel.");
    }

    for (int c = 0; c < TL_CAT_COUNT; c++)
        tl_ivset_free(&host[c].iv);
    for (int d = 0; d < D_N; d++)
        tl_ivset_free(&dev[d].iv);
    tl_ivset_free(&win);
    tl_steps_free(&steps);
    tl_gpu_scope_free(&sc);
    free(comm_name);
    return tab;
oom:
    for (int c = 0; c < TL_CAT_COUNT; c++)
        tl_ivset_free(&host[c].iv);
    for (int d = 0; d < D_N; d++)
        tl_ivset_free(&dev[d].iv);
    tl_ivset_free(&win);
    tl_steps_free(&steps);
    tl_gpu_scope_free(&sc);
    free(comm_name);
    tl_table_free(tab);
    tl_error_setc(err, TL_ERR_NOMEM, "overview: out of memory");
    return NULL;
}
