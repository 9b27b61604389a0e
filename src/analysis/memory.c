/*
 * memory.c — the replay of a trace's memory table (memory.h has the definitions).
 *
 * Three passes over t->mem, each linear after one sort:
 *   1. owners: records grouped by (thread, time), each thread's spans walked once with a stack
 *      of the spans open at the record's time; the per-operator sums are added there, self to
 *      the owner and total to every operator on the stack under it;
 *   2. the replay in time order: levels, peaks, the series, blocks by (device, address);
 *   3. per device: what is alive at the peak, the levels at step ends and the leak verdict.
 */
#include "analysis/memory.h"
#include "analysis/attrib.h"
#include "analysis/insight.h"
#include "trace/checked.h"
#include "trace/grow_array.h"
#include "trace/natsort.h"
#include "trace/u64map.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ----------------------------------------------------------------------- */
/* Sums and differences of sizes saturate (tl_add_sat, tl_sub_sat: trace/checked.h): sizes come
 * from files, where a JSON "Bytes" of -1e300 reads as INT64_MIN. */

void tl_mem_device_name(int32_t device, char *buf, size_t n)
{
    if (device < 0)
        snprintf(buf, n, "CPU");
    else
        snprintf(buf, n, "GPU%d", (int)device);
}

const tl_mem_device *tl_mem_device_of(const tl_mem *m, int32_t device)
{
    for (size_t i = 0; i < m->ndev; i++)
        if (m->dev[i].device == device)
            return &m->dev[i];
    return NULL;
}

/* A record that changes what is allocated (not a label, not a reservation, not the live set). */
static int is_change(const tl_memev *r)
{
    return !(r->flags & (TL_MEM_LABEL | TL_MEM_RESERVE | TL_MEM_LIVE)) && r->bytes != 0;
}

static int device_index(tl_mem *m, int32_t device)
{
    for (size_t i = 0; i < m->ndev; i++)
        if (m->dev[i].device == device)
            return (int)i;
    size_t cap = m->ndev;
    if (tl_grow_array(&m->dev, &cap, m->ndev + 1, sizeof *m->dev) != 0)
        return -1;
    tl_mem_device *d = &m->dev[m->ndev];
    memset(d, 0, sizeof *d);
    d->device = device;
    d->alloc_start = d->alloc_end = d->res_start = d->res_end = -1;
    d->peak = d->peak_res = d->res_at_peak = -1;
    d->peak_step = -1;
    d->leak_first = d->leak_last = -1;
    return (int)m->ndev++;
}

/* ---- steps --------------------------------------------------------------------------------- */

static int cmp_step(const void *a, const void *b)
{
    const tl_mem_step *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int collect_steps(const tl_trace *t, tl_mem *m)
{
    size_t cap = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_STEP)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_STEP || e->dur <= 0 || t->tracks[e->track].kind != TL_TRACK_THREAD)
            continue;
        if (tl_grow_array(&m->steps, &cap, m->nsteps + 1, sizeof *m->steps) != 0)
            return -1;
        m->steps[m->nsteps++] = (tl_mem_step){e->ts, e->ts + e->dur, e->value};
    }
    if (m->nsteps > 1)
        qsort(m->steps, m->nsteps, sizeof *m->steps, cmp_step);
    return 0;
}

/* The step holding time x, or -1. Steps do not overlap (one thread closes each before the
 * next); where they do, the later one wins. */
static int32_t step_at(const tl_mem *m, int64_t x)
{
    size_t lo = 0, hi = m->nsteps;
    while (lo < hi) { /* first step starting after x */
        size_t mid = lo + (hi - lo) / 2;
        if (m->steps[mid].ts <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || x >= m->steps[lo - 1].end)
        return -1;
    return (int32_t)(lo - 1);
}

/* ---- 1. owners ------------------------------------------------------------------------------ */

/* Spans that nest on a host thread and may hold a memory record (or, taking no time, count as
 * calls and tree nodes all the same). */
static int is_span(const tl_event *e)
{
    if (e->dur < 0 || (e->flags & TL_EV_INSTANT))
        return 0;
    return ((TL_OWNER_ANY_SPAN | TL_CATBIT(TL_CAT_PYTHON)) >> e->cat) & 1;
}

/* Nodes of TensorBoard's operator tree: operators, Python frames, steps, optimizer and
 * data-loading spans (user annotations are not nodes: they are seen through). */
static int is_node(const tl_event *e)
{
    return e->cat == TL_CAT_OPERATOR || e->cat == TL_CAT_PYTHON || e->cat == TL_CAT_STEP ||
           e->cat == TL_CAT_OPTIMIZER || e->cat == TL_CAT_DATALOADER;
}

/* Which spans own records, and which add to totals, in the trace's mode: in operators mode the
 * operators but TensorBoard's (D)DP forward wrappers and optimizer steps, whose names are
 * looked at once (not_owner, per string id, made before the threads that read it); else every
 * span but a step. */
typedef struct owning {
    const tl_trace *t;
    int ops_mode;
    uint8_t *not_owner; /* operators mode: per string id */
} owning;

static int owning_init(owning *o, const tl_trace *t, int ops_mode)
{
    o->t = t;
    o->ops_mode = ops_mode;
    o->not_owner = NULL;
    if (!ops_mode)
        return 0;
    o->not_owner = calloc(t->strings.count ? t->strings.count : 1, 1);
    if (!o->not_owner)
        return -1;
    for (uint32_t id = 1; id < t->strings.count; id++) {
        const char *n = tl_str(&t->strings, id);
        o->not_owner[id] = !strcmp(n, "DataParallel.forward") ||
                           !strcmp(n, "DistributedDataParallel.forward") ||
                           !strncmp(n, "Optimizer.", 10);
    }
    return 0;
}

static int owns(const owning *o, const tl_event *e)
{
    if (!o->ops_mode)
        return e->cat != TL_CAT_STEP;
    return e->cat == TL_CAT_OPERATOR && !(e->name < o->t->strings.count && o->not_owner[e->name]);
}

/* The node a span hangs from in TensorBoard's tree: the nearest enclosing node (spans that are
 * not nodes are seen through); TL_NONE at the root. */
static int32_t node_parent(const tl_trace *t, int32_t i)
{
    int32_t p = t->ev[i].parent;
    while (p != TL_NONE && !is_node(&t->ev[p]))
        p = t->ev[p].parent;
    return p;
}

/* TensorBoard (like torch.autograd.profiler's _remove_dup_nodes) merges an operator into its
 * parent when it is the parent's only child and has the parent's name (aten::sum calling
 * aten::sum): one call, its records the parent's own. In operators mode the merged operators are
 * marked (1) in *merged, an array of t->nev bytes (else NULL); the calls of each name (the spans
 * that could own records, on host threads, merged ones not counted) go to *calls, per string
 * id. -1 when out of memory. */
static int merged_and_calls(const owning *o, uint8_t **merged, uint32_t **calls)
{
    const tl_trace *t = o->t;
    uint8_t *nchild = NULL; /* a node's children, up to 2 (only "one child" is asked) */
    *merged = NULL;
    *calls = calloc(t->strings.count ? t->strings.count : 1, sizeof **calls);
    if (!*calls)
        return -1;
    if (o->ops_mode) {
        *merged = tl_big_calloc(t->nev ? t->nev : 1, 1);
        nchild = tl_big_calloc(t->nev ? t->nev : 1, sizeof *nchild);
        if (!*merged || !nchild) {
            free(nchild);
            return -1;
        }
        for (size_t i = 0; i < t->nev; i++) {
            if (!is_node(&t->ev[i]) || !is_span(&t->ev[i]))
                continue;
            int32_t p = node_parent(t, (int32_t)i);
            if (p != TL_NONE && nchild[p] < 2)
                nchild[p]++;
        }
    }
    /* parents sort before their children: a parent's own merge is known when its child comes */
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (!is_span(e))
            continue;
        if (nchild && e->cat == TL_CAT_OPERATOR) {
            int32_t p = node_parent(t, (int32_t)i);
            if (p != TL_NONE && t->ev[p].cat == TL_CAT_OPERATOR && t->ev[p].name == e->name &&
                nchild[p] == 1)
                (*merged)[i] = 1;
        }
        if (owns(o, e) && !(*merged && (*merged)[i]) &&
            t->tracks[e->track].kind == TL_TRACK_THREAD && e->name < t->strings.count)
            (*calls)[e->name]++;
    }
    free(nchild);
    return 0;
}

typedef struct where {
    int64_t ts;
    uint32_t track;
    uint32_t i; /* position in t->mem (a trace of more records fails as out of memory) */
} where;

/* By thread, then time, then position: a total order. */
#define WHERE_BEFORE(x, y, ctx)                                                                    \
    ((void)(ctx), (x)->track != (y)->track ? (x)->track < (y)->track                               \
                  : (x)->ts != (y)->ts     ? (x)->ts < (y)->ts                                     \
                                           : (x)->i < (y)->i)
TL_NATURAL_MERGE_SORT(where_natsort, where, void *, WHERE_BEFORE)

/* The n places of w in WHERE_BEFORE's order: by thread with a stable counting sort (the records
 * come in time order, so each thread's are then nearly in order), then a natural merge sort,
 * which finds them so. Returns w or tmp (n places), whichever holds the result; NULL when out of
 * memory. (qsort, a comparison by callback for every step, was with the walk the largest part
 * of finding the owners.) */
static where *sort_places(const tl_trace *t, where *w, where *tmp, size_t n)
{
    size_t *at = calloc((size_t)t->ntracks + 1, sizeof *at);
    if (!at)
        return NULL;
    for (size_t k = 0; k < n; k++)
        at[w[k].track + 1]++;
    for (size_t tr = 0; tr < t->ntracks; tr++)
        at[tr + 1] += at[tr];
    for (size_t k = 0; k < n; k++)
        tmp[at[w[k].track]++] = w[k];
    free(at);
    return where_natsort(tmp, w, n, NULL);
}

/* Rows of the operators table in the order made, found by (device, name). */
typedef struct oplist {
    tl_mem_op *ops;
    size_t n, cap;
    tl_keymap index; /* (device + 1, name) -> ops */
} oplist;

static tl_mem_op *op_row(oplist *l, int32_t device, uint32_t name)
{
    uint64_t key = tl_key2((uint32_t)(device + 1), name);
    int32_t k = tl_keymap_get(&l->index, key);
    if (k >= 0)
        return &l->ops[k];
    if (tl_grow_array(&l->ops, &l->cap, l->n + 1, sizeof *l->ops) != 0 ||
        tl_keymap_put(&l->index, key, (int32_t)l->n) != 0)
        return NULL;
    tl_mem_op *o = &l->ops[l->n++];
    memset(o, 0, sizeof *o);
    o->device = device;
    o->name = name;
    return o;
}

static void add_to(tl_mem_op *o, const tl_memev *r, int self)
{
    int64_t b = r->bytes;
    if (self) {
        if (b > 0) {
            o->self_allocs++;
            o->self_alloc_bytes = tl_add_sat(o->self_alloc_bytes, b);
        } else {
            o->self_freed_bytes = tl_sub_sat(o->self_freed_bytes, b);
        }
    }
    if (b > 0) {
        o->allocs++;
        o->alloc_bytes = tl_add_sat(o->alloc_bytes, b);
    } else {
        o->freed_bytes = tl_sub_sat(o->freed_bytes, b);
    }
}

/* The thread and time of each record: its own, or for CUPTI's records (on a stream) those of
 * the API call with its correlation id. Records with no thread (their call is not in the trace)
 * are owned by nothing: counted in *unowned, as memory.h defines it. */
static int places(const tl_trace *t, where *w, size_t *nw, uint64_t *unowned)
{
    if (t->nmem > UINT32_MAX)
        return -1;
    tl_keymap api = {0};
    int any_corr = 0;
    for (size_t i = 0; i < t->nmem; i++)
        any_corr |= t->mem[i].corr != 0;
    if (any_corr) {
        tl_cat_walk cw;
        for (size_t i =
                 tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_RUNTIME) | TL_CATBIT(TL_CAT_DRIVER));
             i < t->nev; i = tl_cat_walk_step(&cw, i)) {
            const tl_event *e = &t->ev[i];
            if ((e->cat == TL_CAT_RUNTIME || e->cat == TL_CAT_DRIVER) && e->corr > 0 &&
                tl_keymap_put(&api, (uint64_t)e->corr, (int32_t)i) != 0) {
                tl_keymap_free(&api);
                return -1;
            }
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < t->nmem; i++) {
        const tl_memev *r = &t->mem[i];
        if (!is_change(r))
            continue;
        where x = {r->ts, r->track, (uint32_t)i};
        if (r->corr) {
            int32_t k = tl_keymap_get(&api, r->corr);
            if (k < 0) {
                ++*unowned; /* its call is not in the trace: no owner */
                continue;
            }
            x.track = t->ev[k].track;
            x.ts = t->ev[k].ts;
        }
        if (x.track >= t->ntracks || t->tracks[x.track].kind != TL_TRACK_THREAD) {
            ++*unowned;
            continue;
        }
        w[n++] = x;
    }
    tl_keymap_free(&api);
    *nw = n;
    return 0;
}

/* What the walk needs besides the records' places, found by a thread of its own meanwhile. */
typedef struct spans_job {
    const owning *o;
    uint8_t *merged;
    uint32_t *calls;
    int rc;
} spans_job;

static void *spans_main(void *arg)
{
    spans_job *j = arg;
    j->rc = merged_and_calls(j->o, &j->merged, &j->calls);
    return NULL;
}

/* The walk of the records of some whole threads (w[lo, hi), in WHERE_BEFORE's order) along
 * each thread's spans: each record's owner (owner[i], apart for each record) and the operators
 * table's sums, in a list of the part's own. */
typedef struct walk_part {
    const owning *o;
    const uint8_t *merged;
    const where *w;
    size_t lo, hi;
    const tl_track_index *ix;
    int32_t *owner;
    oplist ops;
    uint64_t unowned;
    int rc;
} walk_part;

static void *walk_main(void *arg)
{
    walk_part *P = arg;
    const tl_trace *t = P->o->t;
    const where *w = P->w;
    const uint8_t *merged = P->merged;
    int ops_mode = P->o->ops_mode;
    int32_t *stack = NULL;
    size_t cap_stack = 0, depth = 0;
    uint32_t track = UINT32_MAX;
    size_t j = 0, end = 0;
    P->rc = 0;
    for (size_t k = P->lo; k < P->hi && P->rc == 0; k++) {
        if (w[k].track != track) {
            track = w[k].track;
            j = P->ix->begin[track];
            end = P->ix->begin[track + 1];
            depth = 0;
        }
        int64_t ts = w[k].ts;
        for (; j < end && t->ev[j].ts <= ts; j++) {
            const tl_event *e = &t->ev[j];
            if (!is_span(e) || (merged && merged[j]))
                continue;
            while (depth && t->ev[stack[depth - 1]].ts + t->ev[stack[depth - 1]].dur <= e->ts)
                depth--;
            if (tl_grow_array(&stack, &cap_stack, depth + 1, sizeof *stack) != 0) {
                P->rc = -1;
                break;
            }
            stack[depth++] = (int32_t)j;
        }
        while (depth && t->ev[stack[depth - 1]].ts + t->ev[stack[depth - 1]].dur <= ts)
            depth--;
        /* the owner: the innermost node (operators mode) or span (ranges mode) */
        /* spans that do not hold ts can stay under one that overlaps their end (a Python frame
         * recorded a little late): skipped here */
        size_t at = depth;
        while (at > 0) {
            const tl_event *e = &t->ev[stack[at - 1]];
            if (e->ts + e->dur > ts && (ops_mode ? is_node(e) : e->cat != TL_CAT_STEP))
                break;
            at--;
        }
        if (!at || !owns(P->o, &t->ev[stack[at - 1]])) {
            P->unowned++;
            continue;
        }
        const tl_memev *r = &t->mem[w[k].i];
        P->owner[w[k].i] = stack[at - 1];
        for (size_t q = at; q > 0 && P->rc == 0; q--) {
            const tl_event *e = &t->ev[stack[q - 1]];
            if (e->ts + e->dur <= ts || !owns(P->o, e))
                continue;
            tl_mem_op *op = op_row(&P->ops, r->device, e->name);
            if (!op)
                P->rc = -1;
            else
                add_to(op, r, q == at);
        }
    }
    free(stack);
    return NULL;
}

/* A part's rows into the table's, in the part's order (rows new to the table go at its end, as
 * one walk of every thread in turn makes them; the sums only add terms that are never
 * negative, so their order cannot change a saturated one). */
static int ops_join(oplist *to, const oplist *from)
{
    for (size_t i = 0; i < from->n; i++) {
        const tl_mem_op *f = &from->ops[i];
        tl_mem_op *o = op_row(to, f->device, f->name);
        if (!o)
            return -1;
        o->allocs += f->allocs;
        o->self_allocs += f->self_allocs;
        o->alloc_bytes = tl_add_sat(o->alloc_bytes, f->alloc_bytes);
        o->self_alloc_bytes = tl_add_sat(o->self_alloc_bytes, f->self_alloc_bytes);
        o->freed_bytes = tl_add_sat(o->freed_bytes, f->freed_bytes);
        o->self_freed_bytes = tl_add_sat(o->self_freed_bytes, f->self_freed_bytes);
    }
    return 0;
}

#define WALK_PART_MIN 16384 /* records: a thread's fewer are walked with the next thread's */

static int attribute(const tl_trace *t, tl_mem *m, int32_t *owner, int threads)
{
    owning own;
    if (owning_init(&own, t, m->ops_mode) != 0)
        return -1;
    spans_job sj = {&own, NULL, NULL, 0};
    tl_runner sr;
    tl_run_apart(&sr, spans_main, &sj, threads > 1);
    where *w0 = tl_big_alloc((t->nmem ? t->nmem : 1) * sizeof *w0), *w = NULL;
    where *w1 = tl_big_alloc((t->nmem ? t->nmem : 1) * sizeof *w1);
    size_t nw = 0;
    tl_track_index ix = {0};
    int placed = w0 && w1 && places(t, w0, &nw, &m->unowned) == 0 &&
                 (w = sort_places(t, w0, w1, nw)) && tl_track_index_build(t, &ix) == 0;
    tl_run_wait(&sr);
    /* the walk in parts of whole threads (a thread's stack of spans is its own), each part
     * by a thread of its own */
    walk_part parts[16];
    int np = 0, rc = placed && sj.rc == 0 ? 0 : -1;
    for (size_t k = 0; rc == 0 && k < nw;) {
        size_t e = k;
        do { /* whole threads, until the part holds enough records or the parts run out */
            uint32_t tr = w[e].track;
            while (e < nw && w[e].track == tr)
                e++;
        } while (e < nw && (e - k < WALK_PART_MIN || np + 1 >= threads || np + 1 >= 16));
        parts[np++] = (walk_part){&own, sj.merged, w, k, e, &ix, owner, {0}, 0, 0};
        k = e;
    }
    tl_runner wr;
    tl_run_start(&wr, walk_main, parts, sizeof *parts, 1, np);
    if (np)
        walk_main(&parts[0]);
    tl_run_wait(&wr);
    oplist all = {0};
    for (int p = 0; p < np; p++) {
        if (rc == 0 && (parts[p].rc != 0 || ops_join(&all, &parts[p].ops) != 0))
            rc = -1;
        m->unowned += parts[p].unowned;
        free(parts[p].ops.ops);
        tl_keymap_free(&parts[p].ops.index);
    }
    for (size_t i = 0; rc == 0 && i < all.n; i++)
        all.ops[i].calls = all.ops[i].name < t->strings.count ? sj.calls[all.ops[i].name] : 0;
    m->ops = all.ops;
    m->nops = rc == 0 ? all.n : 0;
    tl_keymap_free(&all.index);
    free(w0);
    free(w1);
    tl_track_index_free(&ix);
    free(sj.merged);
    free(sj.calls);
    free(own.not_owner);
    return rc;
}

/* ---- 2. the replay -------------------------------------------------------------------------- */

/* replay's owner argument while another thread still finds the owners: a block made by an
 * allocation is marked OWNER_LATER, and given owner[pos] once they are found */
static const int32_t owners_later_;
#define OWNERS_LATER (&owners_later_)
#define OWNER_LATER  (-2)

/* Live map values: a block index, or with FREED set the position of the last free there. */
#define FREED (UINT64_C(1) << 63)

typedef struct devstate {
    tl_u64map live; /* address -> block (or FREED | position) */
    int64_t level, res;
    int started, any_total;
    size_t cap_series;
} devstate;

static int new_block(tl_mem *m, size_t *cap, const tl_memev *r, size_t pos, const int32_t *owner,
                     const tl_mem *steps)
{
    if (tl_grow_array(&m->blocks, cap, m->nblocks + 1, sizeof *m->blocks) != 0)
        return -1;
    tl_mem_block *b = &m->blocks[m->nblocks++];
    memset(b, 0, sizeof *b);
    b->ts = r->ts;
    b->free_ts = TL_MEM_NEVER;
    b->bytes = r->bytes;
    b->addr = r->addr;
    b->pos = pos;
    b->free_pos = SIZE_MAX;
    b->device = r->device;
    b->owner = owner == OWNERS_LATER ? OWNER_LATER : owner ? owner[pos] : TL_NONE;
    b->step = step_at(steps, r->ts);
    b->name = r->name;
    b->category = r->category < TL_MEM_CAT_COUNT ? r->category : TL_MEM_OTHER;
    b->live_at_start = (r->flags & TL_MEM_LIVE) != 0;
    return 0;
}

static void end_block(tl_mem_block *b, const tl_memev *r, size_t pos)
{
    b->free_ts = r->ts;
    b->free_pos = pos;
}

static int replay(const tl_trace *t, tl_mem *m, const int32_t *owner)
{
    devstate *ds = NULL;
    size_t nds = 0, cap_blocks = 0;
    int rc = 0;
    for (size_t i = 0; i < t->nmem && rc == 0; i++) {
        const tl_memev *r = &t->mem[i];
        int k = device_index(m, r->device);
        if (k < 0)
            break;
        if ((size_t)k >= nds) {
            size_t cap = nds;
            if (tl_grow_array(&ds, &cap, (size_t)k + 1, sizeof *ds) != 0) {
                rc = -1;
                break;
            }
            memset(&ds[nds], 0, ((size_t)k + 1 - nds) * sizeof *ds);
            nds = (size_t)k + 1;
        }
        devstate *s = &ds[k];
        tl_mem_device *d = &m->dev[k];
        uint64_t *slot = r->addr ? tl_u64map_get(&s->live, r->addr) : NULL;
        tl_mem_block *live = slot && !(*slot & FREED) ? &m->blocks[*slot] : NULL;

        if (r->flags & TL_MEM_LABEL) {
            if (live) {
                live->category = r->category;
                if (r->name)
                    live->name = r->name;
            } else if (r->addr && r->bytes > 0) {
                /* a block allocated before recording began (PyTorch's parameters, labelled by
                 * tally.memory.categorize): alive since the start, or since the last free at
                 * its address */
                size_t since = slot ? (size_t)(*slot & ~FREED) + 1 : 0;
                if (new_block(m, &cap_blocks, r, i, NULL, m) != 0 ||
                    tl_u64map_put(&s->live, r->addr, m->nblocks - 1) != 0) {
                    rc = -1;
                    break;
                }
                tl_mem_block *b = &m->blocks[m->nblocks - 1];
                b->pos = since;
                b->ts = since < t->nmem && since ? t->mem[since].ts : (t->nmem ? t->mem[0].ts : 0);
                b->live_at_start = since == 0;
                b->step = -1;
            } else {
                m->labels_lost++;
            }
            continue;
        }

        /* the level before this record, when recording began */
        if (!s->started && !(r->flags & TL_MEM_LIVE)) {
            s->started = 1;
            int64_t change = is_change(r) ? r->bytes : 0;
            d->alloc_start =
                r->total_allocated >= 0 ? tl_sub_sat(r->total_allocated, change) : s->level;
            int64_t rchange = (r->flags & TL_MEM_RESERVE) ? r->bytes : 0;
            d->res_start = r->total_reserved >= 0 ? tl_sub_sat(r->total_reserved, rchange) : s->res;
        }
        if (r->total_allocated >= 0)
            s->any_total = 1;
        if (r->total_reserved > 0 || (r->flags & TL_MEM_RESERVE))
            d->reserved_known = 1;

        if (r->flags & TL_MEM_RESERVE) {
            s->res = r->total_reserved >= 0 ? r->total_reserved : tl_add_sat(s->res, r->bytes);
        } else if (r->bytes > 0) {
            if (live) { /* allocated again before it was freed: the old block ends here */
                m->reused++;
                end_block(live, r, i);
                if (r->total_allocated < 0)
                    s->level = tl_sub_sat(s->level, live->bytes);
            }
            if (r->addr) {
                if (new_block(m, &cap_blocks, r, i, owner, m) != 0 ||
                    tl_u64map_put(&s->live, r->addr, m->nblocks - 1) != 0) {
                    rc = -1;
                    break;
                }
            }
            s->level =
                r->total_allocated >= 0 ? r->total_allocated : tl_add_sat(s->level, r->bytes);
            if (!(r->flags & TL_MEM_LIVE)) {
                d->allocs++;
                d->alloc_bytes = tl_add_sat(d->alloc_bytes, r->bytes);
            }
        } else if (r->bytes < 0) {
            if (live) {
                end_block(live, r, i);
                if (tl_u64map_put(&s->live, r->addr, FREED | i) != 0) {
                    rc = -1;
                    break;
                }
            } else if (r->addr) {
                m->unmatched++;
            }
            s->level =
                r->total_allocated >= 0 ? r->total_allocated : tl_add_sat(s->level, r->bytes);
            d->frees++;
            d->freed_bytes = tl_sub_sat(d->freed_bytes, r->bytes);
        }
        if (r->total_reserved >= 0 && !(r->flags & TL_MEM_RESERVE))
            s->res = r->total_reserved;

        if (tl_grow_array(&d->series, &s->cap_series, d->nseries + 1, sizeof *d->series) != 0) {
            rc = -1;
            break;
        }
        d->series[d->nseries++] = (tl_mem_point){r->ts, s->level, s->res};
        if (s->level > d->peak) {
            d->peak = s->level;
            d->peak_ts = r->ts;
            d->peak_pos = i;
            d->res_at_peak = s->res;
        }
        if (s->res > d->peak_res) {
            d->peak_res = s->res;
            d->peak_res_ts = r->ts;
        }
        d->alloc_end = s->level;
        d->res_end = s->res;
    }
    for (size_t k = 0; k < nds; k++) {
        tl_mem_device *d = &m->dev[k];
        d->timeline = ds[k].any_total || t->source == TL_SRC_TALLY;
        if (!d->reserved_known) { /* PyTorch's CPU allocator reports reserved 0: unknown */
            d->res_start = d->res_end = d->peak_res = d->res_at_peak = -1;
            for (size_t p = 0; p < d->nseries; p++)
                d->series[p].reserved = -1;
        }
        tl_u64map_free(&ds[k].live);
    }
    free(ds);
    return rc;
}

/* ---- 3. per device: the peak's contents, step ends, leaks ----------------------------------- */

/* How many of n records (stride bytes apart, each starting with its int64 time, in time order)
 * are at or before x. */
static size_t count_until(const void *base, size_t n, size_t stride, int64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t ts;
        memcpy(&ts, (const char *)base + mid * stride, sizeof ts);
        if (ts <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t tl_mem_level_at(const tl_mem_device *d, int64_t x)
{
    size_t k = count_until(d->series, d->nseries, sizeof *d->series, x);
    return k ? d->series[k - 1].allocated : d->alloc_start;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int judge(const tl_mem *m, tl_mem_device *d)
{
    if (m->nsteps)
        d->peak_step = d->peak >= 0 ? step_at(m, d->peak_ts) : -1;
    int64_t known = 0;
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        if (b->device != d->device)
            continue;
        if (d->peak >= 0 && tl_mem_alive_at_peak(b, d)) {
            d->at_peak[b->category] = tl_add_sat(d->at_peak[b->category], b->bytes);
            known = tl_add_sat(known, b->bytes);
        }
    }
    if (d->peak >= 0)
        d->at_peak_unknown = d->peak > known ? d->peak - known : 0;
    if (m->nsteps < 3 || !d->timeline)
        return 0;
    d->retained = calloc(m->nsteps, sizeof *d->retained);
    if (!d->retained)
        return -1;
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        if (b->device == d->device && b->free_pos == SIZE_MAX && b->step >= 0 && !b->live_at_start)
            d->retained[b->step] = tl_add_sat(d->retained[b->step], b->bytes);
    }
    /* judged: every step but the first (state made once: optimizer state, caches) and the
     * last (what it allocated may be freed by the next step, which the trace does not hold) */
    size_t first = 1, last = m->nsteps - 2, n = last - first + 1;
    int64_t prev = tl_mem_level_at(d, m->steps[0].end), start = prev;
    for (size_t k = first; k <= last; k++) {
        int64_t lv = tl_mem_level_at(d, m->steps[k].end);
        if (d->retained[k] <= 0 || lv < prev)
            return 0;
        prev = lv;
    }
    if (prev <= start)
        return 0;
    int64_t *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, d->retained + first, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_i64);
    d->leak = 1;
    d->leak_per_step = v[n / 2];
    d->leak_first = (int)first;
    d->leak_last = (int)last;
    free(v);
    return 0;
}

/* ---- the whole ------------------------------------------------------------------------------ */

void tl_mem_free(tl_mem *m)
{
    for (size_t i = 0; i < m->ndev; i++) {
        free(m->dev[i].series);
        free(m->dev[i].retained);
    }
    free(m->dev);
    free(m->blocks);
    free(m->ops);
    free(m->steps);
    memset(m, 0, sizeof *m);
}

typedef struct attrib_job {
    const tl_trace *t;
    tl_mem *m;
    int32_t *owner;
    int threads, rc;
} attrib_job;

static void *attribute_main(void *arg)
{
    attrib_job *j = arg;
    j->rc = attribute(j->t, j->m, j->owner, j->threads);
    return NULL;
}

#define OWNERS_APART_MIN 50000 /* records: fewer are replayed in a few ms */

static int cmp_dev(const void *a, const void *b)
{
    const tl_mem_device *x = a, *y = b;
    return (x->device > y->device) - (x->device < y->device);
}

int tl_mem_compute(const tl_trace *t, tl_mem *m)
{
    memset(m, 0, sizeof *m);
    if (!t->nmem)
        return 0;
    /* PyTorch's traces: TensorBoard's attribution to operators; tally's own (ranges around
     * tally_alloc, operators of the PyTorch capture among them): the innermost range */
    for (size_t i = 0; i < t->nev && !m->ops_mode && t->source != TL_SRC_TALLY; i++)
        m->ops_mode = t->ev[i].cat == TL_CAT_OPERATOR;
    int32_t *owner = tl_big_alloc(t->nmem * sizeof *owner);
    if (!owner || collect_steps(t, m) != 0)
        goto fail;
    for (size_t i = 0; i < t->nmem; i++)
        owner[i] = TL_NONE;
    /* The owners (a walk of each thread's spans) and the replay (the records in time order)
     * read the trace and write apart (m->ops, m->unowned; m->dev, m->blocks): on a trace with
     * many records and a second core, the owners are found in a thread of their own meanwhile
     * and given to the blocks after (1 GB: 0.4 and 0.2 s, one after the other before); the
     * owners' walk itself waits for the records' places while a third thread marks the merged
     * operators and counts the calls. */
    int threads = tl_trace_threads(t);
    int apart = threads > 1 && t->nmem >= OWNERS_APART_MIN, replayed;
    attrib_job job = {t, m, owner, apart ? threads : 1, 0};
    if (apart) {
        tl_runner r;
        tl_run_apart(&r, attribute_main, &job, 1);
        replayed = replay(t, m, OWNERS_LATER);
        tl_run_wait(&r);
        for (size_t i = 0; i < m->nblocks; i++)
            if (m->blocks[i].owner == OWNER_LATER)
                m->blocks[i].owner = m->blocks[i].pos < t->nmem ? owner[m->blocks[i].pos] : TL_NONE;
    } else {
        job.rc = attribute(t, m, owner, 1);
        replayed = job.rc == 0 ? replay(t, m, owner) : -1;
    }
    if (job.rc != 0 || replayed != 0)
        goto fail;
    free(owner);
    owner = NULL;
    /* blocks refer to devices by id, not index: devices can be sorted */
    qsort(m->dev, m->ndev, sizeof *m->dev, cmp_dev);
    /* Labelled parameters, gradients or optimizer state and no activation said as such
     * (tally.memory.categorize on PyTorch): the rest is activations and temporaries. */
    int labelled = 0, activations = 0;
    for (size_t i = 0; i < m->nblocks; i++) {
        uint16_t c = m->blocks[i].category;
        labelled |= c == TL_MEM_PARAMETER || c == TL_MEM_GRADIENT || c == TL_MEM_OPTIMIZER_STATE;
        activations |= c == TL_MEM_ACTIVATION;
    }
    m->others_are_activations = labelled && !activations;
    for (size_t i = 0; i < m->nblocks; i++) {
        tl_mem_block *b = &m->blocks[i];
        if (m->others_are_activations && b->category == TL_MEM_OTHER)
            b->category = TL_MEM_ACTIVATION;
        m->any_names |= b->name != 0;
        m->any_categories |= b->category != TL_MEM_OTHER;
    }
    for (size_t i = 0; i < m->ndev; i++)
        if (judge(m, &m->dev[i]) != 0)
            goto fail;
    return 0;
fail:
    free(owner);
    tl_mem_free(m);
    return -1;
}

static void *mem_make(const tl_trace *t)
{
    tl_mem *m = malloc(sizeof *m);
    if (m && tl_mem_compute(t, m) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

static void mem_drop(void *p)
{
    tl_mem_free(p);
    free(p);
}

const tl_mem *tl_mem_of(const tl_trace *t)
{
    return tl_trace_memo(t, TL_MEMO_MEMORY, mem_make, mem_drop);
}

/* The owner's name id and, for an aten::empty* owner, its calling operator's. */
static void owner_ids(const tl_trace *t, const tl_mem_block *b, uint32_t *owner, uint32_t *caller)
{
    *owner = *caller = 0;
    if (b->owner == TL_NONE || (size_t)b->owner >= t->nev)
        return;
    const tl_event *e = &t->ev[b->owner];
    *owner = e->name;
    if (strncmp(tl_str(&t->strings, e->name), "aten::empty", 11) != 0)
        return;
    /* aten::empty is PyTorch's malloc: name the operator that called it */
    for (int32_t p = e->parent; p != TL_NONE && (size_t)p < t->nev; p = t->ev[p].parent) {
        if (t->ev[p].cat == TL_CAT_OPERATOR) {
            *caller = t->ev[p].name;
            return;
        }
    }
}

void tl_mem_group_name(const tl_trace *t, const tl_mem_group *g, char *buf, size_t n)
{
    if (!g->owner)
        snprintf(buf, n, "<unknown>");
    else if (g->caller)
        snprintf(buf, n, "%s (%s)", tl_str(&t->strings, g->caller), tl_str(&t->strings, g->owner));
    else
        snprintf(buf, n, "%s", tl_str(&t->strings, g->owner));
}

/* Largest first; equal sizes (a model's parameters and their gradients) by the owner's and the
 * caller's names, then the category: an order of the trace's content, not of the string ids its
 * reader happened to give (a .tally file and its JSON export give them in other orders). */
static int group_before(const tl_mem_group *x, const tl_mem_group *y, const tl_trace *t)
{
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes;
    int c = x->owner == y->owner
                ? 0
                : strcmp(tl_str(&t->strings, x->owner), tl_str(&t->strings, y->owner));
    if (!c && x->caller != y->caller)
        c = strcmp(tl_str(&t->strings, x->caller), tl_str(&t->strings, y->caller));
    return c ? c < 0 : x->category < y->category;
}
TL_NATURAL_MERGE_SORT(sort_groups, tl_mem_group, const tl_trace *, group_before)

int tl_mem_group_blocks(const tl_trace *t, const tl_mem *m, int32_t device,
                        int (*keep)(const tl_mem_block *b, const void *arg), const void *arg,
                        tl_mem_group **out, size_t *nout)
{
    tl_mem_group *g = NULL;
    size_t n = 0, cap = 0;
    tl_keymap idx[TL_MEM_CAT_COUNT];
    memset(idx, 0, sizeof idx);
    int rc = 0;
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        if (b->device != device || !keep(b, arg))
            continue;
        uint32_t owner, caller;
        owner_ids(t, b, &owner, &caller);
        uint64_t key = tl_key2(owner, caller);
        int32_t k = tl_keymap_get(&idx[b->category], key);
        if (k < 0) {
            if (tl_grow_array(&g, &cap, n + 1, sizeof *g) != 0 ||
                tl_keymap_put(&idx[b->category], key, (int32_t)n) != 0) {
                rc = -1;
                break;
            }
            k = (int32_t)n++;
            g[k] = (tl_mem_group){owner, caller, b->category, 0, 0};
        }
        g[k].blocks++;
        g[k].bytes = tl_add_sat(g[k].bytes, b->bytes);
    }
    for (int c = 0; c < TL_MEM_CAT_COUNT; c++)
        tl_keymap_free(&idx[c]);
    if (rc != 0) {
        free(g);
        return -1;
    }
    if (n > 1) {
        tl_mem_group *tmp = malloc(n * sizeof *tmp), *res = tmp ? sort_groups(g, tmp, n, t) : NULL;
        if (res == tmp && tmp)
            memcpy(g, tmp, n * sizeof *g);
        free(tmp);
        if (!res) {
            free(g);
            return -1;
        }
    }
    *out = g;
    *nout = n;
    return 0;
}

size_t tl_mem_pos_at(const tl_trace *t, int64_t x)
{
    size_t k = count_until(t->mem, t->nmem, sizeof *t->mem, x);
    return k ? k - 1 : SIZE_MAX;
}

typedef struct delta {
    size_t pos;
    int64_t bytes;
    uint16_t category;
} delta;

static int cmp_delta(const void *a, const void *b)
{
    const delta *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int tl_mem_alive_at(const tl_mem *m, const tl_mem_device *d, const size_t *pos, size_t n,
                    int64_t (*out)[TL_MEM_CAT_COUNT])
{
    delta *dl = malloc((2 * m->nblocks + 1) * sizeof *dl);
    if (!dl)
        return -1;
    size_t nd = 0;
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        if (b->device != d->device)
            continue;
        dl[nd++] = (delta){b->pos, b->bytes, b->category};
        if (b->free_pos != SIZE_MAX)
            dl[nd++] = (delta){b->free_pos, -b->bytes, b->category};
    }
    qsort(dl, nd, sizeof *dl, cmp_delta);
    int64_t cur[TL_MEM_CAT_COUNT] = {0};
    size_t k = 0;
    for (size_t q = 0; q < n; q++) {
        /* alive after pos[q]: allocated at or before it, not freed at or before it */
        for (; k < nd && pos[q] != SIZE_MAX && dl[k].pos <= pos[q]; k++)
            cur[dl[k].category] = tl_add_sat(cur[dl[k].category], dl[k].bytes);
        memcpy(out[q], cur, sizeof cur);
    }
    free(dl);
    return 0;
}

/* ---- layout tree ------------------------------------------------------------------------------
 */

static uint64_t child_hash(size_t parent, const char *comp, size_t len)
{
    return tl_u64map_mix(tl_hash_bytes(comp, len) + (uint64_t)parent);
}

/* Put node k in the index (its slot free; the index not full). */
static void index_put(tl_mem_tree *l, size_t k)
{
    size_t mask = l->icap - 1, i = child_hash(l->n[k].parent, l->n[k].comp, l->n[k].len) & mask;
    while (l->index[i])
        i = (i + 1) & mask;
    l->index[i] = k;
}

/* The child of parent named comp, added when missing (in a hash index of (parent, name), so
 * that a node with many children costs no more than one with few); 0 when out of memory. */
static size_t tree_child(tl_mem_tree *l, size_t parent, const char *comp, size_t len)
{
    if (l->icap) {
        size_t mask = l->icap - 1, i = child_hash(parent, comp, len) & mask;
        for (size_t c; (c = l->index[i]); i = (i + 1) & mask)
            if (l->n[c].parent == parent && l->n[c].len == len && !memcmp(l->n[c].comp, comp, len))
                return c;
    }
    if (tl_grow_array(&l->n, &l->cap, l->count + 1, sizeof *l->n) != 0)
        return 0;
    if (2 * l->count >= l->icap) { /* at most half full: rebuild twice as large */
        size_t ncap = l->icap ? 2 * l->icap : 64;
        size_t *ni = calloc(ncap, sizeof *ni);
        if (!ni)
            return 0;
        free(l->index);
        l->index = ni;
        l->icap = ncap;
        for (size_t c = 1; c < l->count; c++)
            index_put(l, c);
    }
    size_t k = l->count++;
    memset(&l->n[k], 0, sizeof l->n[k]);
    l->n[k].comp = comp;
    l->n[k].len = len;
    l->n[k].parent = parent;
    if (l->n[parent].last)
        l->n[l->n[parent].last].next = k;
    else
        l->n[parent].first = k;
    l->n[parent].last = k;
    index_put(l, k);
    return k;
}

/* Natural order of two path components: runs of digits compare as numbers (layers.2 before
 * layers.10), the rest byte by byte. */
static int natural_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (isdigit((unsigned char)a[i]) && isdigit((unsigned char)b[j])) {
            while (i < na && a[i] == '0')
                i++;
            while (j < nb && b[j] == '0')
                j++;
            size_t di = i, dj = j;
            while (di < na && isdigit((unsigned char)a[di]))
                di++;
            while (dj < nb && isdigit((unsigned char)b[dj]))
                dj++;
            if (di - i != dj - j) /* more significant digits: larger */
                return di - i < dj - j ? -1 : 1;
            int c = memcmp(a + i, b + j, di - i);
            if (c)
                return c;
            i = di;
            j = dj;
        } else if (a[i] != b[j]) {
            return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
        } else {
            i++;
            j++;
        }
    }
    return (i < na) - (j < nb);
}

/* The rank of a category root: the order of tl_mem_cat, "other" last. */
static int cat_rank(const tl_mem_node *n)
{
    for (int c = 1; c < TL_MEM_CAT_COUNT; c++) {
        const char *name = tl_mem_cat_name((tl_mem_cat)c);
        if (strlen(name) == n->len && !memcmp(name, n->comp, n->len))
            return c;
    }
    return TL_MEM_CAT_COUNT;
}

typedef struct sort_ctx {
    const tl_mem_tree *l;
    int by_category; /* the children are category roots */
} sort_ctx;

static int child_before(const size_t *x, const size_t *y, const sort_ctx *c)
{
    const tl_mem_node *a = &c->l->n[*x], *b = &c->l->n[*y];
    if (c->by_category)
        return cat_rank(a) < cat_rank(b);
    return natural_cmp(a->comp, a->len, b->comp, b->len) < 0;
}

TL_NATURAL_MERGE_SORT(sort_children, size_t, const sort_ctx *, child_before)

/* Relink every node's children in order (category roots in category order, the rest in
 * natural order). 0, or -1 when out of memory. */
static int order_children(tl_mem_tree *l, int category_roots)
{
    size_t *a = malloc(2 * l->count * sizeof *a);
    if (!a)
        return -1;
    for (size_t k = 0; k < l->count; k++) {
        size_t n = 0;
        for (size_t c = l->n[k].first; c; c = l->n[c].next)
            a[n++] = c;
        if (n < 2)
            continue;
        sort_ctx ctx = {l, category_roots && k == 0};
        size_t *sorted = sort_children(a, a + n, n, &ctx);
        if (!sorted) {
            free(a);
            return -1;
        }
        l->n[k].first = sorted[0];
        l->n[k].last = sorted[n - 1];
        for (size_t i = 0; i < n; i++)
            l->n[sorted[i]].next = i + 1 < n ? sorted[i + 1] : 0;
    }
    free(a);
    return 0;
}

void tl_mem_tree_free(tl_mem_tree *tree)
{
    free(tree->n);
    free(tree->index);
    memset(tree, 0, sizeof *tree);
}

int tl_mem_tree_build(const tl_trace *t, const tl_mem *m, const tl_mem_device *d, int category,
                      tl_mem_tree *l)
{
    memset(l, 0, sizeof *l);
    if (tl_grow_array(&l->n, &l->cap, 1, sizeof *l->n) != 0)
        return -1;
    memset(&l->n[0], 0, sizeof l->n[0]);
    l->count = 1;
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        if (!b->name || !tl_mem_alive_at_peak(b, d) || (category >= 0 && b->category != category))
            continue;
        size_t k = 0;
        l->n[0].total = tl_add_sat(l->n[0].total, b->bytes);
        if (category < 0) {
            const char *cat = tl_mem_cat_name((tl_mem_cat)b->category);
            if (!(k = tree_child(l, 0, cat, strlen(cat))))
                goto oom;
            l->n[k].total = tl_add_sat(l->n[k].total, b->bytes);
        }
        const char *s = tl_str(&t->strings, b->name);
        for (int depth = 0; *s; depth++) {
            const char *dot = strchr(s, '.');
            /* deeper than 64 levels: the rest is one component */
            size_t len = dot && depth < 64 ? (size_t)(dot - s) : strlen(s);
            if (!(k = tree_child(l, k, s, len)))
                goto oom;
            l->n[k].total = tl_add_sat(l->n[k].total, b->bytes);
            s += len;
            if (*s == '.')
                s++;
        }
        l->n[k].layer = tl_add_sat(l->n[k].layer, b->bytes);
    }
    if (order_children(l, category < 0) != 0)
        goto oom;
    return 0;
oom:
    tl_mem_tree_free(l);
    return -1;
}

size_t tl_mem_tree_path(const tl_mem_tree *l, size_t k, char *path, size_t plen, size_t cap)
{
    size_t n = plen;
    if (n && n + 1 < cap)
        path[n++] = '.';
    size_t take = l->n[k].len < cap - 1 - n ? l->n[k].len : cap - 1 - n;
    memcpy(path + n, l->n[k].comp, take);
    n += take;
    path[n] = 0;
    return n;
}

const tl_mem_device *tl_mem_main_device(const tl_mem *m)
{
    const tl_mem_device *best = NULL;
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = &m->dev[i];
        if (!d->timeline || d->peak <= 0)
            continue;
        /* a GPU before the host; the highest peak among them */
        if (!best || (d->device >= 0 && best->device < 0) ||
            ((d->device >= 0) == (best->device >= 0) && d->peak > best->peak))
            best = d;
    }
    return best;
}

int tl_mem_kept(const tl_mem_block *b, const void *device)
{
    const tl_mem_device *d = device;
    return b->device == d->device && b->free_pos == SIZE_MAX && !b->live_at_start &&
           b->step >= d->leak_first && b->step <= d->leak_last;
}
