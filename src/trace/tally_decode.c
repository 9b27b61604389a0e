/*
 * tally_decode.c — the .tally decoder shared by the model reader and the streaming export (see
 * tally_decode.h for the idea, docs/FORMAT.md for the layout and the guarantees on files cut
 * short).
 *
 * The index (tl_tally_open) checks every chunk header and reads what the events need: the clock
 * calibration (the last CLOCK entry wins: the writer refines it when it closes the file), call
 * sites, thread names, devices and the loss counters. Decoding (tl_tally_decode) goes thread by
 * thread, each thread's runs in seq order (the writer thread, a window closer and a signal
 * handler may have appended them in any order), pairing push/pop on a per-thread stack and
 * begin/end through their handles across threads: an END met before its BEGIN (its thread is
 * decoded later) waits in a map until the BEGIN comes, a BEGIN waits for its END the same way.
 *
 * A file a killed program left is read up to its last complete record: a chunk cut by the end of
 * the file, a run that ends in zeros (bytes reserved and never written), a chunk header of zeros
 * (skipped to the next chunk header). Anything malformed inside a complete chunk is an error
 * naming the byte offset.
 */
#include "trace/tally_decode.h"
#include "trace/checked.h"
#include "trace/grow_array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

static int fail(tl_tally_dec *d, size_t off, const char *what)
{
    tl_error_set(d->err, "%s: offset %zu: %s", d->name, off, what);
    return -1;
}

static int fail_nomem(tl_tally_dec *d, size_t off)
{
    tl_error_setc(d->err, TL_ERR_NOMEM, "%s: offset %zu: out of memory", d->name, off);
    return -1;
}

/* n bytes of the file at off (off + n <= len): in place when the file is in memory, else read
 * into the buffer, valid until the next call. NULL with err filled when they cannot be read. */
static const unsigned char *at(tl_tally_dec *d, size_t off, size_t n)
{
    if (d->mem)
        return d->mem + off;
    if (n > d->cap_buf) {
        size_t nc = d->cap_buf ? d->cap_buf : 1u << 16;
        while (nc < n)
            nc *= 2;
        unsigned char *nb = realloc(d->buf, nc);
        if (!nb) {
            fail_nomem(d, off);
            return NULL;
        }
        d->buf = nb;
        d->cap_buf = nc;
    }
    for (size_t got = 0; got < n;) {
        ssize_t k = pread(d->fd, d->buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            tl_error_setc(d->err, TL_ERR_IO, "%s: offset %zu: cannot read: %s", d->name, off + got,
                          k < 0 ? strerror(errno) : "the file got shorter");
            return NULL;
        }
        got += (size_t)k;
    }
    return d->buf;
}

static inline int64_t to_ns(const tl_tally_dec *d, uint64_t ticks)
{
    uint64_t ref = d->clk.kind == 1 ? d->clk.tsc0 : (uint64_t)d->clk.ns0;
    uint64_t full = (ref & ~TALLY__TS_MASK) | (ticks & TALLY__TS_MASK);
    int64_t dt = (int64_t)(full - ref);
    if (dt > (INT64_C(1) << 55))
        full -= UINT64_C(1) << 56;
    else if (dt < -(INT64_C(1) << 55))
        full += UINT64_C(1) << 56;
    if (d->clk.kind != 1)
        return tl_clamp_time((int64_t)full);
    int64_t dt_ns = tl_d_to_i64((double)(int64_t)(full - d->clk.tsc0) * d->ns_per_tick);
    return tl_clamp_time(tl_add_sat(d->clk.ns0, dt_ns)); /* any value in a damaged file */
}

static inline uint16_t clamp_cat(uint32_t c)
{
    return c < TL_CAT_COUNT ? (uint16_t)c : (uint16_t)TL_CAT_OTHER;
}

/* ---- the index: chunk headers and metadata --------------------------------------------------- */

/* The readers of metadata chunks below take a chunk cut short (cut: the file ends inside it)
 * up to its last complete entry. */

static int read_meta(tl_tally_dec *d, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i + 8 <= len) {
        uint32_t key, vl;
        memcpy(&key, p + i, 4);
        memcpy(&vl, p + i + 4, 4);
        if (vl > len - i - 8)
            return cut ? 0 : fail(d, off + i, "expected a metadata value inside its chunk");
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
                return fail(d, off + i, "expected a clock entry of 32 bytes");
            memcpy(&d->clk, v, sizeof d->clk);
            if (d->clk.kind == 1 && !(d->clk.tsc_hz > 1e3 && d->clk.tsc_hz < 1e13))
                return fail(d, off + i, "expected a TSC rate between 1 kHz and 10 THz");
            d->ns_per_tick = d->clk.kind == 1 ? 1e9 / d->clk.tsc_hz : 1.0;
            break;
        case TALLY__META_WALL_OFFSET:
            d->t->wall_offset = i64;
            break;
        case TALLY__META_PID:
            d->t->pid = i64;
            break;
        case TALLY__META_RANK:
            if (vl >= 4)
                d->t->rank = i32;
            break;
        case TALLY__META_WORLD_SIZE:
            if (vl >= 4)
                d->t->world_size = i32;
            break;
        case TALLY__META_SAMPLES_UNIT:
            d->t->samples_unit = tl_intern(&d->t->strings, (const char *)v, vl);
            break;
        case TALLY__META_HOST:
            d->t->host = tl_intern(&d->t->strings, (const char *)v, vl);
            break;
        case TALLY__META_PROGRAM:
            d->t->program = tl_intern(&d->t->strings, (const char *)v, vl);
            break;
        case TALLY__META_END_NS:
            if (vl >= 8) {
                d->end_ns = tl_clamp_time(i64);
                d->have_end = 1;
            }
            break;
        default:
            break;
        }
        i += 8 + tally__pad8(vl);
    }
    return 0;
}

static int read_strings(tl_tally_dec *d, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__string_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(d, off + i, "expected a 32-byte string entry");
        memcpy(&e, p + i, sizeof e);
        uint64_t body = (uint64_t)e.name_len + e.file_len + e.func_len;
        if (body > len - i - sizeof e)
            return cut ? 0 : fail(d, off + i, "expected the string entry's text inside its chunk");
        tl_tally_site s;
        const char *text = (const char *)p + i + sizeof e;
        s.name = tl_intern(&d->t->strings, text, e.name_len);
        s.file = tl_intern(&d->t->strings, text + e.name_len, e.file_len);
        s.func = tl_intern(&d->t->strings, text + e.name_len + e.file_len, e.func_len);
        s.line = e.line;
        s.cat = clamp_cat(e.category);
        if (tl_grow_array(&d->sites, &d->cap_sites, d->nsites + 1, sizeof *d->sites) != 0)
            return fail_nomem(d, off);
        d->sites[d->nsites] = s;
        if (tl_u64map_put(&d->site_map, e.id, d->nsites) != 0)
            return fail_nomem(d, off);
        d->nsites++;
        i += tally__pad8(sizeof e + body);
    }
    return 0;
}

static int read_threads(tl_tally_dec *d, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__thread_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(d, off + i, "expected a 16-byte thread entry");
        memcpy(&e, p + i, sizeof e);
        if (e.name_len > len - i - sizeof e)
            return cut ? 0 : fail(d, off + i, "expected the thread name inside its chunk");
        if (e.name_len) {
            uint32_t tr = tl_trace_track(d->t, TL_TRACK_THREAD, d->t->pid, e.tid, -1);
            d->t->tracks[tr].name =
                tl_intern(&d->t->strings, (const char *)p + i + sizeof e, e.name_len);
        }
        i += tally__pad8(sizeof e + e.name_len);
    }
    return 0;
}

static int read_devices(tl_tally_dec *d, const unsigned char *p, size_t len, size_t off, int cut)
{
    size_t i = 0;
    while (i < len) {
        tally__device_entry e;
        if (len - i < sizeof e)
            return cut ? 0 : fail(d, off + i, "expected a 32-byte device entry");
        memcpy(&e, p + i, sizeof e);
        if (e.name_len > len - i - sizeof e)
            return cut ? 0 : fail(d, off + i, "expected the device name inside its chunk");
        tl_device *dev = tl_trace_device(d->t, e.id);
        if (dev) {
            dev->name = tl_intern(&d->t->strings, (const char *)p + i + sizeof e, e.name_len);
            dev->memory = e.memory;
            dev->sm_count = e.sm_count;
            dev->cc_major = e.cc_major;
            dev->cc_minor = e.cc_minor;
        }
        i += tally__pad8(sizeof e + e.name_len);
    }
    return 0;
}

static void read_stats(tl_tally_dec *d, const unsigned char *p, size_t len)
{
    tally__stats_chunk s;
    memset(&s, 0, sizeof s);
    memcpy(&s, p, len < sizeof s ? len & ~(size_t)7 : sizeof s); /* whole fields of a cut one */
    d->t->dropped = s.dropped;
    d->t->bad_pops = s.bad_pops;
    d->t->bad_ends = s.bad_ends;
    d->t->calls_outside = s.calls_outside;
    d->t->unclosed = s.unclosed;
    d->t->lost = s.lost;
    d->t->io_errno = s.io_errno;
    d->t->mem_unmatched_frees = s.bad_frees;
    d->t->mem_reused = s.reused_allocs;
    d->t->mem_bad_sizes = s.bad_sizes;
}

static int loss_cmp(const void *a, const void *b)
{
    const struct tl_thread_loss *x = a, *y = b;
    uint64_t nx = x->dropped + x->lost, ny = y->dropped + y->lost;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Per-thread losses (the last LOSSES chunk wins: one per closed window). */
static int read_losses(tl_tally_dec *d, const unsigned char *p, size_t len, size_t off)
{
    size_t n = len / sizeof(tally__loss_entry);
    struct tl_thread_loss *l = n ? calloc(n, sizeof *l) : NULL;
    if (n && !l)
        return fail_nomem(d, off);
    for (size_t i = 0; i < n; i++) {
        tally__loss_entry e;
        memcpy(&e, p + i * sizeof e, sizeof e);
        l[i].tid = e.tid;
        l[i].dropped = e.dropped;
        l[i].lost = e.lost;
    }
    if (n)
        qsort(l, n, sizeof *l, loss_cmp);
    free(d->t->thread_losses);
    d->t->thread_losses = l;
    d->t->nthread_losses = (uint32_t)n;
    return 0;
}

static int add_run(tl_tally_dec *d, size_t off, size_t plen, int cut)
{
    if (tl_grow_array(&d->runs, &d->cap_runs, d->nruns + 1, sizeof *d->runs) != 0)
        return fail_nomem(d, off);
    const unsigned char *p = at(d, off + sizeof(tally__chunk_header), sizeof(tally__events_header));
    if (!p)
        return -1;
    tl_tally_run *r = &d->runs[d->nruns++];
    r->off = off;
    memcpy(&r->h, p, sizeof r->h);
    r->nrec = (plen - sizeof r->h) / 16;
    r->cut = cut;
    if (r->h.slot == 0 || r->h.slot > (1u << 20))
        return fail(d, off + sizeof(tally__chunk_header),
                    "expected a thread slot between 1 and 2^20");
    return 0;
}

/* A chunk the program never wrote in full (killed while writing it), for the warning. */
static void note_unwritten(uint64_t *count, uint64_t *first, size_t off)
{
    if (!(*count)++ || off < *first)
        *first = off;
}

/* After a chunk header of zeros at off (bytes the program reserved and never wrote): where the
 * zeros end if a chunk header follows them, else len (the readable part ends). Returns 0, or
 * -1 on a read error. */
static int skip_unwritten(tl_tally_dec *d, size_t off, size_t *next)
{
    *next = d->len;
    while (d->len - off >= 8) {
        size_t n = d->len - off < (1u << 16) ? (d->len - off) & ~(size_t)7 : 1u << 16;
        const unsigned char *p = at(d, off, n);
        if (!p)
            return -1;
        size_t k = 0;
        uint64_t w = 0;
        while (k < n && (memcpy(&w, p + k, 8), w == 0))
            k += 8;
        off += k;
        if (k < n)
            break;
    }
    if (d->len - off < sizeof(tally__chunk_header))
        return 0;
    const unsigned char *p = at(d, off, sizeof(tally__chunk_header));
    if (!p)
        return -1;
    tally__chunk_header ch;
    memcpy(&ch, p, sizeof ch);
    if (ch.type != 0 && ch.type < 256 && ch.flags == 0)
        *next = off;
    return 0;
}

static int run_cmp(const void *a, const void *b)
{
    const tl_tally_run *x = a, *y = b;
    if (x->h.slot != y->h.slot)
        return x->h.slot < y->h.slot ? -1 : 1;
    if (x->h.seq != y->h.seq)
        return x->h.seq < y->h.seq ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

int tl_tally_open(tl_tally_dec *d, tl_trace *t, const void *data, int fd, size_t len,
                  const char *name, tl_error *err)
{
    memset(d, 0, sizeof *d);
    d->t = t;
    d->mem = data;
    d->fd = fd;
    d->len = len;
    d->name = name ? name : "(memory)";
    d->err = err;
    d->ns_per_tick = 1.0;

    if (len < sizeof(tally__file_header)) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected a 16-byte .tally header, the file has %zu bytes", len);
        return fail(d, 0, msg);
    }
    const unsigned char *p = at(d, 0, sizeof(tally__file_header));
    if (!p)
        return -1;
    tally__file_header fh;
    memcpy(&fh, p, sizeof fh);
    if (memcmp(fh.magic, TALLY__MAGIC, 8) != 0)
        return fail(d, 0, "expected the magic \"TALLYTRC\" (not a .tally file)");
    if (fh.major != TALLY__FORMAT_MAJOR) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected format version %d.x, found %u.%u", TALLY__FORMAT_MAJOR,
                 fh.major, fh.minor);
        return fail(d, 8, msg);
    }
    if (fh.header_size < sizeof fh || fh.header_size > len)
        return fail(d, 12, "expected a header size of at least 16 bytes inside the file");
    t->source = TL_SRC_TALLY;
    t->path = name;
    t->rank = -1;

    size_t off = fh.header_size;
    size_t ended_at = 0; /* where the readable part ends, before the end of the file */
    while (off < len) {
        if (len - off < sizeof(tally__chunk_header)) {
            t->cut_at = ended_at = off;
            break;
        }
        if (!(p = at(d, off, sizeof(tally__chunk_header))))
            return -1;
        tally__chunk_header ch;
        memcpy(&ch, p, sizeof ch);
        if (ch.type == 0 && ch.len == 0) { /* reserved by the program, never written */
            note_unwritten(&d->unwritten, &d->unwritten_at, off);
            size_t next;
            if (skip_unwritten(d, off, &next) != 0)
                return -1;
            if (next == len) {
                ended_at = off;
                break;
            }
            off = next;
            continue;
        }
        int cut = ch.len > len - off - sizeof ch;
        size_t plen = cut ? len - off - sizeof ch : (size_t)ch.len;
        size_t poff = off + sizeof ch;
        int e = 0;
        switch (ch.type) {
        case TALLY__CHUNK_META:
        case TALLY__CHUNK_STRINGS:
        case TALLY__CHUNK_THREADS:
        case TALLY__CHUNK_DEVICES:
        case TALLY__CHUNK_STATS:
        case TALLY__CHUNK_LOSSES:
            if (!(p = at(d, poff, plen)))
                return -1;
            if (ch.type == TALLY__CHUNK_META)
                e = read_meta(d, p, plen, poff, cut);
            else if (ch.type == TALLY__CHUNK_STRINGS)
                e = read_strings(d, p, plen, poff, cut);
            else if (ch.type == TALLY__CHUNK_THREADS)
                e = read_threads(d, p, plen, poff, cut);
            else if (ch.type == TALLY__CHUNK_DEVICES)
                e = read_devices(d, p, plen, poff, cut);
            else if (ch.type == TALLY__CHUNK_LOSSES)
                e = read_losses(d, p, plen, poff);
            else
                read_stats(d, p, plen);
            break;
        case TALLY__CHUNK_EVENTS:
            if (!cut && (ch.len < sizeof(tally__events_header) ||
                         (ch.len - sizeof(tally__events_header)) % 16 != 0))
                e = fail(d, off, "expected an events chunk of 32 bytes + 16-byte records");
            else if (plen >= sizeof(tally__events_header)) /* else cut inside its header */
                e = add_run(d, off, plen, cut);
            break;
        default:
            break; /* unknown chunk types are skipped */
        }
        if (e)
            return -1;
        if (cut) { /* the program was killed while writing it, or the disk was full */
            t->cut_at = ended_at = off;
            break;
        }
        off += sizeof ch + ch.len;
    }
    if (ended_at && d->nruns == 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "expected a complete chunk (file cut short, %zu bytes left)",
                 len - ended_at);
        return fail(d, ended_at, msg);
    }
    if (d->nruns)
        qsort(d->runs, d->nruns, sizeof *d->runs, run_cmp);
    return 0;
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* Per thread: state that carries over from one run of its buffer to the next. */
typedef struct thread_dec {
    uint32_t track;
    int64_t open_step; /* its reference, or -1 */
    int64_t open_step_no;
    uint64_t seq; /* of the run decoded last */
    int damaged;  /* that run was cut short or never written in full */
} thread_dec;

static int push_stack(tl_tally_walk *w, int64_t ref)
{
    if (tl_grow_array(&w->stack, &w->cap_stack, w->nstack + 1, sizeof *w->stack) != 0)
        return -1;
    w->stack[w->nstack++] = ref;
    return 0;
}

static inline void saw(tl_tally_walk *w, int64_t ns)
{
    if (ns > w->max_ns)
        w->max_ns = ns;
}

static void walk_start(tl_tally_walk *w, tl_tally_part *pt, tl_error *err)
{
    w->part = pt;
    w->err = err;
    w->nstack = 0;
    w->max_ns = INT64_MIN;
    w->any_step_end = 0;
    w->unwritten = w->unwritten_at = 0;
}

static int wfail(const tl_tally_dec *d, tl_tally_walk *w, size_t off, const char *what)
{
    tl_error_set(w->err, "%s: offset %zu: %s", d->name, off, what);
    return -1;
}

static int wfail_nomem(const tl_tally_dec *d, tl_tally_walk *w, size_t off)
{
    tl_error_setc(w->err, TL_ERR_NOMEM, "%s: offset %zu: out of memory", d->name, off);
    return -1;
}

/* The string id of text s[len]: the trace's (pt NULL: in order), or the part's own, tagged. */
static inline uint32_t walk_intern(tl_tally_dec *d, tl_tally_part *pt, const char *s, size_t len)
{
    if (!pt)
        return tl_intern(&d->t->strings, s, len);
    uint32_t id = tl_intern(&pt->strings, s, len);
    if (id >= TL_TALLY_DEFERRED) /* a tag's bit: the part fails (as if out of memory) */
        return 0;
    return id ? id | TL_TALLY_LOCAL : 0;
}

/* The track of kind, tid, device (the trace's pid): made if new in the decoding in order; a
 * part only finds those the count made (*tr UINT32_MAX and -1 when missing: the part fails). */
static inline int walk_track(tl_tally_dec *d, const tl_tally_part *pt, tl_track_kind kind,
                             int64_t tid, int32_t device, uint32_t *tr)
{
    if (!pt) {
        *tr = tl_trace_track(d->t, kind, d->t->pid, tid, device);
        return 0;
    }
    *tr = tl_trace_find_track(d->t, kind, d->t->pid, tid, device);
    return *tr == UINT32_MAX ? -1 : 0;
}

/* The argument named by a key the part did not define (yet): deferred to the merge, which looks
 * it up where the decoding in order would. Its tagged id, or 0 when out of memory. */
static uint32_t deferred_arg(tl_tally_part *pt, uint64_t key)
{
    uint64_t *k = tl_u64map_get(&pt->deferred_keys, key);
    size_t i = k ? (size_t)*k - 1 : pt->ndeferred;
    if (!k) {
        if (pt->ndeferred >= TL_TALLY_DEFERRED ||
            tl_grow_array(&pt->deferred, &pt->cap_deferred, pt->ndeferred + 1,
                          sizeof *pt->deferred) != 0 ||
            tl_u64map_put(&pt->deferred_keys, key, i + 1) != 0)
            return 0;
        pt->deferred[pt->ndeferred++] = (tl_tally_def){key, pt->strings.count};
    }
    return (uint32_t)i | TL_TALLY_LOCAL | TL_TALLY_DEFERRED;
}

/* Hand ev to the sink; its reference, or -1 when out of memory. In a part, the texts become the
 * part's ids first (the name, then the arguments: the order the sink would intern them), and
 * an argument named by an undefined key (def_key, when have_def) is deferred. */
static inline int64_t emit(tl_tally_dec *d, tl_tally_walk *w, tl_tally_part *pt,
                           const tl_tally_sink *s, tl_tally_ev *ev, int have_def, uint64_t def_key)
{
    saw(w, ev->e.ts);
    if (pt) {
        if (ev->e.name == TL_TALLY_TEXT &&
            !(ev->e.name = walk_intern(d, pt, ev->name, ev->name_len)) && ev->name_len)
            return -1;
        if (ev->e.args == TL_TALLY_TEXT &&
            !(ev->e.args = walk_intern(d, pt, ev->args, ev->args_len)) && ev->args_len)
            return -1;
        if (have_def && !(ev->e.args = deferred_arg(pt, def_key)))
            return -1;
    }
    return s->open(s->ctx, ev);
}

/* A BEGIN or END in a part: kept for the merge, which replays them in order. */
static int part_handle(tl_tally_part *pt, uint64_t h, int64_t v, int end)
{
    if (tl_grow_array(&pt->ops, &pt->cap_ops, pt->nops + 1, sizeof *pt->ops) != 0)
        return -1;
    pt->ops[pt->nops++] = (tl_tally_handle_op){h, v, end};
    return 0;
}

/* CUPTI's memory activity (a device event of category MEMORY, its address in the arguments as
 * "address": N) into the memory table too, on its stream track; the analysis finds the thread
 * that made it through the correlation id. Returns 0, or -1 when out of memory. */
static int cupti_memory(tl_tally_dec *d, const tl_tally_sink *s, const tally__fmt_device *dv,
                        const char *args, uint32_t args_len, uint32_t track)
{
    (void)d;
    tl_memev m;
    memset(&m, 0, sizeof m);
    m.ts = dv->start;
    m.bytes = dv->bytes;
    m.total_allocated = m.total_reserved = -1;
    m.device = (dv->flags & TALLY__DEV_MEM_DEVICE) ? dv->device : -1;
    m.category = TL_MEM_OTHER;
    m.track = track;
    m.corr = (uint32_t)dv->corr;
    static const char key[] = "\"address\":";
    const char *p = args_len >= sizeof key - 1 ? memmem(args, args_len, key, sizeof key - 1) : NULL;
    if (p) { /* args is not NULL here (a record without args has none) */
        const char *end = args + args_len;
        for (p += sizeof key - 1; p < end && *p == ' '; p++)
            ;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            m.addr = m.addr * 10 + (uint64_t)(*p - '0');
    }
    return s->memory(s->ctx, &m);
}

static inline void ev_init(tl_tally_ev *ev, uint32_t track, int64_t ts, uint16_t cat)
{
    /* copied from a blank one: a memset of the 104 bytes was a `rep stos`, a fifth of decode_run */
    static const tl_tally_ev blank = {.e = {.parent = TL_NONE, .link = TL_NONE}};
    *ev = blank;
    ev->e.ts = ts;
    ev->e.track = track;
    ev->e.cat = cat;
}

/* The BEGIN with handle h (reference ref) ends at ns: through the sink now if it was met, or
 * when it is (an END met first). The first END of a handle in decoding order wins. */
static int end_handle(tl_tally_dec *d, const tl_tally_sink *s, uint64_t h, int64_t ns)
{
    uint64_t *ref = tl_u64map_get(&d->begins, h);
    if (ref) {
        int64_t r = (int64_t)*ref;
        tl_u64map_del(&d->begins, h);
        saw(&d->walk, ns);
        return s->close(s->ctx, r, ns, 0);
    }
    if (tl_u64map_get(&d->ends, h))
        return 0; /* ended twice before its begin: keep the first */
    return tl_u64map_put(&d->ends, h, (uint64_t)ns);
}

static int begin_handle(tl_tally_dec *d, const tl_tally_sink *s, uint64_t h, int64_t ref)
{
    uint64_t *end = tl_u64map_get(&d->ends, h);
    if (end) {
        int64_t ns = (int64_t)*end;
        tl_u64map_del(&d->ends, h);
        saw(&d->walk, ns);
        return s->close(s->ctx, ref, ns, 0);
    }
    return tl_u64map_put(&d->begins, h, (uint64_t)ref);
}

static int zero16(const unsigned char *p)
{
    uint64_t w[2];
    memcpy(w, p, 16);
    return (w[0] | w[1]) == 0;
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

/* Decode one run (its n record slots at p) into events. A run cut short (the file ends inside
 * it) or never written in full (zeros from some record on) is read up to its last complete
 * record, and marked damaged: what its lost tail closed is unknown. */
static inline __attribute__((always_inline)) int
decode_run(tl_tally_dec *d, tl_tally_walk *w, tl_tally_part *pt, const tl_tally_sink *s,
           const tl_tally_run *c, const unsigned char *p, thread_dec *td)
{
    tl_trace *t = d->t;
    size_t n = c->nrec;
    size_t written = written_slots(p, n);
    uint64_t begin_seq = c->h.first_begin_seq;
    /* what a STR or VALUE says of the next record */
    const char *pend_name = NULL, *pend_arg = NULL;
    uint32_t pend_name_len = 0, pend_arg_len = 0;
    uint16_t pend_cat = 0;
    uint64_t pend_value = 0;
    int have_value = 0;
    uint64_t def_key = 0; /* in a part: an argument named by a key it did not define */
    int have_def = 0;
    uint64_t last_key = 0; /* the call site met last (0: none yet) and its index */
    size_t last_site = SIZE_MAX;
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
            return wfail(d, w, roff, "expected the record's payload inside its chunk");
        }
        if (i + slots > written && i + slots < n)
            break;                                       /* its payload runs into the zeros */
        const char *pl = (const char *)p + (i + 1) * 16; /* payload slots */
        tl_tally_ev ev;
        switch (type) {
        case TALLY__R_PUSH:
        case TALLY__R_BEGIN:
        case TALLY__R_MARK:
        case TALLY__R_COUNTER: {
            uint16_t cat = TL_CAT_USER;
            ev_init(&ev, td->track, to_ns(d, x.w0), 0);
            if (x.w1) {
                if (x.w1 != last_key) { /* a loop's ranges repeat their call sites */
                    uint64_t *si = tl_u64map_get(&d->site_map, x.w1);
                    last_key = x.w1;
                    last_site = si ? *si : SIZE_MAX;
                }
                if (last_site != SIZE_MAX) {
                    const tl_tally_site *site = &d->sites[last_site];
                    ev.e.name = site->name;
                    cat = site->cat;
                    ev.site_file = site->file;
                    ev.site_func = site->func;
                    ev.site_line = site->line;
                    ev.site = (uint32_t)last_site + 1;
                } else {
                    ev.e.name = walk_intern(d, pt, "(unknown)", 9);
                }
            } else if (pend_name) {
                ev.e.name = TL_TALLY_TEXT;
                ev.name = pend_name;
                ev.name_len = pend_name_len;
                cat = pend_cat;
            }
            if (type == TALLY__R_MARK)
                cat = TL_CAT_INSTANT;
            else if (type == TALLY__R_COUNTER)
                cat = TL_CAT_COUNTER;
            ev.e.cat = cat;
            if (pend_arg) {
                ev.e.args = TL_TALLY_TEXT;
                ev.args = pend_arg;
                ev.args_len = pend_arg_len;
            }
            if (type == TALLY__R_PUSH || type == TALLY__R_BEGIN) {
                ev.e.dur = -1;
                if (type == TALLY__R_BEGIN)
                    ev.e.flags |= TL_EV_ASYNC;
            } else {
                ev.e.flags |= TL_EV_INSTANT;
                if (type == TALLY__R_COUNTER && have_value) {
                    double v;
                    memcpy(&v, &pend_value, 8);
                    tl_counter_set(&ev.e, v);
                }
            }
            int64_t ref = emit(d, w, pt, s, &ev, have_def, def_key);
            if (ref < 0)
                return wfail_nomem(d, w, roff);
            if (type == TALLY__R_PUSH) {
                if (push_stack(w, ref) != 0)
                    return wfail_nomem(d, w, roff);
            } else if (type == TALLY__R_BEGIN) {
                uint64_t h = ((uint64_t)c->h.slot << 40) | (begin_seq & ((UINT64_C(1) << 40) - 1));
                begin_seq++;
                if ((pt ? part_handle(pt, h, ref, 0) : begin_handle(d, s, h, ref)) != 0)
                    return wfail_nomem(d, w, roff);
            }
            pend_name = pend_arg = NULL;
            have_value = have_def = 0;
            break;
        }
        case TALLY__R_POP:
            if (w->nstack) {
                int64_t ns = to_ns(d, x.w0);
                saw(w, ns);
                if (s->close(s->ctx, w->stack[--w->nstack], ns, 0) != 0)
                    return wfail_nomem(d, w, roff);
            }
            break;
        case TALLY__R_END:
            if ((pt ? part_handle(pt, x.w1, to_ns(d, x.w0), 1)
                    : end_handle(d, s, x.w1, to_ns(d, x.w0))) != 0)
                return wfail_nomem(d, w, roff);
            break;
        case TALLY__R_STEP_BEGIN: {
            int l =
                snprintf(w->step_name, sizeof w->step_name, "ProfilerStep#%lld", (long long)x.w1);
            ev_init(&ev, td->track, to_ns(d, x.w0), TL_CAT_STEP);
            ev.e.name = TL_TALLY_TEXT;
            ev.name = w->step_name;
            ev.name_len = (uint32_t)l;
            ev.e.value = (int64_t)x.w1;
            ev.e.dur = -1;
            if ((td->open_step = emit(d, w, pt, s, &ev, 0, 0)) < 0)
                return wfail_nomem(d, w, roff);
            td->open_step_no = (int64_t)x.w1;
            break;
        }
        case TALLY__R_STEP_END:
        case TALLY__R_STEP_STOP: {
            int64_t ns = to_ns(d, x.w0);
            saw(w, ns);
            if (type == TALLY__R_STEP_END) {
                w->any_step_end = 1;
                if (s->samples &&
                    s->samples(s->ctx, (int64_t)x.w1, have_value ? (int64_t)pend_value : 0) != 0)
                    return wfail_nomem(d, w, roff);
            }
            if (td->open_step >= 0 && td->open_step_no == (int64_t)x.w1) {
                uint16_t flags = type == TALLY__R_STEP_STOP ? TL_EV_UNCLOSED : 0;
                if (s->close(s->ctx, td->open_step, ns, flags) != 0)
                    return wfail_nomem(d, w, roff);
                td->open_step = -1;
            }
            have_value = 0;
            break;
        }
        case TALLY__R_STR: {
            if (x.w1 > (uint64_t)(slots - 1) * 16)
                return wfail(d, w, roff, "expected a string inside its record");
            unsigned role = TALLY__STR_ROLE(&x);
            if (role == TALLY__STR_NAME) {
                pend_name = pl;
                pend_name_len = (uint32_t)x.w1;
                pend_cat = clamp_cat(TALLY__STR_CAT(&x));
            } else if (role == TALLY__STR_ARG) {
                pend_arg = pl;
                pend_arg_len = (uint32_t)x.w1;
                have_def = 0;
                if (have_value) { /* a keyed argument: later ARGREFs name it by its key */
                    uint32_t id = walk_intern(d, pt, pl, (size_t)x.w1);
                    if (pt ? tl_u64map_put(&pt->arg_keys, pend_value, id) != 0 ||
                                 tl_grow_array(&pt->defs, &pt->cap_defs, pt->ndefs + 1,
                                               sizeof *pt->defs) != 0
                           : tl_u64map_put(&d->arg_keys, pend_value, id) != 0)
                        return wfail_nomem(d, w, roff);
                    if (pt)
                        pt->defs[pt->ndefs++] = (tl_tally_def){pend_value, id};
                    have_value = 0;
                }
            } else if (role == TALLY__STR_THREAD) {
                uint32_t id = walk_intern(d, pt, pl, (size_t)x.w1);
                if (!pt) {
                    t->tracks[td->track].name = id;
                } else {
                    if (tl_grow_array(&pt->names, &pt->cap_names, pt->nnames + 1,
                                      sizeof *pt->names) != 0)
                        return wfail_nomem(d, w, roff);
                    pt->names[pt->nnames++] = (tl_tally_name){td->track, id};
                }
            }
            break;
        }
        case TALLY__R_VALUE:
            pend_value = x.w1;
            have_value = 1;
            break;
        case TALLY__R_ARGREF: {
            if (pt) { /* its own definition, else the one before the part (at the merge) */
                uint64_t *id = tl_u64map_get(&pt->arg_keys, x.w1);
                pend_arg = id ? tl_str(&pt->strings, (uint32_t)*id & ~TL_TALLY_LOCAL) : NULL;
                pend_arg_len = id ? pt->strings.len[*id & ~TL_TALLY_LOCAL] : 0;
                have_def = !id;
                def_key = x.w1;
                break;
            }
            uint64_t *id = tl_u64map_get(&d->arg_keys, x.w1);
            if (id) {
                pend_arg = tl_str(&t->strings, (uint32_t)*id);
                pend_arg_len = t->strings.len[*id];
            } else { /* its definition was lost (a chunk cut or never written) */
                static const char lost[] = "(argument not in the file)";
                pend_arg = lost;
                pend_arg_len = sizeof lost - 1;
            }
            break;
        }
        case TALLY__R_DEVICE: {
            tally__fmt_device dv;
            if ((slots - 1) * 16 < sizeof dv)
                return wfail(d, w, roff, "expected a 64-byte device event");
            memcpy(&dv, pl, sizeof dv);
            if ((uint64_t)dv.name_len + dv.args_len > (slots - 1) * 16 - sizeof dv)
                return wfail(d, w, roff, "expected the device event's name inside its record");
            uint32_t tr;
            if (walk_track(d, pt, TL_TRACK_STREAM, dv.stream, dv.device, &tr) != 0)
                return wfail(d, w, roff, "a stream the count did not make");
            dv.start = tl_clamp_time(dv.start); /* device times are ns already */
            dv.end = tl_clamp_time(dv.end);
            ev_init(&ev, tr, dv.start, clamp_cat(dv.cat));
            ev.e.name = TL_TALLY_TEXT;
            ev.name = pl + sizeof dv;
            ev.name_len = dv.name_len;
            if (dv.args_len) {
                ev.e.args = TL_TALLY_TEXT;
                ev.args = pl + sizeof dv + dv.name_len;
                ev.args_len = dv.args_len;
            }
            ev.e.dur = tl_tally_dur(dv.start, dv.end);
            ev.e.corr = dv.corr;
            ev.e.value = dv.bytes;
            ev.e.copy = dv.copy_kind;
            ev.e.flags = dv.flags;
            saw(w, dv.end);
            if (emit(d, w, pt, s, &ev, 0, 0) < 0)
                return wfail_nomem(d, w, roff);
            if (dv.cat == TALLY__CAT_MEMORY && s->memory &&
                cupti_memory(d, s, &dv, ev.args, ev.args_len, tr) != 0)
                return wfail_nomem(d, w, roff);
            break;
        }
        case TALLY__R_API: {
            tally__fmt_api a;
            if ((slots - 1) * 16 < sizeof a)
                return wfail(d, w, roff, "expected a 40-byte API event");
            memcpy(&a, pl, sizeof a);
            if (a.name_len > (slots - 1) * 16 - sizeof a)
                return wfail(d, w, roff, "expected the API event's name inside its record");
            a.start = tl_clamp_time(a.start); /* API times are ns already */
            a.end = tl_clamp_time(a.end);
            uint32_t tr;
            if (walk_track(d, pt, TL_TRACK_THREAD, a.tid, -1, &tr) != 0)
                return wfail(d, w, roff, "a thread the count did not make");
            ev_init(&ev, tr, a.start, clamp_cat(a.cat));
            ev.e.name = TL_TALLY_TEXT;
            ev.name = pl + sizeof a;
            ev.name_len = a.name_len;
            ev.e.dur = tl_tally_dur(a.start, a.end);
            ev.e.corr = a.corr;
            saw(w, a.end);
            if (emit(d, w, pt, s, &ev, 0, 0) < 0)
                return wfail_nomem(d, w, roff);
            break;
        }
        case TALLY__R_MEMORY:
        case TALLY__R_MEMORY_SHORT: {
            tally__fmt_memory m = {0, 0, 0, -1, -1};
            memcpy(&m, pl, type == TALLY__R_MEMORY ? sizeof m : 16);
            int64_t ns = (m.category & TALLY__MEM_NS)
                             ? (int64_t)(x.w0 & TALLY__TS_MASK) /* ns already (CUPTI) */
                             : to_ns(d, x.w0);
            uint32_t flags = m.category & ~(uint32_t)TALLY__MEM_CAT_MASK;
            if (!(flags & (TALLY__MEM_LABEL | TALLY__MEM_LIVE))) {
                /* an allocation or a free: an event of the thread, for the ops table */
                ev_init(&ev, td->track, ns, TL_CAT_MEMORY);
                ev.e.name = TL_TALLY_TEXT;
                ev.name = "[memory]";
                ev.name_len = 8;
                ev.e.value = (int64_t)x.w1;
                ev.e.flags = (uint16_t)(TL_EV_INSTANT | (m.device >= 0 ? TL_EV_MEM_DEVICE : 0));
                if (emit(d, w, pt, s, &ev, 0, 0) < 0)
                    return wfail_nomem(d, w, roff);
            } else {
                saw(w, ns);
            }
            if (s->memory) {
                tl_memev me;
                memset(&me, 0, sizeof me);
                me.ts = ns;
                me.bytes = (int64_t)x.w1; /* a label's: the block's size, or 0 */
                me.addr = m.ptr;
                me.total_allocated = m.total_allocated;
                me.total_reserved = m.total_reserved;
                me.device = m.device;
                me.category = (uint16_t)((m.category & TALLY__MEM_CAT_MASK) < TL_MEM_CAT_COUNT
                                             ? (m.category & TALLY__MEM_CAT_MASK)
                                             : TL_MEM_OTHER);
                me.flags = (uint16_t)(((flags & TALLY__MEM_LABEL) ? TL_MEM_LABEL : 0) |
                                      ((flags & TALLY__MEM_LIVE) ? TL_MEM_LIVE : 0));
                me.name = pend_name ? walk_intern(d, pt, pend_name, pend_name_len) : 0;
                me.track = td->track;
                if (s->memory(s->ctx, &me) != 0)
                    return wfail_nomem(d, w, roff);
            }
            pend_name = NULL;
            break;
        }
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "expected a record type 1..16, found %u", type);
            return wfail(d, w, roff, msg);
        }
        }
        i += slots;
        if (i >= n)
            return 0;
    }
    /* left early: the rest of the run was cut off with the file or never written */
    td->damaged = 1;
    if (!c->cut)
        note_unwritten(&w->unwritten, &w->unwritten_at, c->off);
    return 0;
}

/* decode_run made twice: in order (no part: none of a part's work on the way) and in a part */
static int decode_run_in_order(tl_tally_dec *d, tl_tally_walk *w, const tl_tally_sink *s,
                               const tl_tally_run *c, const unsigned char *p, thread_dec *td)
{
    return decode_run(d, w, NULL, s, c, p, td);
}

static int decode_run_in_part(tl_tally_dec *d, tl_tally_walk *w, const tl_tally_sink *s,
                              const tl_tally_run *c, const unsigned char *p, thread_dec *td)
{
    return decode_run(d, w, w->part, s, c, p, td);
}

/* The runs' walk that the count and the decoding share: whether run c begins another thread
 * (a slot is reused after its thread exits); then *slot, *tid and *track are its (1), or its
 * track is not there for part pt (-1: walk_track). */
static int run_thread(tl_tally_dec *d, const tl_tally_part *pt, const tl_tally_run *c,
                      uint32_t *slot, int64_t *tid, uint32_t *track)
{
    if (c->h.slot == *slot && c->h.tid == *tid)
        return 0;
    *slot = c->h.slot;
    *tid = c->h.tid;
    return walk_track(d, pt, TL_TRACK_THREAD, c->h.tid, -1, track) != 0 ? -1 : 1;
}

/* Run c's record slots; NULL when they cannot be read (err says why). */
static const unsigned char *run_records(tl_tally_dec *d, const tl_tally_run *c)
{
    return at(d, c->off + sizeof(tally__chunk_header) + sizeof(tally__events_header), c->nrec * 16);
}

/* How many events decode_run makes of a run on each track (count[track], tracks made as it makes
 * them): the same walk, reading only what says whether a record is an event and on which track.
 * A record decode_run refuses ends the count of its run (the decoding says what is wrong). */
static int count_run(tl_tally_dec *d, const tl_tally_run *c, const unsigned char *p, uint32_t track,
                     size_t **count, size_t *cap)
{
    tl_trace *t = d->t;
    size_t n = c->nrec, written = written_slots(p, n);
    size_t *cnt = *count, ncnt = *cap; /* (kept here: the loop is the count's time) */
    for (size_t i = 0; i < written;) {
        tally__rec x;
        memcpy(&x, p + i * 16, 16);
        unsigned type = TALLY__REC_TYPE(&x);
        uint64_t slots = tally__rec_slots(&x);
        if (slots > n - i || (i + slots > written && i + slots < n))
            return 0;
        const unsigned char *pl = p + (i + 1) * 16;
        uint32_t tr = track;
        switch (type) {
        case TALLY__R_PUSH:
        case TALLY__R_BEGIN:
        case TALLY__R_MARK:
        case TALLY__R_COUNTER:
        case TALLY__R_STEP_BEGIN:
            break;
        case TALLY__R_MEMORY:
        case TALLY__R_MEMORY_SHORT: {
            uint32_t cat;
            memcpy(&cat, pl + offsetof(tally__fmt_memory, category), sizeof cat);
            if (cat & (TALLY__MEM_LABEL | TALLY__MEM_LIVE))
                tr = UINT32_MAX;
            break;
        }
        case TALLY__R_DEVICE: {
            tally__fmt_device dv;
            if ((slots - 1) * 16 < sizeof dv)
                return 0;
            memcpy(&dv, pl, sizeof dv);
            tr = tl_trace_track(t, TL_TRACK_STREAM, t->pid, dv.stream, dv.device);
            break;
        }
        case TALLY__R_API: {
            tally__fmt_api a;
            if ((slots - 1) * 16 < sizeof a)
                return 0;
            memcpy(&a, pl, sizeof a);
            tr = tl_trace_track(t, TL_TRACK_THREAD, t->pid, a.tid, -1);
            break;
        }
        default:
            tr = UINT32_MAX; /* no event */
        }
        if (tr != UINT32_MAX) {
            if (tr >= ncnt) {
                size_t had = *cap;
                if (tl_grow_array(count, cap, (size_t)tr + 1, sizeof **count) != 0)
                    return fail_nomem(d, c->off);
                memset(*count + had, 0, (*cap - had) * sizeof **count);
                cnt = *count;
                ncnt = *cap;
            }
            cnt[tr]++;
        }
        i += slots;
    }
    return 0;
}

int tl_tally_count(tl_tally_dec *d, const tl_tally_part *parts, size_t nparts, size_t **count,
                   size_t *ncount)
{
    tl_trace *t = d->t;
    tl_tally_part all = {.first_run = 0, .end_run = d->nruns};
    if (!parts) {
        parts = &all;
        nparts = 1;
    }
    /* each part's counts (tracks are made as the runs go, so their number is known at the end) */
    size_t **cnt = calloc(nparts, sizeof *cnt), *cap = calloc(nparts, sizeof *cap), *m = NULL;
    int rc = -1;
    if (!cnt || !cap) {
        fail_nomem(d, 0);
        goto out;
    }
    uint32_t cur_slot = 0, track = 0;
    int64_t cur_tid = 0;
    for (size_t p = 0; p < nparts; p++)
        for (size_t i = parts[p].first_run; i < parts[p].end_run; i++) {
            const tl_tally_run *c = &d->runs[i];
            run_thread(d, NULL, c, &cur_slot, &cur_tid, &track);
            const unsigned char *r = run_records(d, c);
            if (!r)
                goto done; /* the decoding says why */
            if (count_run(d, c, r, track, &cnt[p], &cap[p]) != 0)
                goto out;
        }
done:;
    /* an entry for every track (those made before, at the index, too) */
    size_t nt = t->ntracks;
    if (nt && nparts > SIZE_MAX / sizeof *m / nt) {
        fail_nomem(d, 0);
        goto out;
    }
    size_t cells = nparts * nt;
    if (!(m = calloc(cells ? cells : 1, sizeof *m))) {
        fail_nomem(d, 0);
        goto out;
    }
    for (size_t p = 0; p < nparts; p++)
        if (cap[p])
            memcpy(m + p * nt, cnt[p], (cap[p] < nt ? cap[p] : nt) * sizeof *m);
    *count = m;
    *ncount = nt;
    rc = 0;
out:
    for (size_t p = 0; cnt && p < nparts; p++)
        free(cnt[p]);
    free(cnt);
    free(cap);
    return rc;
}

/* Decode runs [first, end) into s with walk w, as one decoding in order does them. */
static int decode_runs(tl_tally_dec *d, tl_tally_walk *w, const tl_tally_sink *s, size_t first,
                       size_t end)
{
    thread_dec td = {0, -1, 0, 0, 0};
    uint32_t cur_slot = 0;
    int64_t cur_tid = 0;
    for (size_t i = first; i < end; i++) {
        const tl_tally_run *c = &d->runs[i];
        int other = run_thread(d, w->part, c, &cur_slot, &cur_tid, &td.track);
        if (other < 0)
            return wfail(d, w, c->off, "a thread the count did not make");
        if (other) {
            /* another thread: the previous thread's open pushes stay open (the sink closes them
             * at the end) */
            w->nstack = 0;
            td.open_step = -1;
        } else if (td.damaged || c->h.seq != td.seq + 1) {
            /* records of this thread are missing in between: the pops among them are unknown,
             * so the ranges open before stay open and this run pops only its own pushes */
            w->nstack = 0;
        }
        td.seq = c->h.seq;
        const unsigned char *p = run_records(d, c);
        if (!p || (w->part ? decode_run_in_part(d, w, s, c, p, &td)
                           : decode_run_in_order(d, w, s, c, p, &td)) != 0)
            return -1;
    }
    return 0;
}

/* A decoding in order, or the settling of parts, starts: d's walk and the handles' maps. */
static void decoding_start(tl_tally_dec *d)
{
    walk_start(&d->walk, NULL, d->err);
    d->walk.unwritten = d->unwritten;
    d->walk.unwritten_at = d->unwritten_at;
    tl_u64map_clear(&d->begins);
    tl_u64map_clear(&d->ends);
}

int tl_tally_decode(tl_tally_dec *d, const tl_tally_sink *s)
{
    tl_trace *t = d->t;
    decoding_start(d);
    int rc = decode_runs(d, &d->walk, s, 0, d->nruns);
    t->unwritten = d->walk.unwritten;
    t->unwritten_at = d->walk.unwritten_at;
    return rc;
}

size_t tl_tally_split(const tl_tally_dec *d, tl_tally_part *parts, size_t max)
{
    if (!max || !d->nruns)
        return 0;
    size_t total = 0;
    for (size_t i = 0; i < d->nruns; i++)
        total += d->runs[i].nrec;
    size_t n = 0, before = 0; /* the records of the parts before the current one */
    for (size_t i = 0; i < d->nruns;) {
        size_t j = i + 1, recs = d->runs[i].nrec; /* a thread's runs: [i, j) */
        while (j < d->nruns && d->runs[j].h.slot == d->runs[i].h.slot &&
               d->runs[j].h.tid == d->runs[i].h.tid)
            recs += d->runs[j++].nrec;
        /* a new part when the ones so far have their share */
        if (!n || (n < max && before >= (double)total * (double)n / (double)max)) {
            tl_tally_part *pt = &parts[n++];
            memset(pt, 0, sizeof *pt);
            pt->first_run = i;
            tl_strtab_init(&pt->strings);
        }
        parts[n - 1].end_run = j;
        parts[n - 1].nrec += recs;
        before += recs;
        i = j;
    }
    return n;
}

int tl_tally_decode_part(tl_tally_dec *d, tl_tally_part *pt, const tl_tally_sink *s)
{
    walk_start(&pt->walk, pt, &pt->err);
    return decode_runs(d, &pt->walk, s, pt->first_run, pt->end_run);
}

/* A deferred argument's trace string id, where the decoding in order would have looked its key
 * up: after the parts before. Returns 0, or -1 (out of memory) with err filled. */
static int settle_deferred(tl_tally_dec *d, uint64_t key, uint32_t *to)
{
    static const char lost[] = "(argument not in the file)";
    uint64_t *id = tl_u64map_get(&d->arg_keys, key);
    if (id) {
        *to = (uint32_t)*id;
        return 0;
    }
    if (!(*to = tl_intern(&d->t->strings, lost, sizeof lost - 1)))
        return fail_nomem(d, 0);
    return 0;
}

int tl_tally_merge(tl_tally_dec *d, tl_tally_part *parts, size_t n, const tl_tally_sink *s)
{
    tl_trace *t = d->t;
    decoding_start(d);
    for (size_t p = 0; p < n; p++) {
        tl_tally_part *pt = &parts[p];
        tl_tally_walk *w = &pt->walk;
        free(pt->remap);
        free(pt->dremap);
        pt->remap = malloc(pt->strings.count * sizeof *pt->remap);
        pt->dremap = malloc((pt->ndeferred ? pt->ndeferred : 1) * sizeof *pt->dremap);
        if (!pt->remap || !pt->dremap)
            return fail_nomem(d, 0);
        /* the part's texts in the order it met them, its deferred arguments where they were met */
        size_t k = 0;
        for (uint32_t j = 0; j < pt->strings.count; j++) {
            for (; k < pt->ndeferred && pt->deferred[k].id <= j; k++)
                if (settle_deferred(d, pt->deferred[k].key, &pt->dremap[k]) != 0)
                    return -1;
            pt->remap[j] = j ? tl_intern(&t->strings, pt->strings.str[j], pt->strings.len[j]) : 0;
            if (j && !pt->remap[j] && pt->strings.len[j])
                return fail_nomem(d, 0);
        }
        for (; k < pt->ndeferred; k++)
            if (settle_deferred(d, pt->deferred[k].key, &pt->dremap[k]) != 0)
                return -1;
        for (size_t i = 0; i < pt->nnames; i++)
            t->tracks[pt->names[i].track].name = tl_tally_part_id(pt, pt->names[i].id);
        for (size_t i = 0; i < pt->ndefs; i++)
            if (tl_u64map_put(&d->arg_keys, pt->defs[i].key, tl_tally_part_id(pt, pt->defs[i].id)))
                return fail_nomem(d, 0);
        saw(&d->walk, w->max_ns);
        d->walk.any_step_end |= w->any_step_end;
        if (w->unwritten && (!d->walk.unwritten || w->unwritten_at < d->walk.unwritten_at))
            d->walk.unwritten_at = w->unwritten_at;
        d->walk.unwritten += w->unwritten;
        for (size_t i = 0; i < pt->nops; i++) {
            const tl_tally_handle_op *o = &pt->ops[i];
            if ((o->end ? end_handle(d, s, o->h, o->v) : begin_handle(d, s, o->h, o->v)) != 0)
                return fail_nomem(d, 0);
        }
    }
    t->unwritten = d->walk.unwritten;
    t->unwritten_at = d->walk.unwritten_at;
    return 0;
}

void tl_tally_part_free(tl_tally_part *pt)
{
    free(pt->walk.stack);
    tl_strtab_free(&pt->strings);
    tl_u64map_free(&pt->arg_keys);
    tl_u64map_free(&pt->deferred_keys);
    free(pt->defs);
    free(pt->deferred);
    free(pt->ops);
    free(pt->names);
    free(pt->remap);
    free(pt->dremap);
    memset(pt, 0, sizeof *pt);
}

int64_t tl_tally_end(const tl_tally_dec *d)
{
    int64_t end = d->have_end ? d->end_ns : d->walk.max_ns;
    return end < d->walk.max_ns ? d->walk.max_ns : end;
}

void tl_tally_close(tl_tally_dec *d)
{
    free(d->buf);
    free(d->sites);
    free(d->runs);
    free(d->walk.stack);
    tl_u64map_free(&d->site_map);
    tl_u64map_free(&d->begins);
    tl_u64map_free(&d->ends);
    tl_u64map_free(&d->arg_keys);
    memset(d, 0, sizeof *d);
}
