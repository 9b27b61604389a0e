/*
 * tally_reader.c — reads a .tally file (src/record/format.h, docs/FORMAT.md) into the trace model.
 *
 * The decoder (tally_decode.c) indexes the file and hands over its events one by one; this file
 * is the sink that puts them in the trace, and patches a range's duration when the decoder ends
 * it. A first pass of the decoder counts each track's events, so that each track gets its room
 * in the event array, tracks in order, and its events go there in the order they begin: a
 * thread's ranges in order, then the runtime calls the collector recorded for it, also in order,
 * which tl_trace_finish merges in place (docs/DESIGN.md, "Tracks laid out together"). With
 * threads, parts of whole threads decode at once, each into rooms of its own within the tracks'
 * rooms, and are settled in order after (".tally decoding in parts"). At the end it
 * closes what was never ended: ranges still open are drawn to the end of the trace, flagged
 * TL_EV_UNCLOSED and counted (t->open_ranges); a step ended only by tally_stop is kept flagged, a
 * step never ended is dropped, and so are all step spans of a file with no STEP_END. Then it gives
 * each step its sample count.
 */
#include "trace/grow_array.h"
#include "trace/now.h"
#include "trace/tally_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct model_sink {
    _Alignas(64) tl_trace *t; /* (parts' sinks sit side by side: cache lines of their own) */
    tl_prefault *pf;          /* makes the event array's pages ahead, on another core */
    int64_t (*samples)[2];    /* (step, samples) of each STEP_END */
    size_t nsamples, cap_samples;
    /* each track's room in the event array (see read_tally): its next slot and its end; NULL:
     * every event is appended */
    size_t *next, *end;
    size_t ntracks;
    /* a part's sink (the decoding in parts: part_open, part_memory): its events stay in its
     * rooms; its memory records and the events that carry the part's string ids wait for the
     * merge */
    tl_memev *mem;
    size_t nmem, cap_mem;
    uint32_t *fix; /* (a part's events are fewer than 2^32: read_in_parts) */
    size_t nfix, cap_fix;
} model_sink;

static int64_t model_open(void *ctx, const tl_tally_ev *x)
{
    model_sink *m = ctx;
    tl_trace *t = m->t;
    /* read_tally reserved room: the event as given, not zeroed first by tl_trace_add */
    tl_event *e;
    uint32_t tr = x->e.track;
    if (tr < m->ntracks && m->next[tr] < m->end[tr]) { /* in its track's room */
        e = &t->ev[m->next[tr]++];
    } else if (t->nev < t->cap_ev) { /* after every track's room: the finish sorts it in */
        e = &t->ev[t->nev++];
        if ((t->nev & 4095) == 0)
            tl_prefault_reached(m->pf, t->nev * sizeof *e);
    } else {
        tl_prefault_stop(m->pf); /* the array moves */
        if (!(e = tl_trace_add(t)))
            return -1;
    }
    *e = x->e;
    e->site = x->site <= UINT16_MAX ? (uint16_t)x->site : 0;
    if (x->e.name == TL_TALLY_TEXT)
        e->name = tl_intern(&t->strings, x->name, x->name_len);
    if (x->e.args == TL_TALLY_TEXT)
        e->args = tl_intern(&t->strings, x->args, x->args_len);
    return (int64_t)(e - t->ev);
}

/* A part's open: in its own room (no room: the count and the decoding disagree, and the file is
 * decoded in order instead); its names and arguments are ids, some the part's own (noted: they
 * become the trace's after the merge). */
static int64_t part_open(void *ctx, const tl_tally_ev *x)
{
    model_sink *m = ctx;
    uint32_t tr = x->e.track;
    if (tr >= m->ntracks || m->next[tr] >= m->end[tr])
        return -1;
    size_t ref = m->next[tr]++;
    tl_event *e = &m->t->ev[ref];
    *e = x->e;
    e->site = x->site <= UINT16_MAX ? (uint16_t)x->site : 0;
    if ((e->name | e->args) & TL_TALLY_LOCAL) {
        if (tl_grow_array(&m->fix, &m->cap_fix, m->nfix + 1, sizeof *m->fix) != 0)
            return -1;
        m->fix[m->nfix++] = (uint32_t)ref;
    }
    return (int64_t)ref;
}

static int model_close(void *ctx, int64_t ref, int64_t end, uint16_t flags)
{
    tl_event *e = &((model_sink *)ctx)->t->ev[ref];
    e->dur = tl_tally_dur(e->ts, end);
    e->flags |= flags;
    return 0;
}

static int model_samples(void *ctx, int64_t step, int64_t samples)
{
    model_sink *m = ctx;
    if (tl_grow_array(&m->samples, &m->cap_samples, m->nsamples + 1, sizeof *m->samples) != 0)
        return -1;
    m->samples[m->nsamples][0] = step;
    m->samples[m->nsamples++][1] = samples;
    return 0;
}

static int model_memory(void *ctx, const tl_memev *x)
{
    model_sink *m = ctx;
    tl_memev *e = tl_trace_add_mem(m->t);
    if (!e)
        return -1;
    *e = *x;
    m->t->mem_addr_known = 1; /* tally's records carry their addresses */
    if (x->total_allocated >= 0)
        m->t->mem_totals_known = 1;
    return 0;
}

/* A part's memory record: kept for the merge, which appends it in the file's order. */
static int part_memory(void *ctx, const tl_memev *x)
{
    model_sink *m = ctx;
    if (tl_grow_array(&m->mem, &m->cap_mem, m->nmem + 1, sizeof *m->mem) != 0)
        return -1;
    m->mem[m->nmem++] = *x;
    return 0;
}

/* Close what was never ended (see the top), then the sample counts: one per step span, in step
 * order. A step closed only by stop is no step when the file has no STEP_END: what runs between
 * the last tally_step and tally_stop (often nothing) would otherwise show up as a near-empty step
 * that drags the minimum step time and throughput down. */
static int model_finish(model_sink *m, const tl_tally_dec *d)
{
    tl_trace *t = m->t;
    int64_t end = tl_tally_end(d);
    size_t w = 0;
    for (size_t i = 0; i < t->nev; i++) {
        tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_STEP && !tl_tally_keep_step(d, e->dur))
            continue;
        if (e->dur < 0) {
            e->dur = tl_tally_dur(e->ts, end);
            e->flags |= TL_EV_UNCLOSED;
            t->open_ranges++;
        }
        if (w != i)
            t->ev[w] = *e;
        w++;
    }
    t->nev = w;
    if (!d->walk.any_step_end)
        return 0;
    return tl_trace_step_samples(t, m->samples, m->nsamples);
}

/* ---- the decoding in parts, on several cores ---------------------------------------------- */

typedef struct parts_job {
    tl_tally_dec *d;
    tl_tally_part *parts;
    model_sink *sinks;
    const size_t *order; /* the parts, most records first */
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    int fixing; /* 0: decode the parts; 1: give their events the trace's string ids */
} parts_job;

static void *parts_worker(void *arg)
{
    parts_job *j = *(parts_job **)arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            return NULL;
        size_t p = j->order[i];
        model_sink *m = &j->sinks[p];
        const tl_tally_part *pt = &j->parts[p];
        if (!j->fixing) {
            tl_tally_sink s = {m, part_open, model_close, model_samples, part_memory};
            if (tl_tally_decode_part(j->d, &j->parts[p], &s) != 0)
                atomic_store(&j->failed, 1);
            continue;
        }
        for (size_t k = 0; k < m->nfix; k++) {
            tl_event *e = &m->t->ev[m->fix[k]];
            e->name = tl_tally_part_id(pt, e->name);
            e->args = tl_tally_part_id(pt, e->args);
        }
    }
}

static void run_parts(parts_job *j, int threads, int fixing)
{
    parts_job *items[64];
    int w = threads < (int)j->n ? threads : (int)j->n;
    if (w > 64)
        w = 64;
    for (int i = 0; i < w; i++)
        items[i] = j;
    atomic_store(&j->next, 0);
    j->fixing = fixing;
    tl_run_each(parts_worker, items, sizeof *items, w);
}

/* Decode the file in parts of whole threads on threads cores (tally_decode.h, "decoding in
 * parts"), each part's events into rooms of their own within their tracks' rooms, tracks in
 * order and parts in order within a track: the array the decoding in order makes. Returns 1
 * when done, 0 when the file is better decoded in order (one thread of records, a count that
 * disagrees, a part that failed: the decoding in order says what is wrong), -1 on an error
 * (err filled). */
static int read_in_parts(tl_trace *t, tl_tally_dec *d, model_sink *m, tl_prefault *pf, int threads)
{
    size_t maxp = threads > 16 ? 64 : 4 * (size_t)threads;
    tl_tally_part *parts = aligned_alloc(64, maxp * sizeof *parts); /* (cache lines of their */
    model_sink *sinks = aligned_alloc(64, maxp * sizeof *sinks);    /* own, see the types) */
    if (parts)
        memset(parts, 0, maxp * sizeof *parts);
    if (sinks)
        memset(sinks, 0, maxp * sizeof *sinks);
    size_t *order = calloc(maxp, sizeof *order), *count = NULL, *rooms = NULL, ntr = 0, n = 0;
    int rc = 0;
    double t0 = tl_now_s();
    /* (the trace's string ids must leave the tags' bits free) */
    if (!parts || !sinks || !order || t->strings.count >= TL_TALLY_DEFERRED ||
        (n = tl_tally_split(d, parts, maxp)) < 2)
        goto out;
    if (tl_tally_count(d, parts, n, &count, &ntr) != 0) {
        rc = -1;
        goto out;
    }
    size_t nev = 0, base = t->nev;
    for (size_t k = 0; k < n * ntr; k++)
        nev += count[k];
    /* a room per part and track (not for many threads' records on many tracks); each part's
     * rooms (next, then end, of each track) on cache lines of its own: a part moves its next on
     * at every event */
    size_t stride = (2 * ntr + 7) / 8 * 8 + 8;
    if (n * ntr > nev + 4096 || base + nev > t->cap_ev || t->cap_ev > UINT32_MAX ||
        !(rooms = malloc((n * stride + 8) * sizeof *rooms)))
        goto out;
    size_t *room0 = (size_t *)(((uintptr_t)rooms + 63) & ~(uintptr_t)63), at = base;
    for (size_t tr = 0; tr < ntr; tr++)
        for (size_t p = 0; p < n; p++) {
            room0[p * stride + tr] = at;
            at += count[p * ntr + tr];
            room0[p * stride + ntr + tr] = at;
        }
    t->nev = at;
    for (size_t p = 0; p < n; p++) {
        sinks[p] = (model_sink){
            .t = t, .next = room0 + p * stride, .end = room0 + p * stride + ntr, .ntracks = ntr};
        order[p] = p;
    }
    for (size_t p = 1; p < n; p++) /* the parts with most records first (at most 64) */
        for (size_t q = p; q > 0 && parts[order[q]].nrec > parts[order[q - 1]].nrec; q--) {
            size_t x = order[q];
            order[q] = order[q - 1];
            order[q - 1] = x;
        }
    parts_job job = {.d = d, .parts = parts, .sinks = sinks, .order = order, .n = n};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, 0);
    /* the pages made ahead by a core the parts leave free, if any */
    int workers = threads < (int)n ? threads : (int)n;
    tl_prefault_start(pf, t->ev, t->nev * sizeof *t->ev, t->nev * sizeof *t->ev,
                      threads - workers + 1);
    run_parts(&job, threads, 0);
    tl_prefault_stop(pf);
    int whole = !atomic_load(&job.failed);
    for (size_t k = 0; whole && k < n * ntr; k++) /* every room filled */
        whole = sinks[k / ntr].next[k % ntr] == sinks[k / ntr].end[k % ntr];
    if (!whole) {
        t->nev = base;
        goto out;
    }
    double t1 = tl_now_s();
    tl_tally_sink ms = {m, model_open, model_close, model_samples, model_memory};
    if (tl_tally_merge(d, parts, n, &ms) != 0) {
        rc = -1;
        goto out;
    }
    run_parts(&job, threads, 1);
    for (size_t p = 0; p < n; p++) { /* memory records and step samples, in the file's order */
        for (size_t k = 0; k < sinks[p].nmem; k++) {
            tl_memev x = sinks[p].mem[k];
            x.name = tl_tally_part_id(&parts[p], x.name);
            if (model_memory(m, &x) != 0)
                goto nomem;
        }
        for (size_t k = 0; k < sinks[p].nsamples; k++)
            if (model_samples(m, sinks[p].samples[k][0], sinks[p].samples[k][1]) != 0)
                goto nomem;
    }
    t->read_stats.threads = threads < (int)n ? threads : (int)n;
    t->read_stats.windows = n;
    if (getenv("TALLY_READ_STATS"))
        fprintf(stderr,
                "tally: %s decoded in %zu parts on %d threads: %.3f s decoding, %.3f s settling "
                "(%zu string ids given)\n",
                d->name, n, t->read_stats.threads, t1 - t0, tl_now_s() - t1,
                (size_t)t->strings.count);
    rc = 1;
    goto out;
nomem:
    tl_error_setc(d->err, TL_ERR_NOMEM, "%s: out of memory", d->name);
    rc = -1;
out:
    for (size_t p = 0; p < n; p++) {
        tl_tally_part_free(&parts[p]);
        free(sinks[p].mem);
        free(sinks[p].fix);
        free(sinks[p].samples);
    }
    free(parts);
    free(sinks);
    free(order);
    free(count);
    free(rooms);
    return rc;
}

/* Read the file in memory (data) or open on fd into t. */
static int read_tally(tl_trace *t, const void *data, int fd, size_t len, const char *name,
                      tl_error *err)
{
    tl_tally_dec d;
    tl_prefault pf;
    model_sink m = {.t = t, .pf = &pf};
    tl_tally_sink sink = {&m, model_open, model_close, model_samples, model_memory};
    size_t *count = NULL, ntr = 0; /* the counting pass's: each track's events */
    int rc = -1;
    if (tl_tally_open(&d, t, data, fd, len, name, err) != 0)
        goto out;
    /* the call sites, in the decoder's order: an event's site is its index + 1 */
    if (d.nsites) {
        free(t->sites);
        if (!(t->sites = malloc(d.nsites * sizeof *t->sites))) {
            tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", d.name);
            goto out;
        }
        for (size_t i = 0; i < d.nsites; i++)
            t->sites[i] = (struct tl_site){d.sites[i].file, d.sites[i].func, d.sites[i].line};
        t->nsites = (uint32_t)d.nsites;
    }
    /* room for as many events as there are records (a range takes two): a growing array would
     * move, and touch its pages again */
    size_t nrec = 0;
    for (size_t i = 0; i < d.nruns; i++)
        nrec += d.runs[i].nrec;
    tl_trace_reserve(t, t->nev + nrec);
    int threads = tl_trace_threads(t);
    if (threads > 1 && d.mem) {
        int r = read_in_parts(t, &d, &m, &pf, threads);
        if (r < 0)
            goto out;
        if (r > 0)
            goto finish;
    }
    /* A first pass counts each track's events, so that the second lays each track's events out
     * together, tracks in order: a thread's own ranges and the runtime calls the collector
     * recorded for it are then two runs side by side, which the finish merges in place, instead
     * of permuting the whole array (half the time of a read). */
    if (tl_tally_count(&d, NULL, 0, &count, &ntr) != 0)
        goto out;
    size_t base = t->nev, at = base;
    if (ntr && !(m.next = malloc(2 * ntr * sizeof *m.next))) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", d.name);
        goto out;
    }
    if (ntr) {
        m.end = m.next + ntr;
        for (size_t tr = 0; tr < ntr; tr++) {
            m.next[tr] = at;
            at += count[tr];
            m.end[tr] = at;
        }
    }
    if (at <= t->cap_ev) /* else (no room reserved) every event is appended */
        m.ntracks = ntr;
    else
        at = base;
    t->nev = at; /* what the count missed goes after */
    /* the kernel zeroing the events' fresh pages was a third of the time: another core takes
     * those faults, all of the rooms from the start (they are all written) */
    tl_prefault_start(&pf, t->ev, t->nev * sizeof *t->ev, t->nev * sizeof *t->ev,
                      tl_trace_threads(t));
    int drc = tl_tally_decode(&d, &sink);
    tl_prefault_stop(&pf);
    if (drc != 0)
        goto out;
    /* a room the decoding did not fill closes up, in order (the count walks the records as the
     * decoding does, so it never should: this keeps the model whole if the two ever disagree) */
    size_t w = base;
    for (size_t tr = 0; tr < m.ntracks; tr++) {
        size_t from = m.end[tr] - count[tr], c = m.next[tr] - from;
        if (w != from)
            memmove(t->ev + w, t->ev + from, c * sizeof *t->ev);
        w += c;
    }
    if (w != at)
        memmove(t->ev + w, t->ev + at, (t->nev - at) * sizeof *t->ev);
    t->nev = w + (t->nev - at);
finish:
    if (model_finish(&m, &d) != 0 || tl_trace_finish(t) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", d.name);
        goto out;
    }
    rc = 0;
out:
    tl_tally_close(&d);
    free(m.samples);
    free(m.next);
    free(count);
    return rc;
}

int tl_read_tally_mem(tl_trace *t, const void *data, size_t len, const char *name, tl_error *err)
{
    return read_tally(t, data, -1, len, name, err);
}

int tl_read_tally(tl_trace *t, const char *path, tl_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = tl_read_tally_fd(t, fd, path, err);
    close(fd);
    return rc;
}

int tl_read_tally_fd(tl_trace *t, int fd, const char *name, tl_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", name, strerror(errno));
        return -1;
    }
    size_t len = (size_t)st.st_size;
    if (len == 0)
        return tl_read_tally_mem(t, "", 0, name, err);
    /* mapped: the model it builds is several times the file's size anyway */
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", name, strerror(errno));
        return -1;
    }
    int rc = tl_read_tally_mem(t, m, len, name, err);
    munmap(m, len);
    return rc;
}
