/*
 * view_gaps.c — idle time and launches: the tables behind `tally gaps`.
 *
 * Three tables, chained: per stream, the idle time inside [first op, last op] split into host
 * wait, kernel wait and other, with the launch queue (ops launched and not yet finished); the
 * largest gaps over all streams with the host ranges that were running during each; and kernel
 * launch statistics (launch delay = kernel start − start of the runtime call that launched it,
 * the share of kernels shorter than a threshold). The numbers come from insight_idle.c, which
 * findings use too.
 */
#include "analysis/insight.h"
#include "trace/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    I_DEV,
    I_STREAM,
    I_ROLE,
    I_SPAN,
    I_BUSY,
    I_IDLE,
    I_IDLE_PCT,
    I_HOST,
    I_KERNEL,
    I_OTHER,
    I_OPS,
    I_QMAX,
    I_QAVG,
    I_NCOLS
};

static const tl_col idle_cols[I_NCOLS] = {
    [I_DEV] = {"Device", "device", TL_COL_INT, 0},
    [I_STREAM] = {"Stream", "stream", TL_COL_INT, 0},
    [I_ROLE] = {"Role", "role", TL_COL_STR, 1},
    [I_SPAN] = {"Span", "span_us", TL_COL_TIME, 0},
    [I_BUSY] = {"Busy", "busy_us", TL_COL_TIME, 0},
    [I_IDLE] = {"Idle", "idle_us", TL_COL_TIME, 0},
    [I_IDLE_PCT] = {"Idle %", "idle_pct", TL_COL_PCT, 0},
    [I_HOST] = {"Host wait", "host_wait_us", TL_COL_TIME, 0},
    [I_KERNEL] = {"Kernel wait", "kernel_wait_us", TL_COL_TIME, 0},
    [I_OTHER] = {"Other", "other_wait_us", TL_COL_TIME, 0},
    [I_OPS] = {"Ops", "ops", TL_COL_INT, 0},
    [I_QMAX] = {"Queue max", "queue_max", TL_COL_INT, 0},
    [I_QAVG] = {"Queue avg", "queue_avg", TL_COL_FLOAT, 0},
};

enum { G_RANK, G_DEV, G_STREAM, G_START, G_LEN, G_CAUSE, G_HOST, G_NCOLS };

static const tl_col gap_cols[G_NCOLS] = {
    [G_RANK] = {"#", "rank", TL_COL_INT, 0},
    [G_DEV] = {"Device", "device", TL_COL_INT, 0},
    [G_STREAM] = {"Stream", "stream", TL_COL_INT, 0},
    [G_START] = {"Start", "start_us", TL_COL_TIME, 0},
    [G_LEN] = {"Length", "length_us", TL_COL_TIME, 0},
    [G_CAUSE] = {"Cause", "cause", TL_COL_STR, 1},
    [G_HOST] = {"Host was in", "host_ranges", TL_COL_STR, 1},
};

enum {
    L_SCOPE,
    L_KERNELS,
    L_LINKED,
    L_AVG,
    L_P50,
    L_P95,
    L_MAX,
    L_SHORT,
    L_SHORT_PCT,
    L_KAVG,
    L_CAVG,
    L_NCOLS
};

static const tl_col launch_cols[L_NCOLS] = {
    [L_SCOPE] = {"Stream", "scope", TL_COL_STR, 1},
    [L_KERNELS] = {"Kernels", "kernels", TL_COL_INT, 0},
    [L_LINKED] = {"Linked", "linked", TL_COL_INT, 0},
    [L_AVG] = {"Delay avg", "launch_delay_avg_us", TL_COL_TIME, 0},
    [L_P50] = {"Delay p50", "launch_delay_p50_us", TL_COL_TIME, 0},
    [L_P95] = {"Delay p95", "launch_delay_p95_us", TL_COL_TIME, 0},
    [L_MAX] = {"Delay max", "launch_delay_max_us", TL_COL_TIME, 0},
    [L_SHORT] = {"Short", "short_kernels", TL_COL_INT, 0},
    [L_SHORT_PCT] = {"Short %", "short_kernels_pct", TL_COL_PCT, 0},
    [L_KAVG] = {"Kernel avg", "kernel_avg_us", TL_COL_TIME, 0},
    [L_CAVG] = {"Launch call avg", "launch_call_avg_us", TL_COL_TIME, 0},
};

/* One row of launch statistics from the sums and the (sorted) delays of a scope. */
static void launch_row(tl_table *tab, const char *scope, const tl_stream_stats *s)
{
    int r = tl_table_add_row(tab);
    if (r < 0)
        return;
    tl_table_str(tab, r, L_SCOPE, scope);
    tl_table_int(tab, r, L_KERNELS, s->kernels);
    tl_table_int(tab, r, L_LINKED, s->linked);
    if (s->ndelays) {
        int64_t sum = 0;
        for (size_t i = 0; i < s->ndelays; i++)
            sum = tl_add_sat(sum, s->delays[i]);
        tl_table_time(tab, r, L_AVG, sum / (int64_t)s->ndelays);
        tl_table_time(tab, r, L_P50, tl_percentile(s->delays, s->ndelays, 0.50));
        tl_table_time(tab, r, L_P95, tl_percentile(s->delays, s->ndelays, 0.95));
        tl_table_time(tab, r, L_MAX, s->delays[s->ndelays - 1]);
        tl_table_time(tab, r, L_CAVG, s->call_time / s->linked);
    }
    tl_table_int(tab, r, L_SHORT, s->short_kernels);
    if (s->kernels) {
        tl_table_pct(tab, r, L_SHORT_PCT, 100.0 * (double)s->short_kernels / (double)s->kernels);
        tl_table_time(tab, r, L_KAVG, s->kernel_time / s->kernels);
    }
}

static void fmt_us(char *buf, size_t n, int64_t ns)
{
    tl_fmt_time(buf, n, ns, TL_UNIT_AUTO);
}

/* --device and --stream. */
static int picked(const tl_trace *t, const tl_view_opts *o, const tl_stream_stats *s)
{
    const tl_track *tr = &t->tracks[s->track];
    return (!o || !o->device_set || tr->device == o->device) &&
           (!o || !o->stream_set || tr->tid == o->stream);
}

/* --device and --stream name a stream or device the trace has: 1, or 0 with err saying which it
 * has (an empty table would read as "no idle time there"). */
static int asked_exists(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    if (!o || (!o->device_set && !o->stream_set))
        return 1;
    char have[256] = "";
    size_t len = 0, listed = 0;
    for (uint32_t k = 0; k < t->ntracks; k++) {
        const tl_track *tr = &t->tracks[k];
        if (tr->kind != TL_TRACK_STREAM)
            continue;
        if ((!o->device_set || tr->device == o->device) && (!o->stream_set || tr->tid == o->stream))
            return 1;
        if (listed++ < 12 && len < sizeof have)
            len += (size_t)snprintf(have + len, sizeof have - len, "%s%s %d stream %lld",
                                    len ? ", " : "", tl_accel_name(t), (int)tr->device,
                                    (long long)tr->tid);
    }
    if (listed > 12 && len < sizeof have)
        snprintf(have + len, sizeof have - len, " and %zu more", listed - 12);
    char what[96];
    if (o->device_set && o->stream_set)
        snprintf(what, sizeof what, "no stream %lld on %s %d", (long long)o->stream,
                 tl_accel_name(t), (int)o->device);
    else if (o->device_set)
        snprintf(what, sizeof what, "no %s %d", tl_accel_name(t), (int)o->device);
    else
        snprintf(what, sizeof what, "no stream %lld", (long long)o->stream);
    tl_error_setc(err, TL_ERR_USAGE, "%s: %s; %s%s", t->path ? t->path : "the trace", what,
                  listed ? "its streams: " : "it has no device streams", have);
    return 0;
}

tl_table *tl_view_gaps_ex(const tl_trace *t, const tl_view_opts *o, int64_t kernel_wait_ns,
                          tl_error *err)
{
    if (!asked_exists(t, o, err))
        return NULL;
    tl_idle x;
    tl_track_index ix = {0};
    tl_table *idle = NULL, *gaps = NULL, *launch = NULL;
    tl_gpu_scope sc;
    memset(&x, 0, sizeof x);
    int scope_ok = tl_gpu_scope_init(t, o, &sc) == 0;
    int top = o && o->top > 0 ? o->top : 10; /* the gaps listed: each stream's longest kept */
    if (!scope_ok ||
        tl_idle_compute_top(t, &sc, o ? o->threshold_ns : 0, kernel_wait_ns, (size_t)top, &x) != 0)
        goto oom;
    idle = tl_table_new("GPU Idle Time", "gpu_idle", idle_cols, I_NCOLS);
    gaps = tl_table_new("Largest GPU Gaps", "gpu_gaps", gap_cols, G_NCOLS);
    launch = tl_table_new("Kernel Launches", "kernel_launches", launch_cols, L_NCOLS);
    if (!idle || !gaps || !launch)
        goto oom;
    idle->next = gaps;
    gaps->next = launch;

    char kw[32], sh[32];
    fmt_us(kw, sizeof kw, x.kernel_wait_ns);
    fmt_us(sh, sizeof sh, x.short_ns);
    /* the streams asked for (--device, --stream): the others leave the analysis here */
    size_t keep = 0, ncompute = 0;
    for (size_t i = 0; i < x.nstreams; i++) {
        if (!picked(t, o, &x.streams[i])) {
            free(x.streams[i].delays);
            continue;
        }
        ncompute += x.streams[i].role == TL_ROLE_COMPUTE;
        x.streams[keep++] = x.streams[i];
    }
    x.nstreams = keep;
    if (!x.nstreams) {
        const char *why = o && (o->device_set || o->stream_set)
                              ? "No device ops on the device or stream asked for"
                              : "No device events in this trace: nothing ran on a GPU";
        tl_table_note(idle, "%s (window: %s%s).", why, tl_gpu_scope_name(&sc),
                      sc.linked_only ? ", linked ops only" : "");
        tl_table_note(gaps, "%s.", why);
        tl_table_note(launch, "%s.", why);
        tl_idle_free(&x);
        tl_gpu_scope_free(&sc);
        return idle;
    }
    /* The gaps listed: those of the stream asked for, else of the compute streams (the idle
     * time of a communication or side stream is no problem of its own), else of every stream. */
    int list_all = (o && o->stream_set) || !ncompute;
    size_t ng = 0;
    for (size_t i = 0; i < x.ngaps; i++) {
        for (size_t k = 0; k < x.nstreams; k++) {
            if (x.streams[k].track != x.gaps[i].track)
                continue;
            if (list_all || x.streams[k].role == TL_ROLE_COMPUTE)
                x.gaps[ng++] = x.gaps[i];
            break;
        }
    }
    x.ngaps = ng;

    /* per stream idle time */
    tl_stream_stats all = {0};
    size_t ndelays = 0;
    for (size_t i = 0; i < x.nstreams; i++)
        ndelays += x.streams[i].ndelays;
    all.delays = tl_big_alloc(ndelays * sizeof *all.delays);
    if (!all.delays)
        goto oom;
    for (size_t i = 0; i < x.nstreams; i++) {
        tl_stream_stats *s = &x.streams[i];
        const tl_track *tr = &t->tracks[s->track];
        if (x.nstreams > 1) /* their own rows in the launch table */
            tl_sort_i64(s->delays, s->ndelays);
        int r = tl_table_add_row(idle);
        if (r < 0)
            goto oom;
        int64_t span = s->span;
        int64_t idle_ns = s->wait[0] + s->wait[1] + s->wait[2];
        tl_table_int(idle, r, I_DEV, tr->device);
        tl_table_int(idle, r, I_STREAM, tr->tid);
        tl_table_str(idle, r, I_ROLE, tl_stream_role_name((tl_stream_role)s->role));
        tl_table_time(idle, r, I_SPAN, span);
        tl_table_time(idle, r, I_BUSY, s->busy);
        tl_table_time(idle, r, I_IDLE, idle_ns);
        tl_table_pct(idle, r, I_IDLE_PCT, span > 0 ? 100.0 * (double)idle_ns / (double)span : 0);
        tl_table_time(idle, r, I_HOST, s->wait[TL_WAIT_HOST]);
        tl_table_time(idle, r, I_KERNEL, s->wait[TL_WAIT_KERNEL]);
        tl_table_time(idle, r, I_OTHER, s->wait[TL_WAIT_OTHER]);
        tl_table_int(idle, r, I_OPS, s->ops);
        tl_table_int(idle, r, I_QMAX, s->queue_max);
        tl_table_float(idle, r, I_QAVG, s->queue_avg);

        all.kernels += s->kernels;
        all.linked += s->linked;
        all.short_kernels += s->short_kernels;
        all.short_time = tl_add_sat(all.short_time, s->short_time);
        all.kernel_time = tl_add_sat(all.kernel_time, s->kernel_time);
        all.call_time = tl_add_sat(all.call_time, s->call_time);
        memcpy(all.delays + all.ndelays, s->delays, s->ndelays * sizeof *s->delays);
        all.ndelays += s->ndelays;
    }
    tl_view_opts so = o ? *o : (tl_view_opts){0};
    so.top = 0;
    if (tl_view_sort(idle, &so, "idle_us", 0, err) != 0) {
        free(all.delays);
        goto fail;
    }
    tl_table_note(idle,
                  "Idle = time inside [first op, last op] of the stream with no kernel, copy or "
                  "memset running, within %s%s.",
                  tl_gpu_scope_name(&sc), sc.linked_only ? " (linked ops only)" : "");
    tl_table_note(idle,
                  "Role: communication = most kernel time in collectives; side = under %.0f%% of "
                  "the device's computation; compute = the rest.",
                  TL_SIDE_STREAM_PCT);
    tl_table_note(idle,
                  "Host wait: the op's launch call started after the previous op ended. Kernel "
                  "wait: launched in time, gap < %s. Other: the rest.",
                  kw);
    tl_table_note(idle, "Queue: ops launched and not yet finished (max, time-weighted avg).");

    /* largest gaps */
    tl_idle_top_gaps(&x, (size_t)top);
    if (tl_track_index_build(t, &ix) != 0) {
        free(all.delays);
        goto oom;
    }
    int64_t t0, t1;
    tl_trace_span(t, &t0, &t1);
    for (size_t i = 0; i < x.ngaps && (int)i < top; i++) {
        const tl_gap *g = &x.gaps[i];
        const tl_track *tr = &t->tracks[g->track];
        int r = tl_table_add_row(gaps);
        if (r < 0) {
            free(all.delays);
            goto oom;
        }
        /* the names whole (--wide prints them so): on the heap when they do not fit here */
        char small[512], *ctx = small;
        size_t need = tl_host_context(t, &ix, g->s, g->e, small, sizeof small);
        if (need >= sizeof small && (ctx = malloc(need + 1)) != NULL)
            tl_host_context(t, &ix, g->s, g->e, ctx, need + 1);
        else if (need >= sizeof small)
            ctx = small; /* (no memory: the names cut) */
        tl_table_int(gaps, r, G_RANK, (int64_t)i + 1);
        tl_table_int(gaps, r, G_DEV, tr->device);
        tl_table_int(gaps, r, G_STREAM, tr->tid);
        tl_table_time(gaps, r, G_START, g->s - t0);
        tl_table_time(gaps, r, G_LEN, g->len);
        tl_table_str(gaps, r, G_CAUSE, tl_wait_name((tl_wait)g->cause));
        if (ctx[0])
            tl_table_str(gaps, r, G_HOST, ctx);
        if (ctx != small)
            free(ctx);
    }
    tl_table_note(gaps, "Start is from the start of the trace. Host was in: the innermost range on "
                        "each thread that spans the gap (or its middle).");
    tl_table_note(gaps, "Gaps of %s%s.",
                  o && o->stream_set ? "the stream asked for"
                  : ncompute         ? "the compute streams (--stream S lists another)"
                                     : "every stream (none is a compute stream)",
                  sc.all ? "" : "; length = the part inside the window");
    if (x.ngaps == 0)
        tl_table_note(gaps, "No gaps: every stream ran its ops back to back.");

    /* launch statistics */
    size_t unsorted = 0;
    for (size_t i = 1; i < all.ndelays && !unsorted; i++)
        unsorted = all.delays[i] < all.delays[i - 1];
    if (unsorted)
        tl_sort_i64(all.delays, all.ndelays);
    char scope[64];
    const tl_track *one = &t->tracks[x.streams[0].track];
    if (x.nstreams == 1 && o && (o->stream_set || o->device_set)) /* the one asked for */
        snprintf(scope, sizeof scope, "dev %d stream %lld", (int)one->device, (long long)one->tid);
    else if (o && o->device_set)
        snprintf(scope, sizeof scope, "dev %d", (int)o->device);
    else
        snprintf(scope, sizeof scope, "all");
    launch_row(launch, scope, &all);
    free(all.delays);
    if (x.nstreams > 1) {
        for (size_t i = 0; i < x.nstreams; i++) {
            const tl_stream_stats *s = &x.streams[i];
            if (!s->kernels)
                continue;
            const tl_track *tr = &t->tracks[s->track];
            snprintf(scope, sizeof scope, "dev %d stream %lld", (int)tr->device,
                     (long long)tr->tid);
            launch_row(launch, scope, s);
        }
    }
    tl_table_note(launch,
                  "Delay = kernel start - start of the runtime call that launched it (linked "
                  "kernels only). Short = kernels shorter than %s.",
                  sh);
    tl_track_index_free(&ix);
    tl_idle_free(&x);
    tl_gpu_scope_free(&sc);
    return idle;

oom:
    tl_error_setc(err, TL_ERR_NOMEM, "gaps: out of memory");
fail:
    tl_track_index_free(&ix);
    tl_idle_free(&x);
    tl_gpu_scope_free(&sc);
    if (idle && idle->next) {
        tl_table_free(idle); /* frees the chain */
    } else {
        tl_table_free(idle);
        tl_table_free(gaps);
        tl_table_free(launch);
    }
    return NULL;
}

tl_table *tl_view_gaps(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    return tl_view_gaps_ex(t, o, 0, err);
}
