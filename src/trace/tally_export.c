/*
 * tally_export.c — a .tally file to Chrome trace JSON in bounded memory, without the trace
 * model: what `tally export FILE.tally` runs, so also what a profiled program that asked for
 * JSON gets (its host starts `tally export --background`). The model-based export holds every
 * event (~100 bytes each with its strings: hundreds of MB for a few million ranges); this holds
 * what is open.
 *
 * The decoder (tally_decode.c) runs twice over the file's index, reading one chunk at a time with
 * pread into a reused buffer. The first pass writes nothing: it finds what the JSON needs before
 * its first event, where the trace begins (the base of every ts) and ends and whether the file
 * has steps, and counts, per correlation id, the runtime calls, driver calls and device events
 * that carry it. The second pass writes each event as soon as it is complete: marks, counters,
 * device work and runtime calls at once, a range when the decoder ends it (its text copied while
 * it is open). Ranges never ended are written last, drawn to the end of the trace and flagged,
 * as the model reader does (tally_reader.c); so are steps.
 *
 * Flows: the model links a runtime call (the first runtime call of a correlation id in its event
 * order, else the first driver call) to the first device event of that id in its event order
 * (track, start, longer first, then the order the reader added them), and the writer draws one
 * flow between the two. Here, for an id with exactly one such call and one device event (a
 * kernel launch), each end of the flow is written with its event; for an id with more on either
 * side, which one comes first is known only when all have been seen, so those flows are written
 * at the end.
 *
 * Memory: the index of chunks, the call sites and tracks, the largest chunk, the ranges open at
 * a time (begin/end ranges ended on another thread wait until that thread is decoded), a byte
 * per correlation id in the ranges of ids the file uses (4 KB pages), and the ids with more than
 * one call or device event. Nothing per push range, mark, counter or step.
 */
#include "trace/tally_export.h"
#include "trace/chrome_json.h"
#include "trace/checked.h"
#include "trace/grow_array.h"
#include "trace/tally_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A range still open: its event, with its text copied when the decoder gave text. */
typedef struct pending {
    tl_event e;
    int64_t order; /* its place in decoding order: the model's order of insertion */
    uint32_t site_file, site_func, site_line; /* its call site (tl_tally_ev) */
    char *name, *args; /* owned buffers, kept for reuse when the entry is free */
    uint32_t name_len, args_len, name_cap, args_cap;
    int64_t next_free; /* -2 while in use */
} pending;

/* Where an event sorts in the model (ev_before in model.c), for the flows decided at the end. */
typedef struct ev_key {
    uint32_t track;
    int step; /* a step (sorts first among equal spans) */
    int64_t ts, dur, order;
} ev_key;

static int key_before(const ev_key *a, const ev_key *b)
{
    return tl_sorts_before(a->track, a->ts, a->dur, a->step, (uint64_t)a->order, b->track, b->ts,
                           b->dur, b->step, (uint64_t)b->order);
}

/* A correlation id with more than one call or device event: the first of each so far. */
typedef struct deferred_flow {
    int64_t corr;
    ev_key call, dev;
    int have_call, have_dev;
} deferred_flow;

/* Per correlation id, 2 bits each: runtime calls, driver calls, device events (0, 1, 2 = more). */
enum { CORR_RT = 0, CORR_DRV = 2, CORR_DEV = 4 };
#define CORR_PAGE_BITS 12

typedef struct stream {
    tl_tally_dec *d;
    tl_trace *t; /* the file's metadata, tracks and call-site strings; no events */
    int pass;    /* 1: measure, 2: write */
    tl_json *w;
    int64_t order; /* events handed over so far in this pass */

    pending *pool;
    size_t npool, cap_pool;
    int64_t free_head; /* -1: none */

    /* pass 1: the span of the events (tl_trace_span), steps apart until it is known whether
     * the file keeps them */
    int64_t t0, t1, step_t0, step_t1;
    int keep_steps; /* pass 2: the file has a STEP_END */
    int64_t base, end;

    tl_u64map corr_pages; /* id >> CORR_PAGE_BITS -> index in corr_page */
    uint8_t **corr_page;
    size_t ncorr_pages, cap_corr_pages;
    tl_u64map deferred_map; /* id -> index in deferred */
    deferred_flow *deferred;
    size_t ndeferred, cap_deferred;

    /* the last STEP_END: its step and sample count, for the step span it closes next */
    int64_t samples_step, samples;
    int have_samples;

    size_t nev; /* events written */
} stream;

static int is_call(const tl_event *e)
{
    return e->corr && (e->cat == TL_CAT_RUNTIME || e->cat == TL_CAT_DRIVER);
}

static int is_device_work(const tl_event *e)
{
    return e->corr && tl_cat_is_device((tl_cat)e->cat) && e->cat != TL_CAT_GPU_USER;
}

/* The counts byte of id; created (zero) when create, else NULL when absent. NULL when out of
 * memory. */
static uint8_t *corr_counts(stream *s, int64_t id, int create)
{
    uint64_t pg = (uint64_t)id >> CORR_PAGE_BITS;
    uint64_t *k = tl_u64map_get(&s->corr_pages, pg);
    if (!k) {
        if (!create)
            return NULL;
        if (tl_grow_array(&s->corr_page, &s->cap_corr_pages, s->ncorr_pages + 1,
                          sizeof *s->corr_page) != 0)
            return NULL;
        uint8_t *page = calloc(1, 1u << CORR_PAGE_BITS);
        if (!page || tl_u64map_put(&s->corr_pages, pg, s->ncorr_pages) != 0) {
            free(page);
            return NULL;
        }
        s->corr_page[s->ncorr_pages++] = page;
        k = tl_u64map_get(&s->corr_pages, pg);
    }
    return &s->corr_page[*k][(uint64_t)id & ((1u << CORR_PAGE_BITS) - 1)];
}

static int corr_count(uint8_t b, int field)
{
    return (b >> field) & 3;
}

/* Pass 1: count e's side of its correlation id. */
static int count_corr(stream *s, const tl_event *e)
{
    int field = e->cat == TL_CAT_RUNTIME ? CORR_RT : e->cat == TL_CAT_DRIVER ? CORR_DRV : CORR_DEV;
    uint8_t *b = corr_counts(s, e->corr, 1);
    if (!b)
        return -1;
    if (corr_count(*b, field) < 2)
        *b = (uint8_t)(*b + (1u << field));
    return 0;
}

static int defer_flow_end(stream *s, const tl_event *e, int64_t order, int device)
{
    uint64_t *i = tl_u64map_get(&s->deferred_map, (uint64_t)e->corr);
    if (!i) {
        if (tl_grow_array(&s->deferred, &s->cap_deferred, s->ndeferred + 1, sizeof *s->deferred) !=
            0)
            return -1;
        if (tl_u64map_put(&s->deferred_map, (uint64_t)e->corr, s->ndeferred) != 0)
            return -1;
        memset(&s->deferred[s->ndeferred], 0, sizeof *s->deferred);
        s->deferred[s->ndeferred].corr = e->corr;
        i = tl_u64map_get(&s->deferred_map, (uint64_t)e->corr);
        s->ndeferred++;
    }
    deferred_flow *f = &s->deferred[*i];
    ev_key k = {e->track, e->cat == TL_CAT_STEP, e->ts, e->dur, order};
    ev_key *best = device ? &f->dev : &f->call;
    int *have = device ? &f->have_dev : &f->have_call;
    /* the model's links (compute_links): the first device event; the call started last */
    if (!*have || (!device && k.ts > best->ts) ||
        ((device || k.ts == best->ts) && key_before(&k, best)))
        *best = k;
    *have = 1;
    return 0;
}

/* Pass 2: the end of a flow that e is, written now, or decided at the end. */
static int flow_end(stream *s, const tl_event *e, int64_t order)
{
    int device = is_device_work(e);
    if (!device && !is_call(e))
        return 0;
    uint8_t *b = corr_counts(s, e->corr, 0);
    if (!b)
        return 0;
    int rt = corr_count(*b, CORR_RT), drv = corr_count(*b, CORR_DRV);
    int dev = corr_count(*b, CORR_DEV), calls = rt ? rt : drv;
    if (!dev || !calls)
        return 0; /* no flow: nothing launched, or no call launched it */
    if (!device && e->cat != (rt ? TL_CAT_RUNTIME : TL_CAT_DRIVER))
        return 0; /* a driver call inside the runtime call that owns the id */
    if (calls == 1 && dev == 1) {
        tl_json_flow(s->w, device, &s->t->tracks[e->track], e->corr, e->ts);
        return 0;
    }
    return defer_flow_end(s, e, order, device);
}

/* The call site file:line func of an event (string ids; file 0: none) into x. */
static void site_extra(const stream *s, tl_json_extra *x, uint32_t file, uint32_t func,
                       uint32_t line)
{
    const tl_strtab *st = &s->t->strings;
    if (!file || file >= st->count)
        return;
    x->file = tl_str(st, file);
    x->file_len = st->len[file];
    x->func = tl_str(st, func);
    x->func_len = func < st->count ? st->len[func] : 0;
    x->line = line;
}

/* A thread's [memory] event is written with its row of the memory table (sink_memory): the
 * row holds what the event does and more. */
static int memory_from_row(const stream *s, const tl_event *e)
{
    return tl_is_memory_record_event(s->t, e);
}

/* A complete event: measured (pass 1) or written (pass 2). site: its call site (string ids). */
static int done(stream *s, const tl_event *e, int64_t order, const char *name, size_t name_len,
                const char *args, size_t args_len, const uint32_t site[3])
{
    if (s->pass == 1) {
        if (e->cat == TL_CAT_STEP) {
            s->step_t0 = e->ts < s->step_t0 ? e->ts : s->step_t0;
            int64_t end = tl_add_sat(e->ts, e->dur);
            s->step_t1 = end > s->step_t1 ? end : s->step_t1;
        } else if (e->cat != TL_CAT_COUNTER) {
            int64_t end = tl_add_sat(e->ts, e->dur);
            s->t0 = e->ts < s->t0 ? e->ts : s->t0;
            s->t1 = end > s->t1 ? end : s->t1;
        }
        return is_call(e) || is_device_work(e) ? count_corr(s, e) : 0;
    }
    if ((e->cat == TL_CAT_STEP && !s->keep_steps) || memory_from_row(s, e))
        return 0;
    tl_json_extra x = {-1, NULL, NULL, 0, 0, 0};
    if (e->cat == TL_CAT_STEP) /* a kept step: the file has STEP_ENDs, the model gives a count */
        x.samples = s->have_samples && s->samples_step == e->value ? s->samples : 0;
    site_extra(s, &x, site[0], site[1], site[2]);
    tl_json_event(s->w, &s->t->tracks[e->track], e, name, name_len, args, args_len, &x);
    s->nev++;
    return flow_end(s, e, order);
}

static inline const char *id_text(const stream *s, uint32_t id, size_t *len)
{
    *len = id < s->t->strings.count ? s->t->strings.len[id] : 0;
    return tl_str(&s->t->strings, id);
}

/* Copy text into an entry's buffer. */
static int keep_text(char **buf, uint32_t *cap, uint32_t *len, const char *text, uint32_t n)
{
    *len = 0;
    if (!n)
        return 0;
    if (n > *cap) {
        char *nb = realloc(*buf, n);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = n;
    }
    memcpy(*buf, text, n);
    *len = n;
    return 0;
}

static int64_t take_entry(stream *s)
{
    if (s->free_head >= 0) {
        int64_t i = s->free_head;
        s->free_head = s->pool[i].next_free;
        return i;
    }
    size_t old = s->cap_pool;
    if (tl_grow_array(&s->pool, &s->cap_pool, s->npool + 1, sizeof *s->pool) != 0)
        return -1;
    memset(s->pool + old, 0, (s->cap_pool - old) * sizeof *s->pool); /* no text buffers yet */
    return (int64_t)s->npool++;
}

static int64_t sink_open(void *ctx, const tl_tally_ev *x)
{
    stream *s = ctx;
    int64_t order = s->order++;
    size_t nl = x->name_len, al = x->args_len;
    const char *name = x->name, *args = x->args;
    if (x->e.name != TL_TALLY_TEXT)
        name = id_text(s, x->e.name, &nl);
    if (x->e.args != TL_TALLY_TEXT)
        args = id_text(s, x->e.args, &al);
    uint32_t site[3] = {x->site_file, x->site_func, x->site_line};
    if (x->site > UINT16_MAX) /* past what the model names (tl_event.site): as it writes */
        site[0] = site[1] = site[2] = 0;
    if (x->e.dur >= 0)
        return done(s, &x->e, order, name, nl, args, al, site) != 0 ? -1 : 0;
    int64_t ref = take_entry(s);
    if (ref < 0)
        return -1;
    pending *p = &s->pool[ref];
    p->e = x->e;
    p->order = order;
    p->site_file = site[0];
    p->site_func = site[1];
    p->site_line = site[2];
    p->next_free = -2;
    p->name_len = p->args_len = 0;
    if (s->pass == 2 && (keep_text(&p->name, &p->name_cap, &p->name_len, name, (uint32_t)nl) ||
                         keep_text(&p->args, &p->args_cap, &p->args_len, args, (uint32_t)al)))
        return -1;
    return ref;
}

static int finish_entry(stream *s, int64_t ref, int64_t end, uint16_t flags)
{
    pending *p = &s->pool[ref];
    p->e.dur = tl_tally_dur(p->e.ts, end);
    p->e.flags |= flags;
    uint32_t site[3] = {p->site_file, p->site_func, p->site_line};
    int rc = done(s, &p->e, p->order, p->name, p->name_len, p->args, p->args_len, site);
    p = &s->pool[ref];
    p->next_free = s->free_head;
    s->free_head = ref;
    return rc;
}

static int sink_close(void *ctx, int64_t ref, int64_t end, uint16_t flags)
{
    return finish_entry(ctx, ref, end, flags);
}

/* A STEP_END: the step span it closes (the decoder closes it next) carries the count. The
 * model reader looks the count up by step number over the whole file; a step is closed by the
 * STEP_END of its own number, so the last one is the one. */
static int sink_samples(void *ctx, int64_t step, int64_t samples)
{
    stream *s = ctx;
    s->samples_step = step;
    s->samples = samples;
    s->have_samples = 1;
    return 0;
}

/* A row of the memory table: written in pass 2 with everything it holds (a host thread's; a
 * stream's, from CUPTI's memory activity, goes out as the device event it came with). */
static int sink_memory(void *ctx, const tl_memev *m)
{
    stream *s = ctx;
    if (s->pass == 2 && m->track < s->t->ntracks &&
        s->t->tracks[m->track].kind == TL_TRACK_THREAD) {
        tl_json_memory(s->w, s->t, &s->t->tracks[m->track], m);
        /* counted as the model counts: an allocation or free is an event there too, a label
         * or a block live at the window's start only a row */
        if (!(m->flags & (TL_MEM_LABEL | TL_MEM_LIVE)))
            s->nev++;
    }
    return 0;
}

/* After a pass: what was never ended, as the model reader closes it (tally_reader.c). */
static int finish_pass(stream *s)
{
    int64_t end = tl_tally_end(s->d);
    for (size_t i = 0; i < s->npool; i++) {
        pending *p = &s->pool[i];
        if (p->next_free != -2)
            continue;
        if (p->e.cat == TL_CAT_STEP) { /* a step never ended is no step */
            p->next_free = s->free_head;
            s->free_head = (int64_t)i;
        } else if (finish_entry(s, (int64_t)i, end, TL_EV_UNCLOSED) != 0) {
            return -1;
        }
    }
    return 0;
}

static int run_pass(stream *s, int pass)
{
    tl_tally_sink sink = {s, sink_open, sink_close, sink_samples, sink_memory};
    s->pass = pass;
    s->order = 0;
    s->have_samples = 0;
    return tl_tally_decode(s->d, &sink) != 0 ? -1 : finish_pass(s);
}

static void deferred_flows(stream *s)
{
    for (size_t i = 0; i < s->ndeferred; i++) {
        const deferred_flow *f = &s->deferred[i];
        if (!f->have_call || !f->have_dev)
            continue;
        tl_json_flow(s->w, 0, &s->t->tracks[f->call.track], f->corr, f->call.ts);
        tl_json_flow(s->w, 1, &s->t->tracks[f->dev.track], f->corr, f->dev.ts);
    }
}

/* Both passes into the writer opened on path (or f); trace_name goes in the file. */
static int convert(stream *s, const char *path, FILE *f, const char *trace_name, tl_error *err)
{
    s->t0 = s->step_t0 = INT64_MAX;
    s->t1 = s->step_t1 = INT64_MIN;
    s->free_head = -1;
    if (run_pass(s, 1) != 0)
        return -1;
    /* the span as tl_trace_span gives it, over the events the model keeps */
    s->keep_steps = s->d->walk.any_step_end;
    if (s->keep_steps) {
        s->t0 = s->step_t0 < s->t0 ? s->step_t0 : s->t0;
        s->t1 = s->step_t1 > s->t1 ? s->step_t1 : s->t1;
    }
    if (s->t0 > s->t1)
        s->t0 = s->t1 = 0;
    if (!(s->w = tl_json_open(path, f, err)))
        return -1;
    tl_json_header(s->w, s->t, s->t0);
    int rc = run_pass(s, 2);
    if (rc == 0) {
        deferred_flows(s);
        tl_json_tracks(s->w, s->t);
    }
    /* closed either way: a failed conversion leaves no open file */
    if (tl_json_close(s->w, s->t1, trace_name, s->t, err) != 0)
        rc = -1;
    s->w = NULL;
    return rc;
}

static void stream_free(stream *s)
{
    for (size_t i = 0; i < s->npool; i++) {
        free(s->pool[i].name);
        free(s->pool[i].args);
    }
    free(s->pool);
    for (size_t i = 0; i < s->ncorr_pages; i++)
        free(s->corr_page[i]);
    free(s->corr_page);
    tl_u64map_free(&s->corr_pages);
    tl_u64map_free(&s->deferred_map);
    free(s->deferred);
}

int tl_is_tally_file(const char *path)
{
    char magic[8];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* only a regular file can be read again after its magic: a pipe goes through tl_load */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    ssize_t n = pread(fd, magic, sizeof magic, 0);
    close(fd);
    return n == (ssize_t)sizeof magic && memcmp(magic, TALLY__MAGIC, sizeof magic) == 0;
}

/* Index the file (data[len] in memory, or open on fd) and convert it into path or f. */
static int export_file(const void *data, int fd, size_t len, const char *name, const char *path,
                       FILE *f, const char *trace_name, size_t *nev, tl_error *err)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_tally_dec d;
    stream s;
    memset(&s, 0, sizeof s);
    s.d = &d;
    s.t = &t;
    int rc = tl_tally_open(&d, &t, data, fd, len, name, err);
    if (rc == 0)
        rc = convert(&s, path, f, trace_name, err);
    if (nev)
        *nev = s.nev;
    stream_free(&s);
    tl_tally_close(&d);
    tl_trace_free(&t);
    return rc;
}

int tl_tally_export_mem(const void *data, size_t len, const char *name, FILE *out, size_t *nev,
                        tl_error *err)
{
    return export_file(data, -1, len, name, NULL, out, name, nev, err);
}

int tl_tally_export(const char *in, const char *out, size_t *nev, tl_error *err)
{
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot open: %s", in, strerror(errno));
        return -1;
    }
    struct stat st, ost;
    if (fstat(fd, &st) != 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", in, strerror(errno));
        close(fd);
        return -1;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    size_t len = (size_t)st.st_size, n = strlen(out);
    char tmp[4096];
    int rc;
    if (!strcmp(out, "-")) {
        rc = export_file(NULL, fd, len, in, NULL, stdout, in, nev, err);
    } else if (stat(out, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        /* a pipe, /dev/null: written in place, never replaced by a rename */
        rc = export_file(NULL, fd, len, in, out, NULL, out, nev, err);
    } else if (snprintf(tmp, sizeof tmp, "%s.tmp%d%s", out, (int)getpid(),
                        n > 3 && !strcmp(out + n - 3, ".gz") ? ".gz" : "") >= (int)sizeof tmp) {
        tl_error_setc(err, TL_ERR_IO, "%s: path too long", out);
        rc = -1;
    } else {
        /* written under a temporary name and renamed: a reader never sees half a file */
        rc = export_file(NULL, fd, len, in, tmp, NULL, out, nev, err);
        if (rc == 0 && rename(tmp, out) != 0) {
            tl_error_setc(err, TL_ERR_IO, "%s: %s", out, strerror(errno));
            rc = -1;
        }
        if (rc != 0) {
            unlink(tmp);
            tl_error_for_path(err, tmp, out);
        }
    }
    close(fd);
    return rc;
}
