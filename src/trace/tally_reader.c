/*
 * tally_reader.c — reads a .tally file (src/record/format.h, docs/FORMAT.md) into the trace model.
 *
 * Two passes over the chunks. The first checks every chunk header and collects what the events
 * need: the clock calibration (the last CLOCK entry wins: the writer refines it when it closes the
 * file), call-site strings, thread names, devices and the loss counters. The second decodes the
 * EVENTS chunks thread by thread in their sequence order (the writer thread, a window closer and
 * a signal handler may have appended them in any order), pairing push/pop on a per-thread stack
 * and begin/end through their handles across threads.
 *
 * A file cut short (a crash, a kill -9) is read up to its last complete chunk; ranges still open
 * there are closed at the last timestamp and flagged TL_EV_UNCLOSED. Anything malformed inside a
 * complete chunk is an error naming the byte offset.
 */
#include "record/format.h"
#include "trace/model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert((int)TALLY__CAT_STEP == (int)TL_CAT_STEP, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_RUNTIME == (int)TL_CAT_RUNTIME, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_DRIVER == (int)TL_CAT_DRIVER, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_KERNEL == (int)TL_CAT_KERNEL, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_MEMCPY == (int)TL_CAT_MEMCPY, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_MEMSET == (int)TL_CAT_MEMSET, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_GPU_USER == (int)TL_CAT_GPU_USER,
               "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_SYNC == (int)TL_CAT_SYNC, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_INSTANT == (int)TL_CAT_INSTANT, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_COUNTER == (int)TL_CAT_COUNTER, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_MEMORY == (int)TL_CAT_MEMORY, "format.h categories follow tl_cat");
_Static_assert((int)TALLY__CAT_OTHER == (int)TL_CAT_OTHER, "format.h categories follow tl_cat");
_Static_assert(TL_CAT_OPERATOR == 6 && TL_CAT_USER == 0, "tally_category == tl_cat for 0..6");

/* ---- small u64 -> u32 hash map --------------------------------------------------------------- */

typedef struct u64map {
    uint64_t *k; /* key + 1 ... we store keys as-is and use a separate used flag via val */
    uint32_t *v; /* value + 1, 0 = empty */
    size_t cap, n;
} u64map;

static inline size_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= UINT64_C(0x9e3779b97f4a7c15);
    x ^= x >> 29;
    return (size_t)x;
}

static int map_put(u64map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        uint64_t *nk = calloc(nc, sizeof *nk);
        uint32_t *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->v[i]) {
                size_t h = mix(m->k[i]) & (nc - 1);
                while (nv[h])
                    h = (h + 1) & (nc - 1);
                nk[h] = m->k[i];
                nv[h] = m->v[i];
            }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = nc;
    }
    size_t h = mix(key) & (m->cap - 1);
    while (m->v[h]) {
        if (m->k[h] == key) {
            m->v[h] = val + 1;
            return 0;
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->k[h] = key;
    m->v[h] = val + 1;
    m->n++;
    return 0;
}

/* value, or -1 */
static inline int64_t map_get(const u64map *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    size_t h = mix(key) & (m->cap - 1);
    while (m->v[h]) {
        if (m->k[h] == key)
            return (int64_t)m->v[h] - 1;
        h = (h + 1) & (m->cap - 1);
    }
    return -1;
}

static void map_free(u64map *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ---- reader state ---------------------------------------------------------------------------- */

typedef struct site {
    uint32_t name;
    uint16_t cat;
} site;

typedef struct echunk {
    size_t off; /* of the chunk header */
    const unsigned char *recs;
    size_t nrec; /* whole records in the file (fewer than the header says when cut) */
    int cut;     /* the file ends inside this chunk */
    tally__events_header h;
} echunk;

typedef struct endrec {
    uint64_t handle;
    int64_t ts;
} endrec;

typedef struct rd {
    tl_trace *t;
    const unsigned char *base;
    const char *name;
    tl_error *err;

    tally__meta_clock clk;
    double ns_per_tick;
    int64_t end_ns, max_ns;
    int have_end;

    site *sites;
    size_t nsites, cap_sites;
    u64map site_map;

    echunk *chunks;
    size_t nchunks, cap_chunks;

    u64map begins; /* handle -> event index */
    endrec *ends;
    size_t nends, cap_ends;

    /* per-thread decoding state */
    int32_t *stack;
    size_t nstack, cap_stack;

    /* steps closed: (number, samples) pairs */
    int64_t (*samples)[2];
    size_t nsamples, cap_samples;
    int any_step_end;
} rd;

static int fail(rd *r, size_t off, const char *what)
{
    tl_error_set(r->err, "%s: offset %zu: %s", r->name, off, what);
    return -1;
}

static inline int64_t to_ns(const rd *r, uint64_t ticks)
{
    uint64_t ref = r->clk.kind == 1 ? r->clk.tsc0 : (uint64_t)r->clk.ns0;
    uint64_t full = (ref & ~TALLY__TS_MASK) | (ticks & TALLY__TS_MASK);
    int64_t d = (int64_t)(full - ref);
    if (d > (INT64_C(1) << 55))
        full -= UINT64_C(1) << 56;
    else if (d < -(INT64_C(1) << 55))
        full += UINT64_C(1) << 56;
    if (r->clk.kind != 1)
        return (int64_t)full;
    return r->clk.ns0 + (int64_t)((double)(int64_t)(full - r->clk.tsc0) * r->ns_per_tick);
}

static inline uint16_t clamp_cat(uint32_t c)
{
    return c < TL_CAT_COUNT ? (uint16_t)c : (uint16_t)TL_CAT_OTHER;
}

/* ---- pass 1 ---------------------------------------------------------------------------------- */

/* The readers of metadata chunks below take a chunk cut short (cut: the file ends inside it)
 * up to its last complete entry. */

static int read_meta(rd *r, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i + 8 <= len) {
        uint32_t key, vl;
        memcpy(&key, p + i, 4);
        memcpy(&vl, p + i + 4, 4);
        if (vl > len - i - 8)
            return cut ? 0 : fail(r, off + i, "expected a metadata value inside its chunk");
        const unsigned char *v = p + i + 8;
        int64_t i64 = 0;
        int32_t i32 = 0;
        if (vl >= 8)
            memcpy(&i64, v, 8);
        if (vl >= 4)
            memcpy(&i32, v, 4);
        switch (key) {
        case TALLY__META_CLOCK:
            if (vl < sizeof(tally__meta_clock))
                return fail(r, off + i, "expected a clock entry of 32 bytes");
            memcpy(&r->clk, v, sizeof r->clk);
            if (r->clk.kind == 1 && !(r->clk.tsc_hz > 1e3 && r->clk.tsc_hz < 1e13))
                return fail(r, off + i, "expected a TSC rate between 1 kHz and 10 THz");
            r->ns_per_tick = r->clk.kind == 1 ? 1e9 / r->clk.tsc_hz : 1.0;
            break;
        case TALLY__META_WALL_OFFSET:
            r->t->wall_offset = i64;
            break;
        case TALLY__META_PID:
            r->t->pid = i64;
            break;
        case TALLY__META_RANK:
            if (vl >= 4)
                r->t->rank = i32;
            break;
        case TALLY__META_WORLD_SIZE:
            if (vl >= 4)
                r->t->world_size = i32;
            break;
        case TALLY__META_SAMPLES_UNIT:
            r->t->samples_unit = tl_intern(&r->t->strings, (const char *)v, vl);
            break;
        case TALLY__META_END_NS:
            if (vl >= 8) {
                r->end_ns = i64;
                r->have_end = 1;
            }
            break;
        default:
            break;
        }
        i += 8 + tally__pad8(vl);
    }
    return 0;
}

static int read_strings(rd *r, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__string_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(r, off + i, "expected a 32-byte string entry");
        memcpy(&e, p + i, sizeof e);
        uint64_t body = (uint64_t)e.name_len + e.file_len + e.func_len;
        if (body > len - i - sizeof e)
            return cut ? 0 : fail(r, off + i, "expected the string entry's text inside its chunk");
        site s;
        s.name = tl_intern(&r->t->strings, (const char *)p + i + sizeof e, e.name_len);
        s.cat = clamp_cat(e.category);
        if (r->nsites == r->cap_sites) {
            size_t nc = r->cap_sites ? r->cap_sites * 2 : 64;
            site *ns = realloc(r->sites, nc * sizeof *ns);
            if (!ns)
                return fail(r, off, "out of memory");
            r->sites = ns;
            r->cap_sites = nc;
        }
        r->sites[r->nsites] = s;
        if (map_put(&r->site_map, e.id, (uint32_t)r->nsites) != 0)
            return fail(r, off, "out of memory");
        r->nsites++;
        i += tally__pad8(sizeof e + body);
    }
    return 0;
}

static int read_threads(rd *r, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__thread_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(r, off + i, "expected a 16-byte thread entry");
        memcpy(&e, p + i, sizeof e);
        if (e.name_len > len - i - sizeof e)
            return cut ? 0 : fail(r, off + i, "expected the thread name inside its chunk");
        if (e.name_len) {
            uint32_t tr = tl_trace_track(r->t, TL_TRACK_THREAD, r->t->pid, e.tid, -1);
            r->t->tracks[tr].name =
                tl_intern(&r->t->strings, (const char *)p + i + sizeof e, e.name_len);
        }
        i += tally__pad8(sizeof e + e.name_len);
    }
    return 0;
}

static int read_devices(rd *r, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__device_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(r, off + i, "expected a 32-byte device entry");
        memcpy(&e, p + i, sizeof e);
        if (e.name_len > len - i - sizeof e)
            return cut ? 0 : fail(r, off + i, "expected the device name inside its chunk");
        tl_device *d = tl_trace_device(r->t, e.id);
        if (d) {
            d->name = tl_intern(&r->t->strings, (const char *)p + i + sizeof e, e.name_len);
            d->memory = e.memory;
            d->sm_count = e.sm_count;
            d->cc_major = e.cc_major;
            d->cc_minor = e.cc_minor;
        }
        i += tally__pad8(sizeof e + e.name_len);
    }
    return 0;
}

/* ---- pass 2 ---------------------------------------------------------------------------------- */

static tl_event *new_event(rd *r, uint32_t track, int64_t ts, uint32_t name, uint16_t cat)
{
    tl_event *e = tl_trace_add(r->t);
    if (!e)
        return NULL;
    e->ts = ts;
    e->track = track;
    e->name = name;
    e->cat = cat;
    if (ts > r->max_ns)
        r->max_ns = ts;
    return e;
}

static int push_stack(rd *r, int32_t idx)
{
    if (r->nstack == r->cap_stack) {
        size_t nc = r->cap_stack ? r->cap_stack * 2 : 64;
        int32_t *ns = realloc(r->stack, nc * sizeof *ns);
        if (!ns)
            return -1;
        r->stack = ns;
        r->cap_stack = nc;
    }
    r->stack[r->nstack++] = idx;
    return 0;
}

static int note_samples(rd *r, int64_t step, int64_t samples)
{
    if (r->nsamples == r->cap_samples) {
        size_t nc = r->cap_samples ? r->cap_samples * 2 : 64;
        int64_t(*ns)[2] = realloc(r->samples, nc * sizeof *ns);
        if (!ns)
            return -1;
        r->samples = ns;
        r->cap_samples = nc;
    }
    r->samples[r->nsamples][0] = step;
    r->samples[r->nsamples++][1] = samples;
    return 0;
}

static int pair_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static uint32_t step_name(rd *r, int64_t n)
{
    char buf[48];
    int l = snprintf(buf, sizeof buf, "ProfilerStep#%lld", (long long)n);
    return tl_intern(&r->t->strings, buf, (size_t)l);
}

/* Per thread: state that carries over from one run of its buffer to the next. */
typedef struct tdec {
    uint32_t track;
    int32_t open_step; /* event index or TL_NONE */
    int64_t open_step_no;
    uint64_t seq; /* of the run decoded last */
    int damaged;  /* that run was cut short or never written in full */
} tdec;

/* A chunk the program never wrote in full (killed while writing it), for the warning. */
static void note_unwritten(rd *r, size_t off)
{
    if (!r->t->unwritten++ || off < r->t->unwritten_at)
        r->t->unwritten_at = off;
}

static int zero16(const unsigned char *p)
{
    uint64_t w[2];
    memcpy(w, p, 16);
    return (w[0] | w[1]) == 0;
}

/* After a chunk header of zeros at off (bytes the program reserved and never wrote): where the
 * zeros end if a chunk header follows them, else len (the readable part ends). */
static size_t skip_unwritten(const unsigned char *p, size_t off, size_t len)
{
    uint64_t w = 0;
    while (len - off >= 8 && (memcpy(&w, p + off, 8), w == 0))
        off += 8;
    if (len - off < sizeof(tally__chunk_header))
        return len;
    tally__chunk_header ch;
    memcpy(&ch, p + off, sizeof ch);
    return ch.type != 0 && ch.type < 256 && ch.flags == 0 ? off : len;
}

/* Slots of a run up to its last one that is not all zeros. A run the program was killed while
 * writing ends in zeros (the bytes of the file it had reserved); no record is all zeros (its
 * type is never 0), though the last payload slot of one may be. */
static size_t written_slots(const unsigned char *p, size_t n)
{
    while (n && zero16(p + (n - 1) * 16))
        n--;
    return n;
}

#define NO_STR UINT32_MAX

/* Decode one run into events. A run cut short (the file ends inside it) or never written in
 * full (zeros from some record on) is read up to its last complete record, and marked damaged:
 * what its lost tail closed is unknown. */
static int decode_chunk(rd *r, const echunk *c, tdec *td)
{
    tl_trace *t = r->t;
    const unsigned char *p = c->recs;
    size_t n = c->nrec;
    size_t written = written_slots(p, n);
    uint64_t begin_seq = c->h.first_begin_seq;
    uint32_t pend_name = NO_STR, pend_arg = NO_STR;
    uint16_t pend_cat = 0;
    uint64_t pend_value = 0;
    int have_value = 0;
    td->damaged = c->cut;
    if (!n)
        return 0;
    for (size_t i = 0;;) {
        if (i >= written) /* zeros to the end of the run: never written */
            break;
        tally__rec x;
        memcpy(&x, p + i * 16, 16);
        size_t roff = c->off + sizeof(tally__chunk_header) + sizeof(tally__events_header) + i * 16;
        unsigned type = TALLY__REC_TYPE(&x);
        uint64_t slots = tally__rec_slots(&x);
        if (slots > n - i) {
            if (c->cut)
                break; /* its payload was cut off with the file */
            return fail(r, roff, "expected the record's payload inside its chunk");
        }
        if (i + slots > written && i + slots < n)
            break; /* its payload runs into the zeros */
        switch (type) {
        case TALLY__R_PUSH:
        case TALLY__R_BEGIN:
        case TALLY__R_MARK:
        case TALLY__R_COUNTER: {
            uint32_t name = 0;
            uint16_t cat = TL_CAT_USER;
            if (x.w1) {
                int64_t s = map_get(&r->site_map, x.w1);
                if (s >= 0) {
                    name = r->sites[s].name;
                    cat = r->sites[s].cat;
                } else {
                    name = tl_intern(&t->strings, "(unknown)", 9);
                }
            } else if (pend_name != NO_STR) {
                name = pend_name;
                cat = pend_cat;
            }
            int64_t ts = to_ns(r, x.w0);
            if (type == TALLY__R_MARK)
                cat = TL_CAT_INSTANT;
            else if (type == TALLY__R_COUNTER)
                cat = TL_CAT_COUNTER;
            tl_event *e = new_event(r, td->track, ts, name, cat);
            if (!e)
                return fail(r, roff, "out of memory");
            int32_t idx = (int32_t)(t->nev - 1);
            if (pend_arg != NO_STR)
                e->args = pend_arg;
            if (type == TALLY__R_PUSH) {
                e->dur = -1;
                if (push_stack(r, idx) != 0)
                    return fail(r, roff, "out of memory");
            } else if (type == TALLY__R_BEGIN) {
                e->dur = -1;
                e->flags |= TL_EV_ASYNC;
                uint64_t h = ((uint64_t)c->h.slot << 40) | (begin_seq & ((UINT64_C(1) << 40) - 1));
                begin_seq++;
                if (map_put(&r->begins, h, (uint32_t)idx) != 0)
                    return fail(r, roff, "out of memory");
            } else {
                e->flags |= TL_EV_INSTANT;
                if (type == TALLY__R_COUNTER && have_value) {
                    double v;
                    memcpy(&v, &pend_value, 8);
                    e->value = (int64_t)(v * 1000.0);
                }
            }
            pend_name = pend_arg = NO_STR;
            have_value = 0;
            break;
        }
        case TALLY__R_POP:
            if (r->nstack) {
                int32_t idx = r->stack[--r->nstack];
                int64_t ts = to_ns(r, x.w0);
                tl_event *e = &t->ev[idx];
                e->dur = ts >= e->ts ? ts - e->ts : 0;
                if (ts > r->max_ns)
                    r->max_ns = ts;
            }
            break;
        case TALLY__R_END:
            if (r->nends == r->cap_ends) {
                size_t nc = r->cap_ends ? r->cap_ends * 2 : 256;
                endrec *ne = realloc(r->ends, nc * sizeof *ne);
                if (!ne)
                    return fail(r, roff, "out of memory");
                r->ends = ne;
                r->cap_ends = nc;
            }
            r->ends[r->nends].handle = x.w1;
            r->ends[r->nends++].ts = to_ns(r, x.w0);
            break;
        case TALLY__R_STEP_BEGIN: {
            tl_event *e =
                new_event(r, td->track, to_ns(r, x.w0), step_name(r, (int64_t)x.w1), TL_CAT_STEP);
            if (!e)
                return fail(r, roff, "out of memory");
            e->value = (int64_t)x.w1;
            e->dur = -1;
            td->open_step = (int32_t)(t->nev - 1);
            td->open_step_no = (int64_t)x.w1;
            break;
        }
        case TALLY__R_STEP_END:
        case TALLY__R_STEP_STOP: {
            int64_t ts = to_ns(r, x.w0);
            if (ts > r->max_ns)
                r->max_ns = ts;
            if (type == TALLY__R_STEP_END) {
                r->any_step_end = 1;
                if (note_samples(r, (int64_t)x.w1, have_value ? (int64_t)pend_value : 0) != 0)
                    return fail(r, roff, "out of memory");
            }
            if (td->open_step != TL_NONE && td->open_step_no == (int64_t)x.w1) {
                tl_event *e = &t->ev[td->open_step];
                e->dur = ts >= e->ts ? ts - e->ts : 0;
                if (type == TALLY__R_STEP_STOP)
                    e->flags |= TL_EV_UNCLOSED;
                td->open_step = TL_NONE;
            }
            have_value = 0;
            break;
        }
        case TALLY__R_STR: {
            if (x.w1 > (uint64_t)(slots - 1) * 16)
                return fail(r, roff, "expected a string inside its record");
            uint32_t id = tl_intern(&t->strings, (const char *)p + (i + 1) * 16, (size_t)x.w1);
            unsigned role = TALLY__STR_ROLE(&x);
            if (role == TALLY__STR_NAME) {
                pend_name = id;
                pend_cat = clamp_cat(TALLY__STR_CAT(&x));
            } else if (role == TALLY__STR_ARG) {
                pend_arg = id;
            } else if (role == TALLY__STR_THREAD) {
                t->tracks[td->track].name = id;
            }
            break;
        }
        case TALLY__R_VALUE:
            pend_value = x.w1;
            have_value = 1;
            break;
        case TALLY__R_DEVICE: {
            tally__fmt_device d;
            if ((slots - 1) * 16 < sizeof d)
                return fail(r, roff, "expected a 64-byte device event");
            memcpy(&d, p + (i + 1) * 16, sizeof d);
            if ((uint64_t)d.name_len + d.args_len > (slots - 1) * 16 - sizeof d)
                return fail(r, roff, "expected the device event's name inside its record");
            const char *nm = (const char *)p + (i + 1) * 16 + sizeof d;
            uint32_t tr = tl_trace_track(t, TL_TRACK_STREAM, t->pid, d.stream, d.device);
            tl_event *e =
                new_event(r, tr, d.start, tl_intern(&t->strings, nm, d.name_len), clamp_cat(d.cat));
            if (!e)
                return fail(r, roff, "out of memory");
            e->dur = d.end >= d.start ? d.end - d.start : 0;
            e->corr = d.corr;
            e->value = d.bytes;
            e->copy = d.copy_kind;
            e->flags = d.flags;
            if (d.args_len)
                e->args = tl_intern(&t->strings, nm + d.name_len, d.args_len);
            if (d.end > r->max_ns)
                r->max_ns = d.end;
            break;
        }
        case TALLY__R_API: {
            tally__fmt_api a;
            if ((slots - 1) * 16 < sizeof a)
                return fail(r, roff, "expected a 40-byte API event");
            memcpy(&a, p + (i + 1) * 16, sizeof a);
            if (a.name_len > (slots - 1) * 16 - sizeof a)
                return fail(r, roff, "expected the API event's name inside its record");
            const char *nm = (const char *)p + (i + 1) * 16 + sizeof a;
            uint32_t tr = tl_trace_track(t, TL_TRACK_THREAD, t->pid, a.tid, -1);
            tl_event *e =
                new_event(r, tr, a.start, tl_intern(&t->strings, nm, a.name_len), clamp_cat(a.cat));
            if (!e)
                return fail(r, roff, "out of memory");
            e->dur = a.end >= a.start ? a.end - a.start : 0;
            e->corr = a.corr;
            if (a.end > r->max_ns)
                r->max_ns = a.end;
            break;
        }
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "expected a record type 1..13, found %u", type);
            return fail(r, roff, msg);
        }
        }
        i += slots;
        if (i >= n)
            return 0;
    }
    /* left early: the rest of the run was cut off with the file or never written */
    td->damaged = 1;
    if (!c->cut)
        note_unwritten(r, c->off);
    return 0;
}

static int chunk_cmp(const void *a, const void *b)
{
    const echunk *x = a, *y = b;
    if (x->h.slot != y->h.slot)
        return x->h.slot < y->h.slot ? -1 : 1;
    if (x->h.seq != y->h.seq)
        return x->h.seq < y->h.seq ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int finish_events(rd *r)
{
    tl_trace *t = r->t;
    for (size_t i = 0; i < r->nends; i++) {
        int64_t idx = map_get(&r->begins, r->ends[i].handle);
        if (idx < 0)
            continue; /* its begin was before the window or dropped */
        tl_event *e = &t->ev[idx];
        if (e->dur >= 0)
            continue; /* ended twice: keep the first */
        e->dur = r->ends[i].ts >= e->ts ? r->ends[i].ts - e->ts : 0;
        if (r->ends[i].ts > r->max_ns)
            r->max_ns = r->ends[i].ts;
    }
    int64_t end = r->have_end ? r->end_ns : r->max_ns;
    if (end < r->max_ns)
        end = r->max_ns;
    /* ranges still open: closed at the end, flagged. A step closed only by stop is not a step:
     * what runs between the last tally_step and tally_stop (often nothing) would otherwise show
     * up as a near-empty step that drags the minimum step time and throughput down. */
    size_t w = 0;
    for (size_t i = 0; i < t->nev; i++) {
        tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_STEP && (!r->any_step_end || e->dur < 0))
            continue;
        if (e->dur < 0) {
            e->dur = end >= e->ts ? end - e->ts : 0;
            e->flags |= TL_EV_UNCLOSED;
            t->open_ranges++;
        }
        if (w != i)
            t->ev[w] = *e;
        w++;
    }
    t->nev = w;
    /* sample counts, one per step span in step order */
    if (r->any_step_end) {
        size_t nsteps = 0;
        for (size_t i = 0; i < t->nev; i++)
            nsteps += t->ev[i].cat == TL_CAT_STEP;
        if (nsteps) {
            int64_t *nums = malloc(nsteps * sizeof *nums);
            t->step_samples = calloc(nsteps, sizeof *t->step_samples);
            if (!nums || !t->step_samples) {
                free(nums);
                return fail(r, 0, "out of memory");
            }
            size_t k = 0;
            for (size_t i = 0; i < t->nev; i++)
                if (t->ev[i].cat == TL_CAT_STEP)
                    nums[k++] = t->ev[i].value;
            qsort(nums, nsteps, sizeof *nums, i64_cmp);
            if (r->nsamples)
                qsort(r->samples, r->nsamples, sizeof *r->samples, pair_cmp);
            for (k = 0; k < nsteps; k++) {
                int64_t key[2] = {nums[k], 0};
                const int64_t(*hit)[2] = r->nsamples ? bsearch(key, r->samples, r->nsamples,
                                                               sizeof *r->samples, pair_cmp)
                                                     : NULL;
                t->step_samples[k] = hit ? (*hit)[1] : 0;
            }
            t->nsteps_samples = nsteps;
            free(nums);
        }
    }
    return 0;
}

int tl_read_tally_mem(tl_trace *t, const void *data, size_t len, const char *name, tl_error *err)
{
    rd r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.base = data;
    r.name = name ? name : "(memory)";
    r.err = err;
    r.ns_per_tick = 1.0;
    r.max_ns = INT64_MIN;
    const unsigned char *p = data;
    int rc = -1;

    if (len < sizeof(tally__file_header)) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected a 16-byte .tally header, the file has %zu bytes", len);
        fail(&r, 0, msg);
        goto out;
    }
    tally__file_header fh;
    memcpy(&fh, p, sizeof fh);
    if (memcmp(fh.magic, TALLY__MAGIC, 8) != 0) {
        fail(&r, 0, "expected the magic \"TALLYTRC\" (not a .tally file)");
        goto out;
    }
    if (fh.major != TALLY__FORMAT_MAJOR) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected format version %d.x, found %u.%u", TALLY__FORMAT_MAJOR,
                 fh.major, fh.minor);
        fail(&r, 8, msg);
        goto out;
    }
    if (fh.header_size < sizeof fh || fh.header_size > len) {
        fail(&r, 12, "expected a header size of at least 16 bytes inside the file");
        goto out;
    }
    t->source = TL_SRC_TALLY;
    t->path = name;
    t->rank = -1;

    /* pass 1 */
    size_t off = fh.header_size;
    size_t ended_at = 0; /* where the readable part ends, before the end of the file */
    while (off < len) {
        if (len - off < sizeof(tally__chunk_header)) {
            t->cut_at = ended_at = off;
            break;
        }
        tally__chunk_header ch;
        memcpy(&ch, p + off, sizeof ch);
        if (ch.type == 0 && ch.len == 0) { /* reserved by the program, never written */
            note_unwritten(&r, off);
            size_t next = skip_unwritten(p, off, len);
            if (next == len) {
                ended_at = off;
                break;
            }
            off = next;
            continue;
        }
        int cut = ch.len > len - off - sizeof ch;
        size_t plen = cut ? len - off - sizeof ch : (size_t)ch.len;
        const unsigned char *pl = p + off + sizeof ch;
        size_t poff = off + sizeof ch;
        int e = 0;
        switch (ch.type) {
        case TALLY__CHUNK_META:
            e = read_meta(&r, pl, plen, poff, cut);
            break;
        case TALLY__CHUNK_STRINGS:
            e = read_strings(&r, pl, plen, poff, cut);
            break;
        case TALLY__CHUNK_THREADS:
            e = read_threads(&r, pl, plen, poff, cut);
            break;
        case TALLY__CHUNK_DEVICES:
            e = read_devices(&r, pl, plen, poff, cut);
            break;
        case TALLY__CHUNK_STATS: {
            tally__stats_chunk s;
            memset(&s, 0, sizeof s);
            memcpy(&s, pl, plen < sizeof s ? plen & ~(size_t)7 : sizeof s); /* whole fields */
            t->dropped = s.dropped;
            t->bad_pops = s.bad_pops;
            t->bad_ends = s.bad_ends;
            t->calls_outside = s.calls_outside;
            t->unclosed = s.unclosed;
            break;
        }
        case TALLY__CHUNK_EVENTS: {
            if (!cut && (ch.len < sizeof(tally__events_header) ||
                         (ch.len - sizeof(tally__events_header)) % 16 != 0)) {
                e = fail(&r, off, "expected an events chunk of 32 bytes + 16-byte records");
                break;
            }
            if (plen < sizeof(tally__events_header))
                break; /* cut inside its header: nothing to read */
            if (r.nchunks == r.cap_chunks) {
                size_t nc = r.cap_chunks ? r.cap_chunks * 2 : 64;
                echunk *ncs = realloc(r.chunks, nc * sizeof *ncs);
                if (!ncs) {
                    e = fail(&r, off, "out of memory");
                    break;
                }
                r.chunks = ncs;
                r.cap_chunks = nc;
            }
            echunk *c = &r.chunks[r.nchunks++];
            c->off = off;
            memcpy(&c->h, pl, sizeof c->h);
            c->recs = pl + sizeof c->h;
            c->nrec = (plen - sizeof c->h) / 16;
            c->cut = cut;
            if (c->h.slot == 0 || c->h.slot > (1u << 20)) {
                e = fail(&r, poff, "expected a thread slot between 1 and 2^20");
                break;
            }
            break;
        }
        default:
            break; /* unknown chunk types are skipped */
        }
        if (e)
            goto out;
        if (cut) { /* the program was killed while writing it, or the disk was full */
            t->cut_at = ended_at = off;
            break;
        }
        off += sizeof ch + ch.len;
    }
    if (ended_at && r.nchunks == 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "expected a complete chunk (file cut short, %zu bytes left)",
                 len - ended_at);
        fail(&r, ended_at, msg);
        goto out;
    }

    /* pass 2: thread by thread, runs in order */
    if (r.nchunks)
        qsort(r.chunks, r.nchunks, sizeof *r.chunks, chunk_cmp);
    tdec td = {0, TL_NONE, 0, 0, 0};
    uint32_t cur_slot = 0;
    int64_t cur_tid = 0;
    for (size_t i = 0; i < r.nchunks; i++) {
        echunk *c = &r.chunks[i];
        if (c->h.slot != cur_slot || c->h.tid != cur_tid) {
            /* another thread (a slot is reused after its thread exits): the previous thread's
             * open pushes stay open (closed in finish_events) */
            r.nstack = 0;
            cur_slot = c->h.slot;
            cur_tid = c->h.tid;
            td.track = tl_trace_track(t, TL_TRACK_THREAD, t->pid, c->h.tid, -1);
            td.open_step = TL_NONE;
        } else if (td.damaged || c->h.seq != td.seq + 1) {
            /* records of this thread are missing in between: the pops among them are unknown,
             * so the ranges open before stay open and this run pops only its own pushes */
            r.nstack = 0;
        }
        td.seq = c->h.seq;
        if (decode_chunk(&r, c, &td) != 0)
            goto out;
    }
    if (finish_events(&r) != 0)
        goto out;
    if (tl_trace_finish(t) != 0) {
        fail(&r, 0, "out of memory");
        goto out;
    }
    rc = 0;
out:
    free(r.sites);
    map_free(&r.site_map);
    map_free(&r.begins);
    free(r.chunks);
    free(r.ends);
    free(r.stack);
    free(r.samples);
    return rc;
}

int tl_read_tally(tl_trace *t, const char *path, tl_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) {
        close(fd);
        return tl_read_tally_mem(t, "", 0, path, err);
    }
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        tl_error_setc(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = tl_read_tally_mem(t, m, len, path, err);
    munmap(m, len);
    return rc;
}
