/*
 * view_distributed.c — communication against computation on one rank (one trace = one rank).
 *
 * --window and --linked-only choose the kernels and the window (analysis.h, tl_gpu_scope).
 * Communication kernels are kernels whose name says so (nccl, rccl, xccl, hccl, any case) or
 * that were launched from inside a host range of category Communication; every other kernel is
 * computation (copies and memsets are neither, as in HTA). Both are interval unions clipped to
 * the profiled window; overlap is their intersection and exposed communication is
 * communication minus computation — the time the rank waits on the network with nothing else
 * to do. Host communication ranges (Communication category, and the collectives PyTorch names
 * nccl:*, c10d::*, gloo:*, record_param_comms) are reported beside them, as Paddle's
 * Distribution Summary does, but kept apart from the GPU numbers so that overlap means what an
 * engineer expects: kernels running at the same time.
 */
#include "analysis/insight.h"

#include <stdlib.h>
#include <string.h>

int tl_is_comm_kernel_name(const char *name)
{
    return tl_has_ci(name, "nccl") || tl_has_ci(name, "rccl") || tl_has_ci(name, "xccl") ||
           tl_has_ci(name, "hccl");
}

int tl_is_host_comm_name(const char *n)
{
    return !strncmp(n, "nccl:", 5) || !strncmp(n, "c10d::", 6) || !strncmp(n, "gloo:", 5) ||
           !strcmp(n, "record_param_comms");
}

/* What a string id names, looked at once per id (a trace has millions of events and thousands
 * of names). */
enum { NAME_SEEN = 1, NAME_COMM_KERNEL = 2, NAME_HOST_COMM = 4 };

static uint8_t name_kind(const tl_trace *t, uint8_t *named, uint32_t id)
{
    if (id >= t->strings.count)
        return 0;
    if (!named[id]) {
        const char *n = tl_str(&t->strings, id);
        named[id] = NAME_SEEN | (tl_is_comm_kernel_name(n) ? NAME_COMM_KERNEL : 0) |
                    (tl_is_host_comm_name(n) ? NAME_HOST_COMM : 0);
    }
    return named[id];
}

int tl_is_host_comm_event(const tl_trace *t, uint8_t *named, const tl_event *e)
{
    if (e->cat == TL_CAT_COMMUNICATION)
        return 1;
    if (e->cat != TL_CAT_OPERATOR && e->cat != TL_CAT_USER)
        return 0;
    return (name_kind(t, named, e->name) & NAME_HOST_COMM) != 0;
}

/* Launched from inside a Communication range: walk up from the launching call. */
static int launched_in_comm(const tl_trace *t, const tl_event *k)
{
    int32_t j = k->link;
    for (int depth = 0; j != TL_NONE && depth < 256; depth++) {
        if (t->ev[j].cat == TL_CAT_COMMUNICATION)
            return 1;
        j = t->ev[j].parent;
    }
    return 0;
}

int tl_comm_compute(const tl_trace *t, tl_comm *c)
{
    tl_gpu_scope sc;
    int rc = tl_gpu_scope_init(t, NULL, &sc);
    if (rc == 0)
        rc = tl_comm_compute_ex(t, &sc, -1, c);
    tl_gpu_scope_free(&sc);
    return rc;
}

int tl_comm_compute_ex(const tl_trace *t, const tl_gpu_scope *sc, int32_t device, tl_comm *c)
{
    memset(c, 0, sizeof *c);
    c->window = sc->w;
    if (sc->all) { /* the whole file */
        tl_trace_span(t, &c->window.t0, &c->window.t1);
        c->window.total = sc->total;
    }
    tl_ivset comm = {0}, comp = {0}, host = {0}, tmp = {0};
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1); /* NAME_* per id */
    if (!named)
        return -1;
    /* Without Communication ranges no kernel is launched from one: skip the walks up. */
    int ranges = tl_trace_has_cats(t, TL_CATBIT(TL_CAT_COMMUNICATION));
    for (size_t i = 0; i < t->nev; i++) { /* kernels, and host ranges */
        const tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_KERNEL) {
            if (!tl_gpu_scope_touches(sc, e) ||
                (device >= 0 && (e->track >= t->ntracks || t->tracks[e->track].device != device)))
                continue;
            if ((name_kind(t, named, e->name) & NAME_COMM_KERNEL) ||
                (ranges && launched_in_comm(t, e))) {
                tl_ivset_extend(&comm, e->ts, e->ts + e->dur);
                c->ncomm++;
            } else {
                tl_ivset_extend(&comp, e->ts, e->ts + e->dur);
                c->ncomp++;
            }
        } else if (!tl_cat_is_device((tl_cat)e->cat) && e->dur > 0 &&
                   tl_is_host_comm_event(t, named, e)) {
            tl_ivset_extend(&host, e->ts, e->ts + e->dur);
            /* counted as the kernels are: those in the window (the time is clipped to it) */
            c->nhost += tl_gpu_scope_len(sc, e->ts, tl_add_sat(e->ts, e->dur)) > 0;
        }
    }
    free(named);
    tl_ivset_normalize(&comm);
    tl_ivset_normalize(&comp);
    tl_ivset_normalize(&host);
    tl_gpu_scope_clip(sc, &comm);
    tl_gpu_scope_clip(sc, &comp);
    tl_gpu_scope_clip(sc, &host);
    c->comm = tl_ivset_length(&comm);
    c->comp = tl_ivset_length(&comp);
    c->host_comm = tl_ivset_length(&host);
    tl_ivset_intersect(&comm, &comp, &tmp);
    c->overlap = tl_ivset_length(&tmp);
    c->exposed = c->comm - c->overlap;
    /* Zero-length kernels add nothing to a set: only a failed add is out of memory. */
    int oom = comm.oom || comp.oom || host.oom || tmp.oom;
    tl_ivset_free(&comm);
    tl_ivset_free(&comp);
    tl_ivset_free(&host);
    tl_ivset_free(&tmp);
    return oom ? -1 : 0;
}

enum { D_NAME, D_CALLS, D_TIME, D_PCT, D_NCOLS };

static const tl_col dist_cols[D_NCOLS] = {
    [D_NAME] = {"Name", "name", TL_COL_STR, 1},
    [D_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [D_TIME] = {"Time", "time_us", TL_COL_TIME, 0},
    [D_PCT] = {"Ratio (%)", "ratio_pct", TL_COL_PCT, 0},
};

static void row(tl_table *tab, const char *name, int indent, int64_t calls, int64_t ns,
                int64_t total)
{
    int r = tl_table_add_row(tab);
    if (r < 0)
        return;
    tl_table_str(tab, r, D_NAME, name);
    tl_table_indent(tab, r, D_NAME, indent);
    if (calls >= 0)
        tl_table_int(tab, r, D_CALLS, calls);
    tl_table_time(tab, r, D_TIME, ns);
    tl_table_pct(tab, r, D_PCT, total > 0 ? 100.0 * (double)ns / (double)total : 0);
}

tl_table *tl_view_distributed(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    tl_comm c;
    tl_gpu_scope sc;
    int rc = tl_gpu_scope_init(t, o, &sc);
    if (rc == 0)
        rc = tl_comm_compute_ex(t, &sc, -1, &c);
    tl_gpu_scope_free(&sc);
    if (rc != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "distributed: out of memory");
        return NULL;
    }
    char title[96];
    if (t->rank >= 0 && t->world_size > 0)
        snprintf(title, sizeof title, "Distributed (rank %d of %d)", (int)t->rank,
                 (int)t->world_size);
    else if (t->rank >= 0)
        snprintf(title, sizeof title, "Distributed (rank %d)", (int)t->rank);
    else
        snprintf(title, sizeof title, "Distributed");
    tl_table *tab = tl_table_new(title, "distributed", dist_cols, D_NCOLS);
    if (!tab) {
        tl_error_setc(err, TL_ERR_NOMEM, "distributed: out of memory");
        return NULL;
    }
    if (!c.ncomm && !c.nhost) {
        /* none in the steps: is there any outside them? (--window all shows it) */
        tl_comm whole = {0};
        tl_view_opts wo = o ? *o : (tl_view_opts){0};
        wo.window_all = 1;
        if (c.window.nsteps && !(o && o->window_all) && tl_gpu_scope_init(t, &wo, &sc) == 0) {
            if (tl_comm_compute_ex(t, &sc, -1, &whole) != 0)
                whole.ncomm = whole.nhost = 0;
            tl_gpu_scope_free(&sc);
        }
        if (whole.ncomm || whole.nhost)
            tl_table_note(tab,
                          "No communication in the steps: %lld collective kernel%s and %lld host "
                          "communication range%s lie outside them (--window all counts them).",
                          (long long)whole.ncomm, whole.ncomm == 1 ? "" : "s",
                          (long long)whole.nhost, whole.nhost == 1 ? "" : "s");
        else
            tl_table_note(tab, "No communication in this trace: no NCCL/RCCL kernels and no "
                               "communication ranges.");
        return tab;
    }
    int64_t w = c.window.total;
    int steps = c.window.nsteps && !(o && o->window_all);
    row(tab,
        steps                ? "ProfileStep"
        : o && o->window_all ? "Whole file"
                             : "Profiled window",
        0, steps ? c.window.nsteps : -1, w, w);
    char comm_row[48], comp_row[48]; /* named as the trace names its accelerator */
    snprintf(comm_row, sizeof comm_row, "Communication (%s)", tl_accel_name(t));
    snprintf(comp_row, sizeof comp_row, "Computation (%s)", tl_accel_name(t));
    row(tab, comm_row, 1, c.ncomm, c.comm, w);
    row(tab, comp_row, 1, c.ncomp, c.comp, w);
    row(tab, "Overlap", 1, -1, c.overlap, w);
    row(tab, "Exposed communication", 1, -1, c.exposed, w);
    row(tab, "Communication (host)", 1, c.nhost, c.host_comm, w);
    tl_table_note(tab, "Ratios are of the %s%s; kernel times are interval unions.",
                  o && o->window_all ? "whole file" : "profiled window",
                  steps ? " (the union of the steps)" : "");
    if (o && o->linked_only)
        tl_table_note(tab, "Only kernels whose launch call is in the file (--linked-only).");
    if (c.comm > 0)
        tl_table_note(tab,
                      "%.1f%% of GPU communication ran under computation; exposed "
                      "communication is the rest: the rank waited on the network.",
                      100.0 * (double)c.overlap / (double)c.comm);
    return tab;
}
