/*
 * view_ops.c — the ops table: PyTorch's key_averages().table(), with its meaning.
 *
 * Every event PyTorch turns into a FunctionEvent is a row source: host ops and annotations
 * (ProfilerStep#N aggregated as "ProfilerStep*"), runtime calls as their own rows, and device
 * events (kernels, copies, memsets, gpu annotations) with only CUDA columns. Rows group events
 * by (name, host/device, annotation or not [, input shapes]) in order of first appearance.
 * The definitions, per event, as in torch/autograd/profiler_util.py:
 *
 *   CPU total    duration (host events; 0 for device events)
 *   Self CPU     CPU total minus the CPU totals of the direct children (0 for async events)
 *   CUDA total   host: durations of the device work it launched (the kernel's External id
 *                names the innermost op open at launch: here, the innermost span enclosing the
 *                runtime call linked to the kernel) plus its children's CUDA totals;
 *                device: its own duration
 *   Self CUDA    CUDA total minus the children's CUDA totals
 *   CPU/CUDA Mem bytes of the [memory] events whose time lies in [start, end] of the event
 *                (any thread, as torch does), split by host/device memory; Self: minus the
 *                children's. [memory] events inside no event become rows named "[memory]".
 *   Self CPU %   self CPU / the sum of self CPU over all rows; CPU total % has the same
 *                denominator; Self CUDA % = self CUDA / the sum over device rows.
 *
 * Before that, PyTorch drops a few utility events (profiler::_record_function_enter/exit,
 * aten::is_leaf, aten::output_nr, aten::_version, [memory]) — their time stays in their parent's
 * self time — and merges a span into its parent when it is the parent's only child and has
 * the same name (_remove_dup_nodes); both are reproduced here. Python frames, overhead,
 * counters and instants are not rows.
 */
#include "analysis/attrib.h"
#include "analysis/ops_events.h"
#include "analysis/views.h"
#include "trace/checked.h"
#include "trace/grow_array.h"
#include "trace/natsort.h"
#include "trace/sort.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum {
    K_NAME,
    K_SELF_CPU_PCT,
    K_SELF_CPU,
    K_CPU_TOTAL_PCT,
    K_CPU_TOTAL,
    K_CPU_AVG,
    K_SELF_CUDA,
    K_SELF_CUDA_PCT,
    K_CUDA_TOTAL,
    K_CUDA_AVG,
    K_CPU_MEM,
    K_SELF_CPU_MEM,
    K_CUDA_MEM,
    K_SELF_CUDA_MEM,
    K_CALLS,
    K_SHAPES,
    K_NCOLS
};

static const tl_col all_cols[K_NCOLS] = {
    [K_NAME] = {"Name", "name", TL_COL_STR, 1},
    [K_SELF_CPU_PCT] = {"Self CPU %", "self_cpu_pct", TL_COL_PCT, 0},
    [K_SELF_CPU] = {"Self CPU", "self_cpu_us", TL_COL_TIME, 0},
    [K_CPU_TOTAL_PCT] = {"CPU total %", "cpu_total_pct", TL_COL_PCT, 0},
    [K_CPU_TOTAL] = {"CPU total", "cpu_total_us", TL_COL_TIME, 0},
    [K_CPU_AVG] = {"CPU time avg", "cpu_avg_us", TL_COL_TIME, 0},
    [K_SELF_CUDA] = {"Self CUDA", "self_cuda_us", TL_COL_TIME, 0},
    [K_SELF_CUDA_PCT] = {"Self CUDA %", "self_cuda_pct", TL_COL_PCT, 0},
    [K_CUDA_TOTAL] = {"CUDA total", "cuda_total_us", TL_COL_TIME, 0},
    [K_CUDA_AVG] = {"CUDA time avg", "cuda_avg_us", TL_COL_TIME, 0},
    [K_CPU_MEM] = {"CPU Mem", "cpu_mem_bytes", TL_COL_BYTES, 0},
    [K_SELF_CPU_MEM] = {"Self CPU Mem", "self_cpu_mem_bytes", TL_COL_BYTES, 0},
    [K_CUDA_MEM] = {"CUDA Mem", "cuda_mem_bytes", TL_COL_BYTES, 0},
    [K_SELF_CUDA_MEM] = {"Self CUDA Mem", "self_cuda_mem_bytes", TL_COL_BYTES, 0},
    [K_CALLS] = {"# of Calls", "calls", TL_COL_INT, 0},
    [K_SHAPES] = {"Input Shapes", "input_shapes", TL_COL_STR, 1},
};

/* torch's sort_by attribute names -> our column keys */
static const struct {
    const char *torch, *key;
} sort_alias[] = {
    {"cpu_time_total", "cpu_total_us"},
    {"self_cpu_time_total", "self_cpu_us"},
    {"cuda_time_total", "cuda_total_us"},
    {"device_time_total", "cuda_total_us"},
    {"xpu_time_total", "cuda_total_us"},
    {"self_cuda_time_total", "self_cuda_us"},
    {"self_device_time_total", "self_cuda_us"},
    {"self_xpu_time_total", "self_cuda_us"},
    {"cpu_time", "cpu_avg_us"},
    {"cuda_time", "cuda_avg_us"},
    {"device_time", "cuda_avg_us"},
    {"xpu_time", "cuda_avg_us"},
    {"count", "calls"},
    {"cpu_memory_usage", "cpu_mem_bytes"},
    {"self_cpu_memory_usage", "self_cpu_mem_bytes"},
    {"cuda_memory_usage", "cuda_mem_bytes"},
    {"device_memory_usage", "cuda_mem_bytes"},
    {"xpu_memory_usage", "cuda_mem_bytes"},
    {"self_cuda_memory_usage", "self_cuda_mem_bytes"},
    {"self_device_memory_usage", "self_cuda_mem_bytes"},
    {"self_xpu_memory_usage", "self_cuda_mem_bytes"},
};

/* Map a --sort word to a column key of the full column set: a torch attribute name, one of
 * our keys or titles. NULL for "none" (keep the order of first appearance). */
static const char *resolve_sort(const char *s)
{
    for (size_t i = 0; i < sizeof sort_alias / sizeof sort_alias[0]; i++)
        if (!strcasecmp(s, sort_alias[i].torch))
            return sort_alias[i].key;
    if (!strcasecmp(s, "none") || !*s)
        return NULL;
    return s;
}

/* Names PyTorch drops before building the tree (profiler_util._filter_name). */
static int filtered_name(const char *n)
{
    static const char *const names[] = {"[memory]",
                                        "[OutOfMemory]",
                                        "profiler::_record_function_enter",
                                        "profiler::_record_function_enter_new",
                                        "profiler::_record_function_exit",
                                        "aten::is_leaf",
                                        "aten::output_nr",
                                        "aten::_version"};
    if (n[0] != '[' && n[0] != 'p' && n[0] != 'a')
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(n, names[i]))
            return 1;
    return 0;
}

/* What a string id names, decided once per id: a trace has millions of events and thousands of
 * names. */
enum {
    NM_SEEN = 1,
    NM_DROPPED = 2, /* filtered_name, or Kineto's "PyTorch Profiler (N)" session span */
    NM_STEP = 4     /* ProfilerStep#N */
};

static int is_step_name(const char *n)
{
    return !strncmp(n, "ProfilerStep#", 13);
}

static uint8_t name_flags(const tl_trace *t, uint8_t *named, uint32_t id)
{
    if (id >= t->strings.count)
        id = 0; /* tl_str reads such ids as "" */
    if (!named[id]) {
        const char *n = tl_str(&t->strings, id);
        /* Kineto's span of the whole profiling session ("PyTorch Profiler (0)", cat "Trace") is
         * written by the trace exporter, not an event PyTorch's table sees */
        int dropped = filtered_name(n) || !strncmp(n, "PyTorch Profiler (", 18);
        named[id] = NM_SEEN | (dropped ? NM_DROPPED : 0) | (is_step_name(n) ? NM_STEP : 0);
    }
    return named[id];
}

/* What kind of row an event gives (TL_OPS_*). */
static int row_kind(const tl_trace *t, uint8_t *named, const tl_event *e)
{
    switch ((tl_cat)e->cat) {
    case TL_CAT_KERNEL:
    case TL_CAT_MEMCPY:
    case TL_CAT_MEMSET:
    case TL_CAT_GPU_USER:
        return TL_OPS_DEVICE;
    case TL_CAT_MEMORY:
    case TL_CAT_COUNTER:
    case TL_CAT_INSTANT:
    case TL_CAT_PYTHON:
    case TL_CAT_OVERHEAD:
        return TL_OPS_NONE;
    default:
        break;
    }
    if ((e->flags & TL_EV_INSTANT) || e->track >= t->ntracks ||
        t->tracks[e->track].kind != TL_TRACK_THREAD)
        return TL_OPS_NONE;
    if (name_flags(t, named, e->name) & NM_DROPPED)
        return TL_OPS_NONE;
    return TL_OPS_HOST;
}

static int is_annotation(const tl_event *e)
{
    switch ((tl_cat)e->cat) {
    case TL_CAT_USER:
    case TL_CAT_STEP:
    case TL_CAT_DATALOADER:
    case TL_CAT_FORWARD:
    case TL_CAT_BACKWARD:
    case TL_CAT_OPTIMIZER:
    case TL_CAT_GPU_USER:
        return 1;
    default:
        return 0;
    }
}

/* One [memory] record. */
typedef struct memrec {
    int64_t ts;
    int64_t bytes;
    uint16_t device; /* device memory (else host) */
    uint16_t oom;    /* an [OutOfMemory] record: no bytes in the sums */
    int32_t ev;
} memrec;

/* By time, then event: a total order. The records come by thread, each thread's in time order,
 * so a natural merge sort merges as many runs as threads. */
#define MEMREC_BEFORE(a, b, ctx)                                                                   \
    ((void)(ctx), (a)->ts != (b)->ts ? (a)->ts < (b)->ts : (a)->ev < (b)->ev)
TL_NATURAL_MERGE_SORT(memrec_sort, memrec, void *, MEMREC_BEFORE)

/* First index with rec.ts >= x (lower) or > x (upper). */
static size_t mem_bound(const memrec *m, size_t n, int64_t x, int upper)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].ts < x || (upper && m[mid].ts == x))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* mem_bound(m, n, x, 1) for x >= m[from - 1].ts (from = mem_bound of a smaller x): gallop
 * from there, since x is most often close. */
static size_t mem_gallop(const memrec *m, size_t n, size_t from, int64_t x)
{
    size_t lo = from, step = 1;
    while (lo + step <= n && m[lo + step - 1].ts <= x) {
        lo += step;
        step *= 2;
    }
    size_t hi = lo + step <= n ? lo + step - 1 : n; /* m[hi].ts > x, or hi = n */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].ts <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* PyTorch's Input Shapes: the trace's "Input Dims" with every list-of-tensors argument (a
 * list of shapes, e.g. the TensorList of _foreach_add_) shown as [], since KinetoEvent.shapes()
 * keeps tensor shapes only, spaced as Python prints lists ("[[64, 10], []]"). Writes the
 * normalized text to buf (cut to n; n >= strlen(s) * 2 + 1 never cuts). */
static void torch_shapes(const char *s, char *buf, size_t n)
{
    size_t w = 0;
    int depth = 0;
    if (n == 0)
        return;
    for (const char *p = s; *p && w + 1 < n; p++) {
        if (depth == 1 && p[0] == '[' && p[1] == '[') {
            /* a nested list at argument level: skip it, write [] */
            int d = 0;
            const char *q = p;
            for (; *q; q++) {
                if (*q == '[')
                    d++;
                else if (*q == ']' && --d == 0)
                    break;
            }
            if (w + 2 < n) {
                buf[w++] = '[';
                buf[w++] = ']';
            }
            if (!*q)
                break;
            p = q;
            continue;
        }
        if (*p == ' ' || *p == '\t' || *p == '\n')
            continue; /* spacing is rewritten below, whatever the reader kept */
        if (*p == '[')
            depth++;
        else if (*p == ']')
            depth--;
        buf[w++] = *p;
        if (*p == ',' && w + 1 < n)
            buf[w++] = ' ';
    }
    buf[w] = 0;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* A row keeps its shapes' index in 29 bits. */
#define MAX_SHAPES (1u << 29)

/* The distinct normalized shape strings of a table (index 0 = none), fewer than MAX_SHAPES. */
typedef struct shape_set {
    char **str;
    uint32_t n, cap;
    tl_keymap by_hash;
} shape_set;

/* Index of the normalized form of the string with id sid, adding it; 0 for none, -1 = OOM,
 * -2 = a row cannot hold it (MAX_SHAPES). */
static int32_t shape_index(shape_set *ss, const tl_trace *t, uint32_t sid)
{
    if (!sid)
        return 0;
    const char *raw = tl_str(&t->strings, sid);
    size_t len = strlen(raw) * 2 + 1;
    char small[512], *buf = len <= sizeof small ? small : malloc(len);
    if (!buf)
        return -1;
    torch_shapes(raw, buf, len);
    if (!strcmp(buf, "[]")) { /* no shapes: the same row as an event without any */
        if (buf != small)
            free(buf);
        return 0;
    }
    uint64_t h = str_hash(buf);
    int32_t k = tl_keymap_get(&ss->by_hash, h);
    if (k < 0 && ss->n >= MAX_SHAPES) {
        if (buf != small)
            free(buf);
        return -2;
    }
    if (k < 0) {
        if (ss->n == ss->cap) {
            uint32_t nc = ss->cap ? ss->cap * 2 : 64;
            char **ns = realloc(ss->str, nc * sizeof *ns);
            if (!ns)
                goto oom;
            ss->str = ns;
            ss->cap = nc;
        }
        if (ss->n == 0)
            ss->str[ss->n++] = NULL; /* index 0: none */
        char *copy = strdup(buf);
        if (!copy)
            goto oom;
        k = (int32_t)ss->n;
        ss->str[ss->n++] = copy;
        if (tl_keymap_put(&ss->by_hash, h, k) != 0)
            goto oom;
    }
    if (buf != small)
        free(buf);
    return k;
oom:
    if (buf != small)
        free(buf);
    return -1;
}

static void shape_set_free(shape_set *ss)
{
    for (uint32_t i = 0; i < ss->n; i++)
        free(ss->str[i]);
    free(ss->str);
    tl_keymap_free(&ss->by_hash);
}

/* One row of the table, while the view aggregates (48 bytes: a trace of a million distinct
 * names has a million of them; its first start and end are read from its first event). */
typedef struct ops_row {
    int64_t cpu, self_cpu, cuda, self_cuda;
    uint32_t count;       /* at most one an event (nev <= INT32_MAX) */
    uint32_t name;        /* string id, or one of the *_NAME_IDs below */
    uint32_t first_ev;    /* its first appearance: an event, or FIRST_MEMREC | a [memory]
                             record's event; its start and end are read from there */
    uint32_t shapes : 29; /* index in the shape_set (group_by_shape), else 0: < MAX_SHAPES */
    uint32_t late : 1;    /* gpu_user_annotation: after device work with the same span */
    uint32_t device : 1;  /* a device row */
    uint32_t annot : 1;   /* user annotation */
} ops_row;
_Static_assert(sizeof(ops_row) == 48, "an ops row is 48 bytes");

#define STEP_NAME_ID   UINT32_MAX
#define MEMORY_NAME_ID (UINT32_MAX - 1)
#define OOM_NAME_ID    (UINT32_MAX - 2)
#define FIRST_MEMREC   (1u << 31) /* first_ev of a [memory] row: its event has a lower index */

/* A row's name: the trace's string or a literal. */
static const char *row_name(const tl_trace *t, const ops_row *a)
{
    switch (a->name) {
    case STEP_NAME_ID:
        return "ProfilerStep*";
    case MEMORY_NAME_ID:
        return "[memory]";
    case OOM_NAME_ID:
        return "[OutOfMemory]";
    }
    return tl_str(&t->strings, a->name);
}

/* A row's memory sums: made only for a trace with [memory] events. */
typedef struct ops_mem {
    int64_t cpu, self_cpu, cuda, self_cuda;
} ops_mem;

/* Where first_ev starts and ends: an event's span on its device (tl_ops_device_span), a
 * [memory] record's time for both. */
static void first_span(const tl_trace *t, uint32_t first_ev, int64_t *ts, int64_t *end)
{
    if (first_ev & FIRST_MEMREC) {
        *ts = *end = t->ev[first_ev & ~FIRST_MEMREC].ts;
        return;
    }
    int64_t dur;
    tl_ops_device_span(t, &t->ev[first_ev], ts, &dur);
    *end = *ts + dur;
}

/* Rows by first appearance: start, the longer first, Kineto's late annotations after, then
 * the event (a total order: no two rows share their first event). */
static int row_order(const void *pa, const void *pb, void *pt)
{
    const ops_row *a = pa, *b = pb;
    const tl_trace *t = pt;
    int64_t ats, aend, bts, bend;
    first_span(t, a->first_ev, &ats, &aend);
    first_span(t, b->first_ev, &bts, &bend);
    if (ats != bts)
        return ats < bts ? -1 : 1;
    if (aend != bend)
        return aend > bend ? -1 : 1;
    /* Kineto derives gpu_user_annotations from their kernels and lists them after */
    if (a->late != b->late)
        return a->late - b->late;
    return (a->first_ev > b->first_ev) - (a->first_ev < b->first_ev);
}

/* The same as a tl_before_fn of row indices. */
typedef struct rows_of {
    const tl_trace *t;
    const ops_row *rows;
} rows_of;

static int row_before(const void *ctx, int32_t a, int32_t b)
{
    const rows_of *x = ctx;
    return row_order(&x->rows[a], &x->rows[b], (void *)x->t);
}

static int row_before_rev(const void *ctx, int32_t a, int32_t b)
{
    return row_before(ctx, b, a);
}

/* ---- per event: shared with the SQLite export (ops_events.h) ---------------------------- */

int tl_ops_tree(const tl_trace *t, tl_ops_event *in)
{
    size_t n = t->nev;
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1); /* NM_* per id */
    if (!named)
        return -1;
    /* 1. which events are rows, and the tree of kept host events */
    for (size_t i = 0; i < n; i++) {
        const tl_event *e = &t->ev[i];
        tl_ops_event *x = &in[i];
        *x = (tl_ops_event){.eparent = TL_NONE,
                            .kind = (unsigned)row_kind(t, named, e),
                            .async = (e->flags & TL_EV_ASYNC) != 0,
                            .step = (name_flags(t, named, e->name) & NM_STEP) != 0,
                            .annot = (unsigned)is_annotation(e)};
        int32_t p = e->parent;
        if (p != TL_NONE && (size_t)p < i)
            x->eparent = (in[p].kind == TL_OPS_HOST && !in[p].async) ? p : in[p].eparent;
        if (x->kind == TL_OPS_HOST && !x->async && x->eparent != TL_NONE &&
            in[x->eparent].nchild < 2)
            in[x->eparent].nchild++;
    }
    /* 2. _remove_dup_nodes: a span that is its parent's only child and has its name merges
     * into the parent (its children become the parent's). Parents come before children, so
     * eparent is recomputed here with the merges already made above. */
    for (size_t i = 0; i < n; i++) {
        tl_ops_event *x = &in[i];
        int32_t p = t->ev[i].parent;
        if (p != TL_NONE && (size_t)p < i)
            x->eparent = (in[p].kind == TL_OPS_HOST && !in[p].async) ? p : in[p].eparent;
        if (x->kind != TL_OPS_HOST || x->async || x->eparent == TL_NONE)
            continue;
        int32_t q = x->eparent;
        int same = t->ev[q].name == t->ev[i].name || (in[q].step && x->step);
        if (same && in[q].nchild == 1) {
            in[q].nchild = x->nchild;
            x->kind = TL_OPS_NONE;
            x->merged = 1; /* what it owned goes to q = its eparent */
        }
    }
    free(named);
    return 0;
}

void tl_ops_device_span(const tl_trace *t, const tl_event *e, int64_t *ts, int64_t *dur)
{
    *ts = e->ts;
    *dur = e->dur;
    if (e->cat == TL_CAT_GPU_USER && t->source == TL_SRC_KINETO && e->dur >= 2) {
        *ts += 1;
        *dur -= 2;
    }
}

void tl_ops_own_terms(const tl_trace *t, const tl_ops_event *in, size_t i, tl_ops_add_fn add,
                      void *ctx)
{
    /* a device row: its own span is its self and total CUDA; a synchronous host row: its
     * duration is its self CPU, and is not its parent's */
    const tl_event *e = &t->ev[i];
    const tl_ops_event *x = &in[i];
    if (x->kind == TL_OPS_DEVICE) {
        int64_t ts, dur;
        tl_ops_device_span(t, e, &ts, &dur);
        add(ctx, (int32_t)i, TL_OPS_CUDA, dur);
        add(ctx, (int32_t)i, TL_OPS_SELF_CUDA, dur);
    } else if (x->kind == TL_OPS_HOST && !x->async) {
        add(ctx, (int32_t)i, TL_OPS_SELF_CPU, e->dur);
        if (x->eparent != TL_NONE)
            add(ctx, x->eparent, TL_OPS_CHILD_CPU, e->dur);
    }
}

int tl_ops_launches(const tl_trace *t, const tl_ops_event *in, tl_ops_launch **out, size_t *nout)
{
    /* device work: its owner is the innermost kept span around the runtime call that launched
     * it */
    tl_ops_launch *l = NULL;
    size_t n = 0, cap = 0;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (!tl_is_device_work(e))
            continue;
        int32_t ow = tl_launch_owner(t, i, TL_OWNER_ANY_SPAN);
        while (ow != TL_NONE && (in[ow].kind != TL_OPS_HOST || in[ow].async))
            ow = in[ow].eparent;
        if (ow == TL_NONE)
            continue;
        if (tl_grow_array(&l, &cap, n + 1, sizeof *l) != 0) {
            free(l);
            return -1;
        }
        l[n++] = (tl_ops_launch){(int32_t)i, ow};
    }
    *out = l;
    *nout = n;
    return 0;
}

void tl_ops_launch_terms(const tl_trace *t, const tl_ops_event *in, const tl_ops_launch *l,
                         size_t n, tl_ops_add_fn add, void *ctx)
{
    /* Self CUDA of the owner, CUDA total of the owner and every span above it */
    for (size_t k = 0; k < n; k++) {
        int64_t dur = t->ev[l[k].ev].dur;
        add(ctx, l[k].owner, TL_OPS_SELF_CUDA, dur);
        for (int32_t a = l[k].owner; a != TL_NONE; a = in[a].eparent)
            add(ctx, a, TL_OPS_CUDA, dur);
    }
}

int tl_ops_times(const tl_trace *t, const tl_ops_event *in, tl_ops_add_fn add, void *ctx)
{
    for (size_t i = 0; i < t->nev; i++)
        tl_ops_own_terms(t, in, i, add, ctx);
    tl_ops_launch *l;
    size_t n;
    if (tl_ops_launches(t, in, &l, &n) != 0)
        return -1;
    tl_ops_launch_terms(t, in, l, n, add, ctx);
    free(l);
    return 0;
}

/* ---- the table --------------------------------------------------------------------------- */

/* The grouping state of one call. */
typedef struct ops_ctx {
    const tl_trace *t;
    int by_shape;
    ops_row *rows;
    size_t nrows, cap;
    ops_mem *mem;      /* per row, cap of them; NULL without [memory] events */
    tl_keymap maps[4]; /* by class: host/device x annotation or not */
    /* The same without shapes, as arrays indexed by name id (one lookup per event, so no hash):
     * row + 1, 0 = none yet. */
    int32_t *byname[4];
    shape_set shapes;
} ops_ctx;

/* The row for (name, class, shapes), created with its first appearance (ev, spanning ts to
 * end; see first_span); -1 when OOM. */
static int32_t row_for(ops_ctx *x, uint32_t nameid, int device, int annot, uint32_t shapes,
                       int late, int64_t ts, int64_t end, uint32_t ev)
{
    int cls = device * 2 + annot;
    uint64_t key = tl_key2(nameid, shapes);
    int32_t *slot = NULL;
    if (!shapes && nameid < x->t->strings.count) {
        if (!x->byname[cls] &&
            !(x->byname[cls] = calloc(x->t->strings.count, sizeof *x->byname[cls])))
            return -1;
        slot = &x->byname[cls][nameid];
    }
    int32_t r = slot ? *slot - 1 : tl_keymap_get(&x->maps[cls], key);
    if (r >= 0) {
        ops_row *a = &x->rows[r];
        int64_t first_ts, first_end;
        first_span(x->t, a->first_ev, &first_ts, &first_end);
        if (ts < first_ts || (ts == first_ts && end > first_end))
            a->first_ev = ev;
        return r;
    }
    if (x->nrows == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 256;
        ops_row *nr = realloc(x->rows, nc * sizeof *nr);
        if (!nr)
            return -1;
        x->rows = nr;
        if (x->mem) {
            ops_mem *nm = realloc(x->mem, nc * sizeof *nm);
            if (!nm)
                return -1;
            x->mem = nm;
        }
        x->cap = nc;
    }
    r = (int32_t)x->nrows++;
    x->rows[r] = (ops_row){.name = nameid,
                           .shapes = shapes,
                           .device = device != 0,
                           .annot = annot != 0,
                           .late = late != 0,
                           .first_ev = ev};
    if (x->mem)
        x->mem[r] = (ops_mem){0};
    if (slot)
        *slot = r + 1;
    else if (tl_keymap_put(&x->maps[cls], key, r) != 0)
        return -1;
    return r;
}

/* Free what the grouping needs and the rows do not (idempotent: leaves NULLs). */
static void scratch_free(ops_ctx *x, tl_ops_event **in, int32_t **row, uint8_t **named,
                         memrec **mem, int32_t **attributed, int64_t **pc, int64_t **pd)
{
    for (int k = 0; k < 4; k++) {
        tl_keymap_free(&x->maps[k]);
        free(x->byname[k]);
        x->byname[k] = NULL;
    }
    free(*in);
    free(*row);
    free(*named);
    free(*mem);
    free(*attributed);
    free(*pc);
    free(*pd);
    *in = NULL;
    *row = NULL;
    *named = NULL;
    *mem = NULL;
    *attributed = NULL;
    *pc = *pd = NULL;
}

/* The row event i counts in (a row event, one that row_for was asked for), found again as
 * row_for found it: without group_by_shape a row is a name and a class, found by the name's slot
 * or, for the step's and other names without one, in the map; so the view keeps no row an event
 * (4 bytes an event: 9.7 MB of the largest view of the 1 GB trace). With group_by_shape each
 * event's row is kept in row[] (finding it again would normalize its shapes again). */
static int32_t event_row(const ops_ctx *x, const int32_t *row, const tl_ops_event *in, size_t i)
{
    if (row)
        return row[i];
    uint32_t nameid = in[i].step ? STEP_NAME_ID : x->t->ev[i].name;
    int cls = (in[i].kind == TL_OPS_DEVICE) * 2 + in[i].annot;
    if (nameid < x->t->strings.count)
        return x->byname[cls][nameid] - 1;
    return tl_keymap_get(&x->maps[cls], tl_key2(nameid, 0));
}

/* The ops view's sums of an event's time terms (tl_ops_times) into its row. */
typedef struct row_sums {
    ops_row *rows;
    const ops_ctx *x;
    const int32_t *row; /* per event with group_by_shape, else NULL (event_row) */
    const tl_ops_event *in;
} row_sums;

static void add_to_row(void *ctx, int32_t ev, tl_ops_term term, int64_t ns)
{
    const row_sums *c = ctx;
    ops_row *a = &c->rows[event_row(c->x, c->row, c->in, (size_t)ev)];
    switch (term) {
    case TL_OPS_SELF_CPU:
        a->self_cpu = tl_add_sat(a->self_cpu, ns);
        break;
    case TL_OPS_CHILD_CPU:
        a->self_cpu = tl_sub_sat(a->self_cpu, ns);
        break;
    case TL_OPS_SELF_CUDA:
        a->self_cuda = tl_add_sat(a->self_cuda, ns);
        break;
    case TL_OPS_CUDA:
        a->cuda = tl_add_sat(a->cuda, ns);
        break;
    }
}

/* How the rows are written: the columns shown, the sums the percentages are of. */
typedef struct ops_put {
    int map[K_NCOLS]; /* column of each K_*, -1: not shown */
    int has_cuda, nmem, has_cuda_mem, by_shape;
    int kinds_apart; /* tl_view_opts.kinds_apart */
    int64_t sum_self_cpu, sum_self_cuda;
    const shape_set *shapes;
    const tl_trace *t; /* the names */
} ops_put;

/* Row r of tab from a row and its memory sums. */
static void put_row(tl_table *tab, int r, const ops_put *P, const ops_row *a, const ops_mem *m)
{
    const int *map = P->map;
    /* the trace's string or a literal: the table is freed before the trace */
    if (P->kinds_apart && a->device && a->annot) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s [%s annotation]", row_name(P->t, a), tl_accel_name(P->t));
        tl_table_str(tab, r, map[K_NAME], buf);
    } else {
        tl_table_str_ref(tab, r, map[K_NAME], row_name(P->t, a));
    }
    if (P->sum_self_cpu > 0) {
        tl_table_pct(tab, r, map[K_SELF_CPU_PCT],
                     100.0 * (double)a->self_cpu / (double)P->sum_self_cpu);
        tl_table_pct(tab, r, map[K_CPU_TOTAL_PCT],
                     100.0 * (double)a->cpu / (double)P->sum_self_cpu);
    }
    tl_table_time(tab, r, map[K_SELF_CPU], a->self_cpu);
    tl_table_time(tab, r, map[K_CPU_TOTAL], a->cpu);
    tl_table_time(tab, r, map[K_CPU_AVG], tl_avg_round(a->cpu, a->count));
    if (P->has_cuda) {
        tl_table_time(tab, r, map[K_SELF_CUDA], a->self_cuda);
        if (P->sum_self_cuda > 0)
            tl_table_pct(tab, r, map[K_SELF_CUDA_PCT],
                         100.0 * (double)a->self_cuda / (double)P->sum_self_cuda);
        tl_table_time(tab, r, map[K_CUDA_TOTAL], a->cuda);
        tl_table_time(tab, r, map[K_CUDA_AVG], tl_avg_round(a->cuda, a->count));
    }
    if (P->nmem) {
        tl_table_bytes(tab, r, map[K_CPU_MEM], m->cpu);
        tl_table_bytes(tab, r, map[K_SELF_CPU_MEM], m->self_cpu);
    }
    if (P->has_cuda_mem) {
        tl_table_bytes(tab, r, map[K_CUDA_MEM], m->cuda);
        tl_table_bytes(tab, r, map[K_SELF_CUDA_MEM], m->self_cuda);
    }
    tl_table_int(tab, r, map[K_CALLS], a->count);
    if (P->by_shape)
        tl_table_str(tab, r, map[K_SHAPES], a->shapes ? P->shapes->str[a->shapes] : "[]");
}

/* The report's table (made rows): each row as the words of what its columns show. */
typedef struct ops_made {
    ops_put put; /* put.shapes is &shapes */
    shape_set shapes;
    int64_t *w; /* stride words a row */
    int stride;
} ops_made;

/* A row (and its memory sums) to its words (pack) or back; the number of words a row has
 * under P (w NULL: only that). The name's id is the first word. */
static int row_words(const ops_put *P, ops_row *a, ops_mem *m, int64_t *w, int pack)
{
    int64_t *f[11];
    int n = 0;
    int64_t name = a->name, count = a->count, shapes = a->shapes;
    f[n++] = &name;
    f[n++] = &count;
    f[n++] = &a->self_cpu;
    f[n++] = &a->cpu;
    if (P->has_cuda) {
        f[n++] = &a->self_cuda;
        f[n++] = &a->cuda;
    }
    if (P->by_shape)
        f[n++] = &shapes;
    if (P->nmem) {
        f[n++] = &m->cpu;
        f[n++] = &m->self_cpu;
    }
    if (P->has_cuda_mem) {
        f[n++] = &m->cuda;
        f[n++] = &m->self_cuda;
    }
    if (!w)
        return n;
    if (pack) {
        for (int k = 0; k < n; k++)
            w[k] = *f[k];
    } else {
        for (int k = 0; k < n; k++)
            *f[k] = w[k];
        a->name = (uint32_t)name;
        a->count = (uint32_t)count;
        a->shapes = (uint32_t)shapes;
    }
    return n;
}

static void made_fill(const void *ctx, int row, tl_table *one)
{
    const ops_made *m = ctx;
    ops_row a = {0};
    ops_mem mm = {0};
    row_words(&m->put, &a, &mm, m->w + (size_t)row * (size_t)m->stride, 0);
    put_row(one, 0, &m->put, &a, &mm);
}

static void made_free(void *ctx)
{
    ops_made *m = ctx;
    if (m) {
        free(m->w);
        shape_set_free(&m->shapes);
    }
    free(m);
}

/* The [memory] records of the trace in time order, with the running sums of their bytes (host
 * in pc, device in pd; an [OutOfMemory] record counts none): what the ops view's memory
 * columns read, made by a thread of its own while the view builds its tree and rows. */
typedef struct mem_prep {
    const tl_trace *t;
    memrec *mem;
    int64_t *pc, *pd;
    int32_t *attributed; /* nmem + 1 zeros, for the caller */
    size_t nmem, cap;
    int rc;
} mem_prep;

static void *mem_prep_main(void *arg)
{
    mem_prep *p = arg;
    const tl_trace *t = p->t;
    p->rc = -1;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_CATBIT(TL_CAT_MEMORY)); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (e->cat != TL_CAT_MEMORY)
            continue;
        if (tl_grow_array(&p->mem, &p->cap, p->nmem + 1, sizeof *p->mem) != 0)
            return NULL;
        p->mem[p->nmem++] =
            (memrec){e->ts, e->value, (e->flags & TL_EV_MEM_DEVICE) != 0, 0, (int32_t)i};
    }
    size_t n = p->nmem;
    if (!n) {
        p->rc = 0;
        return NULL;
    }
    p->attributed = tl_big_calloc(n + 1, sizeof *p->attributed);
    p->pc = tl_big_alloc((n + 1) * sizeof *p->pc);
    p->pd = tl_big_alloc((n + 1) * sizeof *p->pd);
    if (!p->attributed || !p->pc || !p->pd)
        return NULL;
    /* in event order: sorted already when they are all on one thread */
    for (size_t j = 1; j < n; j++)
        if (MEMREC_BEFORE(&p->mem[j], &p->mem[j - 1], NULL)) {
            memrec *tmp = tl_big_alloc(n * sizeof *tmp), *sorted;
            if (!tmp || !(sorted = memrec_sort(p->mem, tmp, n, NULL))) {
                free(tmp);
                return NULL;
            }
            if (sorted == tmp) {
                free(p->mem);
                p->mem = tmp;
            } else {
                free(tmp);
            }
            break;
        }
    uint32_t last_name = UINT32_MAX; /* the records have a name or two: each looked at once */
    int last_oom = 0;
    p->pc[0] = p->pd[0] = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t name = t->ev[p->mem[j].ev].name;
        if (name != last_name) {
            last_name = name;
            last_oom = !strcmp(tl_str(&t->strings, name), "[OutOfMemory]");
        }
        p->mem[j].oom = (uint16_t)last_oom;
        int64_t b = last_oom ? 0 : p->mem[j].bytes;
        p->pc[j + 1] = tl_add_sat(p->pc[j], p->mem[j].device ? 0 : b);
        p->pd[j + 1] = tl_add_sat(p->pd[j], p->mem[j].device ? b : 0);
    }
    p->rc = 0;
    return NULL;
}

/* The device work and the ops that launched it (tl_ops_launches), found by a thread of its own
 * once the tree is made, while the view makes its rows. */
typedef struct launches_job {
    const tl_trace *t;
    const tl_ops_event *in;
    tl_ops_launch *l;
    size_t n;
    int rc;
} launches_job;

static void *launches_main(void *arg)
{
    launches_job *j = arg;
    j->rc = tl_ops_launches(j->t, j->in, &j->l, &j->n);
    return NULL;
}

tl_table *tl_view_ops(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    size_t n = t->nev;
    /* per-event scratch: 8 bytes an event (12 with group_by_shape: the row), so that a
     * 4-million-event trace needs 32 MB here */
    int by_shape = o && o->group_by_shape;
    tl_ops_event *in = tl_big_alloc((n ? n : 1) * sizeof *in);
    int32_t *row = by_shape ? tl_big_alloc((n ? n : 1) * sizeof *row) : NULL; /* -1: none */
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1);      /* NM_* per id */
    memrec *mem = NULL;
    int32_t *attributed = NULL;
    int64_t *pc = NULL, *pd = NULL;
    size_t nmem = 0;
    ops_ctx X = {.t = t, .by_shape = by_shape};
    ops_row *rows = NULL;
    size_t nrows = 0;
    tl_table *tab = NULL;
    mem_prep mp = {.t = t};
    launches_job lj = {.t = t, .in = in};
    tl_runner mr, lr;
    int prep_apart = 0, prep_running = 0, launches_running = 0;
    if (!in || (by_shape && !row) || !named)
        goto oom;
    prep_apart = tl_view_parts(t, n) > 1;
    tl_run_apart(&mr, mem_prep_main, &mp, prep_apart);
    prep_running = 1;

    /* 1, 2. which events are rows, the tree of kept host events; then the ops that launched
     * the device work are found beside the rows */
    if (tl_ops_tree(t, in) != 0)
        goto oom;
    tl_run_apart(&lr, launches_main, &lj, prep_apart);
    launches_running = 1;
    /* 3. rows, CPU totals, and each event's own time terms into its row (tl_ops_own_terms) */
    for (size_t i = 0; i < n; i++) {
        const tl_event *e = &t->ev[i];
        const tl_ops_event *x = &in[i];
        if (row)
            row[i] = -1;
        if (x->kind == TL_OPS_NONE)
            continue;
        uint32_t nameid = x->step ? STEP_NAME_ID : e->name;
        int64_t ts, dur;
        tl_ops_device_span(t, e, &ts, &dur);
        uint32_t shapes = 0;
        if (X.by_shape && e->args) {
            int32_t si = shape_index(&X.shapes, t, e->args);
            if (si == -2) {
                tl_error_setc(err, TL_ERR_INPUT,
                              "ops view: more than %u distinct input shapes: group by name "
                              "(without --group-by-shape)",
                              MAX_SHAPES - 1);
                goto fail;
            }
            if (si < 0)
                goto oom;
            shapes = (uint32_t)si;
        }
        int device = x->kind == TL_OPS_DEVICE;
        int32_t r = row_for(&X, nameid, device, x->annot, shapes, e->cat == TL_CAT_GPU_USER, ts,
                            ts + dur, (uint32_t)i);
        if (r < 0)
            goto oom;
        if (row)
            row[i] = r;
        ops_row *a = &X.rows[r];
        a->count++;
        if (!device)
            a->cpu = tl_add_sat(a->cpu, dur);
        tl_ops_own_terms(t, in, i, add_to_row, &(row_sums){X.rows, &X, row, in});
    }
    /* device work: to the op that launched it and every op above it */
    tl_run_wait(&lr);
    launches_running = 0;
    if (lj.rc != 0)
        goto oom;
    tl_ops_launch_terms(t, in, lj.l, lj.n, add_to_row, &(row_sums){X.rows, &X, row, in});
    free(lj.l);
    lj.l = NULL;
    /* 4. memory: records sorted by time; each host event takes those in [start, end] (on any
     * thread, as torch does); records in no event become rows of their own */
    tl_run_wait(&mr);
    prep_running = 0;
    mem = mp.mem;
    pc = mp.pc;
    pd = mp.pd;
    attributed = mp.attributed;
    nmem = mp.nmem;
    mp.mem = NULL;
    mp.pc = mp.pd = NULL;
    mp.attributed = NULL;
    if (mp.rc != 0)
        goto oom;
    if (nmem) {
        X.mem = calloc(X.cap ? X.cap : 1, sizeof *X.mem);
        if (!X.mem)
            goto oom;
        /* Events of a track come by start: the lower bound only moves forward along a track,
         * and the upper one is near it for all but the longest events. */
        uint32_t track = UINT32_MAX;
        size_t lo = 0;
        for (size_t i = 0; i < n; i++) {
            const tl_event *e = &t->ev[i];
            const tl_ops_event *x = &in[i];
            if (x->kind != TL_OPS_HOST && !x->merged)
                continue;
            if (e->track != track) {
                track = e->track;
                lo = mem_bound(mem, nmem, e->ts, 0);
            }
            while (lo < nmem && mem[lo].ts < e->ts)
                lo++;
            size_t hi = mem_gallop(mem, nmem, lo, e->ts + e->dur);
            if (hi <= lo)
                continue;
            attributed[lo]++;
            attributed[hi]--;
            if (x->merged)
                continue; /* gone from torch's list: its bytes are in its parent's */
            int64_t hc = tl_sub_sat(pc[hi], pc[lo]), dc = tl_sub_sat(pd[hi], pd[lo]);
            ops_mem *a = &X.mem[event_row(&X, row, in, i)]; /* rows are not ordered yet */
            a->cpu = tl_add_sat(a->cpu, hc);
            a->cuda = tl_add_sat(a->cuda, dc);
            if (x->async)
                continue;
            a->self_cpu = tl_add_sat(a->self_cpu, hc);
            a->self_cuda = tl_add_sat(a->self_cuda, dc);
            if (x->eparent != TL_NONE) {
                ops_mem *pa = &X.mem[event_row(&X, row, in, (size_t)x->eparent)];
                pa->self_cpu = tl_sub_sat(pa->self_cpu, hc);
                pa->self_cuda = tl_sub_sat(pa->self_cuda, dc);
            }
        }
        int32_t run = 0;
        for (size_t j = 0; j < nmem; j++) {
            run += attributed[j];
            if (run > 0)
                continue;
            const memrec *m = &mem[j];
            int32_t r = row_for(&X, m->oom ? OOM_NAME_ID : MEMORY_NAME_ID, 0, 0, 0, 0, m->ts, m->ts,
                                FIRST_MEMREC | (uint32_t)m->ev);
            if (r < 0)
                goto oom;
            X.rows[r].count++;
            ops_mem *a = &X.mem[r];
            int64_t *v = m->device ? &a->cuda : &a->cpu;
            int64_t *s = m->device ? &a->self_cuda : &a->self_cpu;
            *v = tl_add_sat(*v, m->bytes);
            *s = tl_add_sat(*s, m->bytes);
        }
    }
    /* The per-event and per-name scratch is done with: freed before the table is built, so
     * that the table (a row per distinct name) does not add to it. */
    scratch_free(&X, &in, &row, &named, &mem, &attributed, &pc, &pd);
    rows = X.rows;
    nrows = X.nrows;
    int lazy = o && o->made_rows && nrows > 0 && nrows <= INT_MAX; /* none: held, empty */
    /* made rows: first appearance first; held: the last first, see 6. An index sorted, then
     * the rows and their memory sums moved into its order in place: 4 bytes a row (qsort_r of
     * 56-byte rows took 16 more, and each row carried its index for the memory sums) */
    if (nrows > 1) {
        int32_t *perm = nrows <= INT32_MAX ? malloc(nrows * sizeof *perm) : NULL;
        if (!perm)
            goto oom;
        for (size_t r = 0; r < nrows; r++)
            perm[r] = (int32_t)r;
        tl_sort_index(perm, nrows, lazy ? row_before : row_before_rev, &(rows_of){t, rows});
        ops_row held;
        tl_permute(rows, nrows, sizeof *rows, perm, &held);
        ops_mem mheld;
        if (X.mem)
            tl_permute(X.mem, nrows, sizeof *X.mem, perm, &mheld);
        free(perm);
    }
    ops_put P = {.nmem = nmem > 0,
                 .by_shape = X.by_shape,
                 .kinds_apart = o && o->kinds_apart,
                 .shapes = &X.shapes,
                 .t = t};
    for (size_t r = 0; r < nrows; r++)
        if (rows[r].self_cuda > 0)
            P.has_cuda = 1;

    /* 6. the table: columns as torch shows them */
    for (size_t r = 0; r < nrows; r++) {
        P.sum_self_cpu = tl_add_sat(P.sum_self_cpu, rows[r].self_cpu);
        if (rows[r].device && !rows[r].annot)
            P.sum_self_cuda = tl_add_sat(P.sum_self_cuda, rows[r].self_cuda);
        if (X.mem && X.mem[r].self_cuda > 0)
            P.has_cuda_mem = 1;
    }
    int use[K_NCOLS];
    tl_col cols[K_NCOLS];
    int ncols = 0;
    for (int c = 0; c < K_NCOLS; c++) {
        use[c] = 1;
        if (c >= K_SELF_CUDA && c <= K_CUDA_AVG)
            use[c] = P.has_cuda;
        if (c == K_CPU_MEM || c == K_SELF_CPU_MEM)
            use[c] = nmem > 0;
        if (c == K_CUDA_MEM || c == K_SELF_CUDA_MEM)
            use[c] = P.has_cuda_mem;
        if (c == K_SHAPES)
            use[c] = P.by_shape;
        P.map[c] = use[c] ? ncols : -1;
        if (use[c])
            cols[ncols++] = all_cols[c];
    }
    size_t over = 0; /* rows whose Self CUDA passes the total (a note) */
    const char *over_name = NULL;
    for (size_t k = 0; k < nrows; k++) { /* in the table's order before any sort */
        const ops_row *a = &rows[lazy ? k : nrows - 1 - k];
        if (P.sum_self_cuda > 0 && a->self_cuda > P.sum_self_cuda && !over++)
            over_name = row_name(t, a);
    }
    uint32_t nshapes = X.shapes.n;
    if (lazy) {
        /* The rows, packed to the columns shown (in place where they fit: 4 to 11 words a
         * row against an ops_row's 7), become a table of made rows; the memory sums go into
         * the words and are freed. */
        ops_made *m = calloc(1, sizeof *m);
        if (!m)
            goto oom;
        m->put = P;
        m->shapes = X.shapes; /* the table's now */
        memset(&X.shapes, 0, sizeof X.shapes);
        m->put.shapes = &m->shapes;
        m->stride = row_words(&m->put, &(ops_row){0}, &(ops_mem){0}, NULL, 0);
        int fits = (size_t)m->stride * sizeof(int64_t) <= sizeof(ops_row);
        m->w = fits ? (int64_t *)(void *)rows : malloc((nrows ? nrows : 1) * (size_t)m->stride * 8);
        if (!m->w) {
            made_free(m);
            goto oom;
        }
        static const ops_mem none;
        for (size_t k = 0; k < nrows; k++) {
            ops_row a = rows[k]; /* a copy: the words may overwrite it */
            ops_mem mm = X.mem ? X.mem[k] : none;
            row_words(&m->put, &a, &mm, m->w + k * (size_t)m->stride, 1);
        }
        if (fits) {
            X.rows = rows = NULL; /* the words' now */
            int64_t *nw = realloc(m->w, (nrows ? nrows : 1) * (size_t)m->stride * 8);
            if (nw)
                m->w = nw;
        }
        free(X.mem);
        X.mem = NULL;
        tab = tl_table_new_rows("Ops", "ops", cols, ncols, (int)nrows, made_fill, m, made_free);
        if (!tab)
            goto oom;
    } else {
        tab = tl_table_new("Ops", "ops", cols, ncols);
        if (!tab || nrows > INT_MAX || tl_table_reserve(tab, (int)nrows) != 0)
            goto oom;
        /* The rows are in reverse order: the table takes them from the end of the array,
         * which gives back its memory as the table grows, so that a row per distinct name is
         * held once (as a row, then as cells), not twice. */
        static const ops_mem none;
        for (size_t k = 0; k < nrows; k++) {
            size_t i = nrows - 1 - k;
            int r = tl_table_add_row(tab);
            if (r < 0)
                goto oom;
            put_row(tab, r, &P, &rows[i], X.mem ? &X.mem[i] : &none);
            if (i % 65536 == 0 && i > 0) {
                ops_row *nr = realloc(X.rows, i * sizeof *nr);
                if (nr)
                    X.rows = rows = nr;
            }
        }
        free(X.rows);
        X.rows = rows = NULL;
    }

    /* 7. sort and cut: torch's attribute names work as keys; a key of a column that is not
     * shown (all its values are zero) keeps the order of first appearance, as torch would */
    {
        tl_view_opts vo = o ? *o : (tl_view_opts){0};
        const char *key = o && o->sort ? resolve_sort(o->sort)
                          : P.has_cuda ? "self_cuda_us"
                                       : "cpu_total_us";
        int known_hidden = 0;
        if (key && tl_table_find_col(tab, key) < 0)
            for (int c = 0; c < K_NCOLS; c++)
                if (!use[c] &&
                    (!strcasecmp(key, all_cols[c].key) || !strcasecmp(key, all_cols[c].title)))
                    known_hidden = 1;
        vo.sort = known_hidden ? NULL : key;
        if (vo.sort && tl_table_find_col(tab, vo.sort) < 0) {
            tl_error_setc(err, TL_ERR_USAGE,
                          "unknown sort key '%s' for the ops table; expected a column key "
                          "(self_cpu_us, cpu_total_us, self_cuda_us, cuda_total_us, calls, "
                          "cpu_mem_bytes, ...), a torch key (cpu_time_total, "
                          "self_cuda_time_total, count, cpu_memory_usage, ...) or none",
                          o && o->sort ? o->sort : key);
            goto fail;
        }
        if (vo.sort) {
            if (tl_view_sort(tab, &vo, NULL, 0, err) != 0)
                goto fail;
        } else if (vo.top > 0) {
            tl_table_truncate(tab, vo.top);
        }
    }
    {
        char s[32];
        tl_fmt_time(s, sizeof s, P.sum_self_cpu, TL_UNIT_AUTO);
        tl_table_note(tab, "Self CPU time total: %s", s);
        if (P.has_cuda) {
            tl_fmt_time(s, sizeof s, P.sum_self_cuda, TL_UNIT_AUTO);
            tl_table_note(tab, "Self CUDA time total: %s", s);
        }
        if (!nrows)
            tl_table_note(tab, "No events in this trace.");
        /* Self CUDA % is PyTorch's: over the device work rows; a GPU annotation's Self CUDA is
         * its span on the GPU, idle time included, so its share can pass 100% */
        if (over)
            tl_table_note(tab,
                          "Self CUDA %% passes 100%% on %zu row%s (%s): a GPU annotation's Self "
                          "CUDA is its span on the GPU, idle time included, and the %% is of "
                          "the device work (kernels, copies, memsets), as in PyTorch's table.",
                          over, over == 1 ? "" : "s", over_name);
        if (P.by_shape && nshapes == 0 && nrows) {
            tl_table_note(tab, "This trace has no input shapes (recorded without "
                               "record_shapes=True?): one row per name, Input Shapes [].");
            tl_table_note_is_why_empty(tab);
        }
    }
    goto done;
oom:
    tl_error_setc(err, TL_ERR_NOMEM, "ops view: out of memory");
fail:
    tl_table_free(tab);
    tab = NULL;
done:
    if (launches_running)
        tl_run_wait(&lr);
    free(lj.l);
    if (prep_running)
        tl_run_wait(&mr);
    free(mp.mem);
    free(mp.pc);
    free(mp.pd);
    free(mp.attributed);
    scratch_free(&X, &in, &row, &named, &mem, &attributed, &pc, &pd);
    shape_set_free(&X.shapes);
    free(X.rows);
    free(X.mem);
    return tab;
}
