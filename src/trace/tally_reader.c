/*
 * tally_reader.c — reads a .tally file (src/record/format.h, docs/FORMAT.md) into the trace model.
 *
 * The decoder (tally_decode.c) indexes the file and hands over its events one by one; this file
 * is the sink that puts them in the trace, and patches a range's duration when the decoder ends
 * it. A first pass of the decoder counts each track's events, so that each track gets its room
 * in the event array, tracks in order, and its events go there in the order they begin: a
 * thread's ranges in order, then the runtime calls the collector recorded for it, also in order,
 * which tl_trace_finish merges in place (docs/DESIGN.md, "Tracks laid out together"). At the end it
 * closes what was never ended: ranges still open are drawn to the end of the trace, flagged
 * TL_EV_UNCLOSED and counted (t->open_ranges); a step ended only by tally_stop is kept flagged, a
 * step never ended is dropped, and so are all step spans of a file with no STEP_END. Then it gives
 * each step its sample count.
 */
#include "trace/grow_array.h"
#include "trace/tally_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct model_sink {
    tl_trace *t;
    tl_prefault *pf;       /* makes the event array's pages ahead, on another core */
    int64_t (*samples)[2]; /* (step, samples) of each STEP_END */
    size_t nsamples, cap_samples;
    /* each track's room in the event array (see read_tally): its next slot and its end; NULL:
     * every event is appended */
    size_t *next, *end;
    size_t ntracks;
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
    if (!d->any_step_end)
        return 0;
    return tl_trace_step_samples(t, m->samples, m->nsamples);
}

/* Read the file in memory (data) or open on fd into t. */
static int read_tally(tl_trace *t, const void *data, int fd, size_t len, const char *name,
                      tl_error *err)
{
    tl_tally_dec d;
    tl_prefault pf;
    model_sink m = {t, &pf, NULL, 0, 0, NULL, NULL, 0};
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
    /* A first pass counts each track's events, so that the second lays each track's events out
     * together, tracks in order: a thread's own ranges and the runtime calls the collector
     * recorded for it are then two runs side by side, which the finish merges in place, instead
     * of permuting the whole array (half the time of a read). */
    if (tl_tally_count(&d, &count, &ntr) != 0)
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
