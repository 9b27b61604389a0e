/*
 * model.c — the trace model: string interning, event and track storage, and tl_trace_finish,
 * which puts events in (track, start, longest first) order and derives the relations every view
 * needs: which span encloses which on a host thread, and which runtime call launched which
 * device work.
 *
 * Sorting is done on 16-byte keys (track and start packed in one word, then the inverted
 * duration and the event's index), and the events are then permuted in place by following
 * cycles, so a 4-million-event trace needs 64 MB of keys rather than a second copy of its events.
 */
#include "trace/model.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------------------ */

static const char *const cat_names[TL_CAT_COUNT] = {
    [TL_CAT_USER] = "UserDefined",
    [TL_CAT_DATALOADER] = "Dataloader",
    [TL_CAT_FORWARD] = "Forward",
    [TL_CAT_BACKWARD] = "Backward",
    [TL_CAT_OPTIMIZER] = "Optimization",
    [TL_CAT_COMMUNICATION] = "Communication",
    [TL_CAT_OPERATOR] = "Operator",
    [TL_CAT_STEP] = "ProfileStep",
    [TL_CAT_OPERATOR_INNER] = "OperatorInner",
    [TL_CAT_PYTHON] = "PythonFunction",
    [TL_CAT_RUNTIME] = "CudaRuntime",
    [TL_CAT_DRIVER] = "CudaDriver",
    [TL_CAT_KERNEL] = "Kernel",
    [TL_CAT_MEMCPY] = "Memcpy",
    [TL_CAT_MEMSET] = "Memset",
    [TL_CAT_GPU_USER] = "GpuUserAnnotation",
    [TL_CAT_SYNC] = "CudaSync",
    [TL_CAT_OVERHEAD] = "Overhead",
    [TL_CAT_INSTANT] = "Instant",
    [TL_CAT_COUNTER] = "Counter",
    [TL_CAT_MEMORY] = "Memory",
    [TL_CAT_OTHER] = "Other",
};

const char *tl_cat_name(tl_cat c)
{
    return (unsigned)c < TL_CAT_COUNT ? cat_names[c] : "Other";
}

int tl_cat_is_device(tl_cat c)
{
    return c == TL_CAT_KERNEL || c == TL_CAT_MEMCPY || c == TL_CAT_MEMSET || c == TL_CAT_GPU_USER;
}

const char *tl_memcpy_kind_name(tl_memcpy_kind k)
{
    switch (k) {
    case TL_COPY_HTOD:
        return "HtoD";
    case TL_COPY_DTOH:
        return "DtoH";
    case TL_COPY_DTOD:
        return "DtoD";
    case TL_COPY_HTOH:
        return "HtoH";
    case TL_COPY_PTOP:
        return "PtoP";
    default:
        return "Unknown";
    }
}

void tl_error_set(tl_error *e, const char *fmt, ...)
{
    if (!e)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* ---- string table ----------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t len)
{
    /* FNV-1a on 8-byte words, then a final mix: fast for the short names traces are full of. */
    uint64_t h = 0xcbf29ce484222325ull ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

void tl_strtab_init(tl_strtab *t)
{
    memset(t, 0, sizeof *t);
    tl_intern(t, "", 0);
}

void tl_strtab_free(tl_strtab *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->str);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static char *strtab_alloc(tl_strtab *t, size_t n)
{
    if (t->block_used + n > t->block_cap) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        char *b = malloc(cap);
        if (!b)
            return NULL;
        if (t->nblocks == t->cap_blocks) {
            size_t nc = t->cap_blocks ? t->cap_blocks * 2 : 16;
            char **nb = realloc(t->blocks, nc * sizeof *nb);
            if (!nb) {
                free(b);
                return NULL;
            }
            t->blocks = nb;
            t->cap_blocks = nc;
        }
        t->blocks[t->nblocks++] = b;
        t->block = b;
        t->block_used = 0;
        t->block_cap = cap;
    }
    char *p = t->block + t->block_used;
    t->block_used += n;
    return p;
}

static int strtab_grow_slots(tl_strtab *t)
{
    uint32_t n = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    for (uint32_t id = 0; id < t->count; id++) {
        uint32_t i = (uint32_t)hash_bytes(t->str[id], t->len[id]) & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = id + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = n;
    return 0;
}

uint32_t tl_intern(tl_strtab *t, const char *s, size_t len)
{
    if ((t->count + 1) * 2 > t->nslots && strtab_grow_slots(t) != 0)
        return 0;
    uint32_t mask = t->nslots - 1;
    uint32_t i = (uint32_t)hash_bytes(s, len) & mask;
    for (;;) {
        uint32_t v = t->slots[i];
        if (!v)
            break;
        uint32_t id = v - 1;
        if (t->len[id] == len && memcmp(t->str[id], s, len) == 0)
            return id;
        i = (i + 1) & mask;
    }
    if (t->count == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 1024;
        char **ns = realloc(t->str, nc * sizeof *ns);
        if (!ns)
            return 0;
        t->str = ns;
        uint32_t *nl = realloc(t->len, nc * sizeof *nl);
        if (!nl)
            return 0;
        t->len = nl;
        t->cap = nc;
    }
    char *copy = strtab_alloc(t, len + 1);
    if (!copy)
        return 0;
    memcpy(copy, s, len);
    copy[len] = 0;
    uint32_t id = t->count++;
    t->str[id] = copy;
    t->len[id] = (uint32_t)len;
    t->slots[i] = id + 1;
    return id;
}

/* ---- trace ------------------------------------------------------------------------------ */

void tl_trace_init(tl_trace *t)
{
    memset(t, 0, sizeof *t);
    tl_strtab_init(&t->strings);
    t->rank = -1;
}

void tl_trace_free(tl_trace *t)
{
    tl_strtab_free(&t->strings);
    free(t->ev);
    free(t->tracks);
    free(t->devices);
    free(t->step_samples);
    free(t->track_slots_);
    memset(t, 0, sizeof *t);
}

tl_event *tl_trace_add(tl_trace *t)
{
    if (t->nev == t->cap_ev) {
        size_t nc = t->cap_ev ? t->cap_ev + t->cap_ev / 2 : 4096;
        tl_event *ne = realloc(t->ev, nc * sizeof *ne);
        if (!ne)
            return NULL;
        t->ev = ne;
        t->cap_ev = nc;
    }
    tl_event *e = &t->ev[t->nev++];
    memset(e, 0, sizeof *e);
    e->parent = TL_NONE;
    e->link = TL_NONE;
    return e;
}

static uint64_t track_hash(int kind, int64_t pid, int64_t tid, int32_t device)
{
    uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)tid * 0xc2b2ae3d27d4eb4full + (uint64_t)(uint32_t)device * 0x165667b19e3779f9ull;
    h ^= (uint64_t)kind << 7;
    h ^= h >> 31;
    h *= 0xd6e8feb86659fd93ull;
    return h ^ (h >> 29);
}

static int track_rehash(tl_trace *t, uint32_t n)
{
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    for (uint32_t k = 0; k < t->ntracks; k++) {
        const tl_track *tr = &t->tracks[k];
        uint32_t i = (uint32_t)track_hash(tr->kind, tr->pid, tr->tid, tr->device) & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = k + 1;
    }
    free(t->track_slots_);
    t->track_slots_ = s;
    t->ntrack_slots_ = n;
    return 0;
}

uint32_t tl_trace_track(tl_trace *t, tl_track_kind kind, int64_t pid, int64_t tid, int32_t device)
{
    if ((t->ntracks + 1) * 2 > t->ntrack_slots_ &&
        track_rehash(t, t->ntrack_slots_ ? t->ntrack_slots_ * 2 : 64) != 0)
        return 0;
    uint32_t mask = t->ntrack_slots_ - 1;
    uint32_t i = (uint32_t)track_hash(kind, pid, tid, device) & mask;
    for (;;) {
        uint32_t v = t->track_slots_[i];
        if (!v)
            break;
        const tl_track *tr = &t->tracks[v - 1];
        if (tr->kind == kind && tr->pid == pid && tr->tid == tid && tr->device == device)
            return v - 1;
        i = (i + 1) & mask;
    }
    if (t->ntracks == t->cap_tracks) {
        uint32_t nc = t->cap_tracks ? t->cap_tracks * 2 : 16;
        tl_track *nt = realloc(t->tracks, nc * sizeof *nt);
        if (!nt)
            return 0;
        t->tracks = nt;
        t->cap_tracks = nc;
    }
    uint32_t k = t->ntracks++;
    tl_track *tr = &t->tracks[k];
    memset(tr, 0, sizeof *tr);
    tr->kind = (uint8_t)kind;
    tr->pid = pid;
    tr->tid = tid;
    tr->device = device;
    t->track_slots_[i] = k + 1;
    return k;
}

tl_device *tl_trace_device(tl_trace *t, int32_t id)
{
    for (uint32_t i = 0; i < t->ndevices; i++)
        if (t->devices[i].id == id)
            return &t->devices[i];
    if (t->ndevices == t->cap_devices) {
        uint32_t nc = t->cap_devices ? t->cap_devices * 2 : 4;
        tl_device *nd = realloc(t->devices, nc * sizeof *nd);
        if (!nd)
            return NULL;
        t->devices = nd;
        t->cap_devices = nc;
    }
    tl_device *d = &t->devices[t->ndevices++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}

void tl_trace_span(const tl_trace *t, int64_t *t0, int64_t *t1)
{
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_COUNTER)
            continue;
        if (e->ts < a)
            a = e->ts;
        if (e->ts + e->dur > b)
            b = e->ts + e->dur;
    }
    if (a > b)
        a = b = 0;
    *t0 = a;
    *t1 = b;
}

/* ---- finish: order, nesting, links ------------------------------------------------------- */

/* Event order: track, start ascending, longer first, then the order events were added. */
static int ev_before(const tl_event *a, size_t ia, const tl_event *b, size_t ib)
{
    if (a->track != b->track)
        return a->track < b->track;
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->dur != b->dur)
        return a->dur > b->dur;
    return ia < ib;
}

typedef struct sort_key {
    uint64_t hi; /* track (16 bits) | start - min start (48 bits) */
    uint64_t lo; /* ~duration clipped to 32 bits | index (32 bits) */
} sort_key;

static int key_cmp(const void *pa, const void *pb)
{
    const sort_key *a = pa, *b = pb;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Comparator for the general path (too many tracks or too long a time range). */
static const tl_event *cmp_base;
static int idx_cmp(const void *pa, const void *pb)
{
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    if (ia == ib)
        return 0;
    return ev_before(&cmp_base[ia], ia, &cmp_base[ib], ib) ? -1 : 1;
}

/* Permute t->ev so that position i receives the event at old index perm[i]; perm is consumed. */
static void apply_permutation(tl_event *ev, uint32_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (perm[i] == i)
            continue;
        tl_event tmp = ev[i];
        size_t j = i;
        for (;;) {
            size_t k = perm[j];
            perm[j] = (uint32_t)j;
            if (k == i) {
                ev[j] = tmp;
                break;
            }
            ev[j] = ev[k];
            j = k;
        }
    }
}

static int sort_events(tl_trace *t)
{
    size_t n = t->nev;
    int sorted = 1;
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (i && sorted && !ev_before(&t->ev[i - 1], i - 1, &t->ev[i], i))
            sorted = 0;
        if (t->ev[i].ts < tmin)
            tmin = t->ev[i].ts;
        if (t->ev[i].ts > tmax)
            tmax = t->ev[i].ts;
    }
    if (sorted || n < 2)
        return 0;
    if (n > UINT32_MAX)
        return -1;
    uint32_t *perm = malloc(n * sizeof *perm);
    if (!perm)
        return -1;
    int fast = t->ntracks <= 0xffff && (uint64_t)(tmax - tmin) < (1ull << 48);
    if (fast) {
        sort_key *keys = malloc(n * sizeof *keys);
        if (!keys) {
            fast = 0;
        } else {
            for (size_t i = 0; i < n; i++) {
                const tl_event *e = &t->ev[i];
                uint64_t d = e->dur < 0 ? 0 : (uint64_t)e->dur;
                if (d > 0xffffffffull)
                    d = 0xffffffffull;
                keys[i].hi = ((uint64_t)e->track << 48) | (uint64_t)(e->ts - tmin);
                keys[i].lo = ((0xffffffffull - d) << 32) | i;
            }
            qsort(keys, n, sizeof *keys, key_cmp);
            for (size_t i = 0; i < n; i++)
                perm[i] = (uint32_t)keys[i].lo;
            free(keys);
        }
    }
    if (!fast) {
        for (size_t i = 0; i < n; i++)
            perm[i] = (uint32_t)i;
        cmp_base = t->ev;
        qsort(perm, n, sizeof *perm, idx_cmp);
    }
    apply_permutation(t->ev, perm, n);
    free(perm);
    return 0;
}

/* Spans that nest on a host track: everything but device work, counters and async ranges. */
static int nests(const tl_event *e)
{
    return !tl_cat_is_device((tl_cat)e->cat) && e->cat != TL_CAT_COUNTER &&
           !(e->flags & TL_EV_ASYNC);
}

static int compute_nesting(tl_trace *t)
{
    size_t cap = 256, top = 0;
    int32_t *stack = malloc(cap * sizeof *stack);
    if (!stack)
        return -1;
    uint32_t cur_track = UINT32_MAX;
    for (size_t i = 0; i < t->nev; i++) {
        tl_event *e = &t->ev[i];
        if (e->track != cur_track) {
            cur_track = e->track;
            top = 0;
        }
        if (t->tracks[e->track].kind != TL_TRACK_THREAD || !nests(e))
            continue;
        int64_t end = e->ts + e->dur;
        /* Pop spans that end before this one starts, and spans this one is not inside of
         * (a partial overlap is not nesting). */
        while (top) {
            const tl_event *p = &t->ev[stack[top - 1]];
            int64_t pend = p->ts + p->dur;
            int inside =
                e->dur > 0 ? (e->ts >= p->ts && end <= pend) : (e->ts >= p->ts && e->ts < pend);
            if (inside)
                break;
            top--;
        }
        e->parent = top ? stack[top - 1] : TL_NONE;
        e->depth = (uint8_t)(top > 255 ? 255 : top);
        if (e->dur > 0 && !(e->flags & TL_EV_INSTANT)) {
            if (top == cap) {
                cap *= 2;
                int32_t *ns = realloc(stack, cap * sizeof *ns);
                if (!ns) {
                    free(stack);
                    return -1;
                }
                stack = ns;
            }
            stack[top++] = (int32_t)i;
        }
    }
    free(stack);
    return 0;
}

/* Map correlation id -> runtime/driver call, then link device work to it. */
static int compute_links(tl_trace *t)
{
    size_t ncalls = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].corr && (t->ev[i].cat == TL_CAT_RUNTIME || t->ev[i].cat == TL_CAT_DRIVER))
            ncalls++;
    if (!ncalls)
        return 0;
    size_t nslots = 16;
    while (nslots < ncalls * 2)
        nslots *= 2;
    struct slot {
        int64_t corr;
        int32_t idx;
    } *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < nslots; i++)
        slots[i].idx = TL_NONE;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (!e->corr || (e->cat != TL_CAT_RUNTIME && e->cat != TL_CAT_DRIVER))
            continue;
        size_t h = (size_t)((uint64_t)e->corr * 0x9e3779b97f4a7c15ull >> 20) & (nslots - 1);
        while (slots[h].idx != TL_NONE && slots[h].corr != e->corr)
            h = (h + 1) & (nslots - 1);
        /* A driver call made inside a runtime call can share its id: keep the runtime call. */
        if (slots[h].idx == TL_NONE ||
            (t->ev[slots[h].idx].cat == TL_CAT_DRIVER && e->cat == TL_CAT_RUNTIME)) {
            slots[h].corr = e->corr;
            slots[h].idx = (int32_t)i;
        }
    }
    for (size_t i = 0; i < t->nev; i++) {
        tl_event *e = &t->ev[i];
        if (!e->corr || !tl_cat_is_device((tl_cat)e->cat) || e->cat == TL_CAT_GPU_USER)
            continue;
        size_t h = (size_t)((uint64_t)e->corr * 0x9e3779b97f4a7c15ull >> 20) & (nslots - 1);
        while (slots[h].idx != TL_NONE && slots[h].corr != e->corr)
            h = (h + 1) & (nslots - 1);
        if (slots[h].idx == TL_NONE)
            continue;
        e->link = slots[h].idx;
        tl_event *call = &t->ev[slots[h].idx];
        if (call->link == TL_NONE)
            call->link = (int32_t)i;
    }
    free(slots);
    return 0;
}

int tl_trace_finish(tl_trace *t)
{
    if (t->finished)
        return 0;
    if (t->nev > (size_t)INT32_MAX)
        return -1;
    if (sort_events(t) != 0 || compute_nesting(t) != 0 || compute_links(t) != 0)
        return -1;
    t->finished = 1;
    return 0;
}

int tl_trace_relink(tl_trace *t)
{
    for (size_t i = 0; i < t->nev; i++)
        t->ev[i].link = TL_NONE;
    return compute_links(t);
}
