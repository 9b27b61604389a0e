/*
 * insight_idle.c — per-stream GPU idle time and its causes, kernel launch statistics and the
 * launch queue, in one pass over each stream's ops.
 *
 * The idle split follows HolisticTraceAnalysis' idle-time breakdown: walking a stream's ops in
 * start order, a gap before an op is "host wait" when the runtime call that launched the op
 * started after the previous op had ended (the GPU waited for the CPU to issue work), "kernel
 * wait" when the op was already launched and the gap is shorter than a threshold (the cost of
 * going from one kernel to the next), and "other" otherwise. HTA documents its threshold as
 * 30 ns but compares it with microsecond data, so what it applies is 30 us; we keep that value
 * in real units (TL_KERNEL_WAIT_NS_DEFAULT) and let the caller change it.
 *
 * The previous end is the running maximum of ends, so overlapping ops (a sampled trace, two
 * ops a reader put on one stream) never produce negative gaps, and the gaps add up exactly to
 * span − union of the ops.
 */
#include "analysis/insight.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

const char *tl_stream_role_name(tl_stream_role r)
{
    switch (r) {
    case TL_ROLE_COMPUTE:
        return "compute";
    case TL_ROLE_COMM:
        return "communication";
    default:
        return "side";
    }
}

const char *tl_wait_name(tl_wait w)
{
    switch (w) {
    case TL_WAIT_HOST:
        return "host wait";
    case TL_WAIT_KERNEL:
        return "kernel wait";
    default:
        return "other";
    }
}

int64_t tl_percentile(const int64_t *sorted, size_t n, double p)
{
    if (!n)
        return 0;
    double r = p * (double)n;
    size_t k = (size_t)r;
    if ((double)k < r)
        k++; /* ceil */
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

/* A point of the queue-length step function: +1 at a launch, -1 at the op's end. */
typedef struct qpoint {
    int64_t t;
    int d;
} qpoint;

static int cmp_qpoint(const void *pa, const void *pb)
{
    const qpoint *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->d - b->d; /* ends before launches at the same instant */
}

static int qsorted(const qpoint *q, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_qpoint(&q[i - 1], &q[i]) > 0)
            return 0;
    return 1;
}

/* Max and time-weighted mean of the in-flight count. q holds the launches at even and the ends
 * at odd positions; each half is nearly sorted already (a stream runs its ops in launch order),
 * so they are split, sorted only when they are not, and merged. */
static void queue_stats(qpoint *q, size_t nq, tl_stream_stats *st)
{
    size_t n = nq / 2;
    qpoint *tmp = tl_big_alloc(nq * sizeof *tmp);
    if (!tmp) {
        qsort(q, nq, sizeof *q, cmp_qpoint);
    } else {
        qpoint *l = tmp, *en = tmp + n;
        for (size_t i = 0; i < n; i++) {
            l[i] = q[2 * i];
            en[i] = q[2 * i + 1];
        }
        if (!qsorted(l, n))
            qsort(l, n, sizeof *l, cmp_qpoint);
        if (!qsorted(en, n))
            qsort(en, n, sizeof *en, cmp_qpoint);
        size_t i = 0, j = 0, k = 0;
        while (i < n || j < n)
            q[k++] = j == n || (i < n && cmp_qpoint(&l[i], &en[j]) <= 0) ? l[i++] : en[j++];
        free(tmp);
    }
    int64_t cur = 0, area = 0;
    for (size_t i = 0; i < nq; i++) {
        if (i)
            area = tl_add_sat(area, tl_mul_sat(cur, q[i].t - q[i - 1].t));
        cur += q[i].d;
        if (cur > st->queue_max)
            st->queue_max = cur;
    }
    int64_t span = q[nq - 1].t - q[0].t;
    st->queue_avg = span > 0 ? (double)area / (double)span : (double)st->queue_max;
}

static int cmp_gap(const void *pa, const void *pb)
{
    const tl_gap *a = pa, *b = pb;
    int64_t la = a->len, lb = b->len;
    if (la != lb)
        return la > lb ? -1 : 1;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return (a->track > b->track) - (a->track < b->track);
}

/* Length of [a, b) inside the scope's window (all of it without a scope). */
static int64_t in_window(const tl_gpu_scope *sc, int64_t a, int64_t b)
{
    return sc ? tl_gpu_scope_len(sc, a, b) : (b > a ? b - a : 0);
}

int tl_is_comm_kernel_id(const tl_trace *t, uint8_t *named, uint32_t id)
{
    if (id >= t->strings.count)
        return 0;
    if (!named[id])
        named[id] = (uint8_t)(1 + tl_is_comm_kernel_name(tl_str(&t->strings, id)));
    return named[id] == 2;
}

/* Min-heap on gap order (the "smallest" of the kept gaps at the root). */
static void sift_down(tl_gap *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cmp_gap(&h[l], &h[m]) > 0)
            m = l;
        if (r < n && cmp_gap(&h[r], &h[m]) > 0)
            m = r;
        if (m == i)
            return;
        tl_gap tmp = h[i];
        h[i] = h[m];
        h[m] = tmp;
        i = m;
    }
}

/* The k gaps of h made a heap, the shortest at the root. */
static void heap_make(tl_gap *h, size_t k)
{
    for (size_t i = k / 2; i-- > 0;)
        sift_down(h, k, i);
}

/* *g into the heap h of k gaps when it is longer than the shortest there (swapped with it). */
static void heap_offer(tl_gap *h, size_t k, tl_gap *g)
{
    if (k && cmp_gap(g, &h[0]) < 0) {
        tl_gap tmp = h[0];
        h[0] = *g;
        *g = tmp;
        sift_down(h, k, 0);
    }
}

/* Gap g of a stream whose kept gaps are x->gaps[base, x->ngaps), at most keep of them: added,
 * or in place of the shortest kept when longer (a heap of them once keep are held). 0, or -1
 * when out of memory. */
static int keep_gap(tl_idle *x, size_t base, size_t keep, tl_gap g)
{
    size_t m = x->ngaps - base;
    if (m == keep) {
        if (keep) /* none kept (findings): x->gaps may be NULL */
            heap_offer(x->gaps + base, keep, &g);
        return 0;
    }
    if (x->ngaps % 1024 == 0) {
        tl_gap *ng = realloc(x->gaps, (x->ngaps + 1024) * sizeof *ng);
        if (!ng)
            return -1;
        x->gaps = ng;
    }
    x->gaps[x->ngaps++] = g;
    if (m + 1 == keep) /* full: the shortest at the root from now on */
        heap_make(x->gaps + base, keep);
    return 0;
}

/* Analyse ops [from, to) of one stream track. */
static int stream_pass(const tl_trace *t, const tl_gpu_scope *sc, uint8_t *named, size_t from,
                       size_t to, size_t keep, tl_idle *x, tl_stream_stats *st)
{
    size_t base = x->ngaps; /* this stream's kept gaps from here */
    memset(st, 0, sizeof *st);
    st->track = t->ev[from].track;
    st->device = t->tracks[st->track].device;
    size_t nops = 0;
    for (size_t i = from; i < to; i++)
        if (tl_cat_is_device_work(t->ev[i].cat))
            nops++;
    st->delays = tl_big_alloc((nops ? nops : 1) * sizeof *st->delays);
    qpoint *q = tl_big_alloc((nops ? nops : 1) * 2 * sizeof *q);
    if (!st->delays || !q) {
        free(q);
        return -1;
    }
    size_t nq = 0;
    int64_t prev_end = INT64_MIN;
    for (size_t i = from; i < to; i++) {
        const tl_event *e = &t->ev[i];
        if (!tl_cat_is_device_work(e->cat) || (sc && !tl_gpu_scope_touches(sc, e)))
            continue;
        int64_t end = e->ts + (e->dur > 0 ? e->dur : 0);
        const tl_event *call = e->link != TL_NONE ? &t->ev[e->link] : NULL;
        if (prev_end == INT64_MIN) {
            st->first = e->ts;
        } else if (e->ts > prev_end) {
            int64_t raw = e->ts - prev_end, len = in_window(sc, prev_end, e->ts);
            tl_wait w;
            if (call && call->ts > prev_end)
                w = TL_WAIT_HOST;
            else if (raw < x->kernel_wait_ns)
                w = TL_WAIT_KERNEL; /* an op without a known launch call lands here too */
            else
                w = TL_WAIT_OTHER;
            st->wait[w] = tl_add_sat(st->wait[w], len);
            if (raw >= TL_LONG_GAP_NS && len > 0) {
                st->long_gaps++;
                st->long_time = tl_add_sat(st->long_time, len);
            } else if (w != TL_WAIT_OTHER && e->cat == TL_CAT_KERNEL) {
                st->launch_wait = tl_add_sat(st->launch_wait, len);
            }
            if (len > 0) {
                tl_gap g = {prev_end, e->ts, len, st->track, (uint8_t)w};
                if (raw >= TL_LONG_GAP_NS && len > st->long_max.len)
                    st->long_max = g;
                if (keep_gap(x, base, keep, g) != 0) {
                    free(q);
                    return -1;
                }
            }
        }
        if (prev_end == INT64_MIN || e->ts > prev_end)
            st->busy = tl_add_sat(st->busy, in_window(sc, e->ts, end));
        else if (end > prev_end)
            st->busy = tl_add_sat(st->busy, in_window(sc, prev_end, end));
        if (end > prev_end)
            prev_end = end;
        st->ops++;
        if (call) {
            int64_t launch = call->ts < e->ts ? call->ts : e->ts;
            q[nq++] = (qpoint){launch, +1};
            q[nq++] = (qpoint){end, -1};
        }
        if (e->cat != TL_CAT_KERNEL)
            continue;
        st->kernels++;
        st->kernel_time = tl_add_sat(st->kernel_time, e->dur);
        if (tl_is_comm_kernel_id(t, named, e->name))
            st->comm_time = tl_add_sat(st->comm_time, e->dur);
        else
            st->comp_time = tl_add_sat(st->comp_time, e->dur);
        if (e->dur < x->short_ns) {
            st->short_kernels++;
            st->short_time = tl_add_sat(st->short_time, e->dur);
        }
        if (call) {
            st->linked++;
            st->call_time = tl_add_sat(st->call_time, call->dur);
            int64_t d = e->ts - call->ts;
            st->delays[st->ndelays++] = d > 0 ? d : 0;
        }
    }
    if (!st->ops) {
        free(q);
        return 0;
    }
    st->last = prev_end;
    st->span = in_window(sc, st->first, st->last);

    if (nq) {
        queue_stats(q, nq, st);
    }
    free(q);
    return 0;
}

/* Communication streams first; then, per device, the computation the other streams hold. */
static void assign_roles(tl_idle *x)
{
    for (size_t i = 0; i < x->nstreams; i++) {
        tl_stream_stats *s = &x->streams[i];
        s->role = s->kernel_time > 0 &&
                          100.0 * (double)s->comm_time > TL_COMM_STREAM_PCT * (double)s->kernel_time
                      ? TL_ROLE_COMM
                      : TL_ROLE_COMPUTE;
    }
    for (size_t i = 0; i < x->nstreams; i++) {
        tl_stream_stats *s = &x->streams[i];
        if (s->role == TL_ROLE_COMM)
            continue;
        int64_t dev = 0;
        for (size_t j = 0; j < x->nstreams; j++)
            if (x->streams[j].device == s->device && x->streams[j].role != TL_ROLE_COMM)
                dev = tl_add_sat(dev, x->streams[j].comp_time);
        if (s->comp_time <= 0 || 100.0 * (double)s->comp_time < TL_SIDE_STREAM_PCT * (double)dev)
            s->role = TL_ROLE_SIDE;
    }
}

int tl_idle_compute(const tl_trace *t, int64_t short_ns, int64_t kernel_wait_ns, tl_idle *x)
{
    return tl_idle_compute_ex(t, NULL, short_ns, kernel_wait_ns, x);
}

int tl_idle_compute_ex(const tl_trace *t, const tl_gpu_scope *sc, int64_t short_ns,
                       int64_t kernel_wait_ns, tl_idle *x)
{
    return tl_idle_compute_top(t, sc, short_ns, kernel_wait_ns, TL_GAPS_ALL, x);
}

int tl_idle_compute_top(const tl_trace *t, const tl_gpu_scope *sc, int64_t short_ns,
                        int64_t kernel_wait_ns, size_t keep, tl_idle *x)
{
    memset(x, 0, sizeof *x);
    x->short_ns = short_ns > 0 ? short_ns : TL_SHORT_KERNEL_NS_DEFAULT;
    x->kernel_wait_ns = kernel_wait_ns > 0 ? kernel_wait_ns : TL_KERNEL_WAIT_NS_DEFAULT;
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1);
    if (!named)
        return -1;
    size_t cap = 0;
    for (size_t i = 0; i < t->nev;) {
        uint32_t tr = t->ev[i].track;
        size_t j = tl_trace_track_end(t, i); /* host tracks skipped without a pass */
        int has_op = 0;
        if (tr < t->ntracks && t->tracks[tr].kind == TL_TRACK_STREAM)
            for (size_t k = i; k < j && !has_op; k++)
                has_op = tl_cat_is_device_work(t->ev[k].cat);
        if (has_op) {
            if (x->nstreams == cap) {
                cap = cap ? cap * 2 : 8;
                tl_stream_stats *ns = realloc(x->streams, cap * sizeof *ns);
                if (!ns)
                    goto oom;
                x->streams = ns;
            }
            if (stream_pass(t, sc, named, i, j, keep, x, &x->streams[x->nstreams]) != 0) {
                free(x->streams[x->nstreams].delays);
                goto oom;
            }
            if (x->streams[x->nstreams].ops)
                x->nstreams++;
            else
                free(x->streams[x->nstreams].delays); /* nothing of it in the scope */
        }
        i = j;
    }
    free(named);
    assign_roles(x);
    return 0;
oom:
    free(named);
    tl_idle_free(x);
    return -1;
}

void tl_idle_top_gaps(tl_idle *x, size_t k)
{
    size_t n = x->ngaps;
    if (k == 0 || k >= n) {
        if (n > 1)
            qsort(x->gaps, n, sizeof *x->gaps, cmp_gap);
        return;
    }
    /* The first k slots become a heap of the k longest seen so far: O(n log k). */
    tl_gap *h = x->gaps;
    heap_make(h, k);
    for (size_t i = k; i < n; i++)
        heap_offer(h, k, &h[i]);
    qsort(h, k, sizeof *h, cmp_gap);
}

void tl_idle_free(tl_idle *x)
{
    for (size_t i = 0; i < x->nstreams; i++)
        free(x->streams[i].delays);
    free(x->streams);
    free(x->gaps);
    memset(x, 0, sizeof *x);
}

/* ---- host context of a gap ---------------------------------------------------------------- */

int tl_track_index_build(const tl_trace *t, tl_track_index *ix)
{
    ix->ntracks = t->ntracks;
    ix->begin = malloc(((size_t)t->ntracks + 1) * sizeof *ix->begin);
    if (!ix->begin)
        return -1;
    /* Events are sorted by track: begin[k] = first event of a track >= k, found by binary
     * search from the one before (not a pass over every event: the gaps view, findings and the
     * memory replay each build one). */
    size_t i = 0;
    for (uint32_t k = 0; k <= t->ntracks; k++) {
        size_t hi = t->nev;
        while (i < hi) {
            size_t mid = i + (hi - i) / 2;
            if (t->ev[mid].track < k)
                i = mid + 1;
            else
                hi = mid;
        }
        ix->begin[k] = i;
    }
    return 0;
}

void tl_track_index_free(tl_track_index *ix)
{
    free(ix->begin);
    ix->begin = NULL;
    ix->ntracks = 0;
}

/* Ranges a person would name as "what the program was doing". */
static int is_context_cat(int cat)
{
    switch (cat) {
    case TL_CAT_USER:
    case TL_CAT_DATALOADER:
    case TL_CAT_FORWARD:
    case TL_CAT_BACKWARD:
    case TL_CAT_OPTIMIZER:
    case TL_CAT_COMMUNICATION:
    case TL_CAT_OPERATOR:
    case TL_CAT_OPERATOR_INNER:
        return 1;
    default:
        return 0;
    }
}

static int contains(const tl_event *e, int64_t s, int64_t end)
{
    return e->dur > 0 && !(e->flags & TL_EV_INSTANT) && e->ts <= s && e->ts + e->dur >= end;
}

/* Innermost context range on the track [b, en) containing [s, end]; TL_NONE if none. */
static int32_t innermost(const tl_trace *t, size_t b, size_t en, int64_t s, int64_t end)
{
    /* last event of the track starting at or before s */
    size_t lo = b, hi = en;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ev[mid].ts <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == b)
        return TL_NONE;
    /* Walk up the parent chain of the last few events that start before s: the chain of the
     * latest one holds every enclosing range unless it is an async or counter event. */
    size_t tries = 0;
    for (size_t i = lo; i > b && tries < 16; i--, tries++) {
        int32_t j = (int32_t)(i - 1);
        int walked = 0;
        while (j != TL_NONE) {
            const tl_event *e = &t->ev[j];
            if (is_context_cat(e->cat) && !(e->flags & TL_EV_ASYNC) && contains(e, s, end))
                return j;
            if (e->parent != TL_NONE)
                walked = 1;
            j = e->parent;
        }
        if (walked)
            return TL_NONE; /* a real chain and nothing in it contains the interval */
    }
    return TL_NONE;
}

size_t tl_host_context(const tl_trace *t, const tl_track_index *ix, int64_t s, int64_t e, char *buf,
                       size_t n)
{
    if (n)
        buf[0] = 0;
    size_t need = 0; /* the whole text's length; buf holds what fits of it */
    uint32_t seen[4];
    int nseen = 0;
    for (uint32_t k = 0; k < ix->ntracks && k < t->ntracks; k++) {
        if (t->tracks[k].kind != TL_TRACK_THREAD || ix->begin[k] == ix->begin[k + 1])
            continue;
        int32_t j = innermost(t, ix->begin[k], ix->begin[k + 1], s, e);
        if (j == TL_NONE) {
            int64_t mid = s + (e - s) / 2;
            j = innermost(t, ix->begin[k], ix->begin[k + 1], mid, mid);
        }
        if (j == TL_NONE)
            continue;
        uint32_t name = t->ev[j].name;
        int dup = 0;
        for (int q = 0; q < nseen; q++)
            if (seen[q] == name)
                dup = 1;
        if (dup)
            continue;
        const char *piece = nseen == 4 ? "; ..." : tl_str(&t->strings, name);
        const char *sep = need && nseen < 4 ? "; " : "";
        if (need < n)
            snprintf(buf + need, n - need, "%s%s", sep, piece);
        need += strlen(sep) + strlen(piece);
        if (nseen == 4)
            break;
        seen[nseen++] = name;
    }
    return need;
}
