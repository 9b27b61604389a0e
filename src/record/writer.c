/*
 * buffer.c — per-thread state, the buffer pool, the writer thread and the .tally file.
 *
 * The pool is a fixed array of buffer descriptors (memory cap / buffer size of them), each with
 * an atomic state: EMPTY (no memory yet) -> OWNED by a thread -> FULL (handed to the writer) ->
 * WRITING -> FREE -> OWNED ... A thread whose buffer is full hands it over with a release store
 * of FULL and takes a FREE one with a compare-and-swap: no lock. When no buffer is FREE and the
 * cap allows no new one, the thread's records are dropped and counted until one comes back.
 * The writer keeps a few FREE buffers touched in advance (a first-touch page fault costs 5-15 us
 * on the project's VMs) and appends FULL buffers to the file while the program runs.
 *
 * Every write to the file reserves its byte range with an atomic add on the file offset and
 * writes it with pwrite, so the writer thread, a window closer and a signal handler never mix
 * their bytes; a chunk cut short by a crash is the file's end for the reader.
 *
 * Call-site strings are interned when a buffer is written: the writer scans the records for
 * call-site pointers it has not written to this file yet and puts a STRINGS chunk before the
 * EVENTS chunk that needs it.
 */
#include "record/internal.h"
#include "record/recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RLX memory_order_relaxed

TALLY__TLS tally__tstate *tally__self;
_Atomic(tally__tstate *) tally__threads[TALLY__MAX_THREADS];
_Atomic uint32_t tally__nthreads;
static TALLY__TLS int tstate_failed;
static pthread_key_t tstate_key;
static pthread_once_t tstate_key_once = PTHREAD_ONCE_INIT;

/* ---- byte builder ---------------------------------------------------------------------------- */

typedef struct bb {
    char *p;
    size_t len, cap;
    int fixed; /* no realloc (signal handler): overflow sets err */
    int err;
} bb;

static int bb_room(bb *b, size_t n)
{
    if (b->len + n <= b->cap)
        return 1;
    if (b->fixed) {
        b->err = 1;
        return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
        b->err = 1;
        return 0;
    }
    b->p = q;
    b->cap = cap;
    return 1;
}

static void bb_put(bb *b, const void *d, size_t n)
{
    if (!bb_room(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void bb_pad8(bb *b)
{
    static const char z[8];
    bb_put(b, z, tally__pad8(b->len) - b->len);
}

/* ---- call-site set --------------------------------------------------------------------------- */

typedef struct locset {
    uint64_t *k;
    size_t cap, n;
    int fixed;
} locset;

static inline size_t loc_hash(uint64_t x, size_t cap)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* 1 if id was added now, 0 if it was there (or the set is full). */
static int locset_add(locset *s, uint64_t id)
{
    if (!s->fixed && (s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 1024;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        if (nk) {
            for (size_t i = 0; i < s->cap; i++)
                if (s->k[i]) {
                    size_t h = loc_hash(s->k[i], ncap);
                    while (nk[h])
                        h = (h + 1) & (ncap - 1);
                    nk[h] = s->k[i];
                }
            free(s->k);
            s->k = nk;
            s->cap = ncap;
        }
    }
    if (!s->cap || (s->n + 1) * 4 > s->cap * 3)
        return 1; /* full: write the string again (duplicates are harmless) */
    size_t h = loc_hash(id, s->cap);
    while (s->k[h]) {
        if (s->k[h] == id)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->k[h] = id;
    s->n++;
    return 1;
}

static void locset_clear(locset *s)
{
    if (s->k)
        memset(s->k, 0, s->cap * sizeof *s->k);
    s->n = 0;
}

/* ---- writer state ---------------------------------------------------------------------------- */

typedef struct pool {
    tally__buf *bufs;
    uint32_t nbufs;
    size_t bufsize; /* bytes */
    uint32_t nrec;  /* records per buffer */
    struct pool *old;
} pool;

static struct {
    pool *pool;
    _Atomic uint32_t hint;

    _Atomic int fd;
    _Atomic uint64_t off;
    _Atomic uint64_t file_records, file_buffers;

    pthread_mutex_t wlock; /* file writes by the writer and closers; the call-site set */
    locset set;
    bb scratch;

    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    int stop, kicked, running;
    pthread_t thread;

    /* names of OS threads given by tid (NVTX), and device properties */
    pthread_mutex_t mlock;
    struct tid_name {
        int64_t tid;
        char name[64];
    } * tid_names;
    size_t ntid_names;
    tally__device_entry *devs;
    char (*dev_names)[128];
    size_t ndevs;
} W = {
    .fd = -1,
    .wlock = PTHREAD_MUTEX_INITIALIZER,
    .qlock = PTHREAD_MUTEX_INITIALIZER,
    .qcond = PTHREAD_COND_INITIALIZER,
    .mlock = PTHREAD_MUTEX_INITIALIZER,
};

/* The signal handler's own call-site table and scratch: no malloc there. */
static uint64_t sig_keys[8192];
static char sig_scratch[1 << 20];

/* ---- thread states --------------------------------------------------------------------------- */

static void release_thread_buffer(tally__tstate *ts, int hand_off);

/* States of exited threads are reused by new threads (same slot, so handles stay unique: the
 * handle sequence and the run sequence go on; the EVENTS headers carry the new tid). */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static tally__tstate *free_states;

static void tstate_exit(void *p)
{
    tally__tstate *ts = p;
    if (!ts)
        return;
    tally__spin_lock(&ts->slow_lock);
    release_thread_buffer(ts, 1);
    ts->name[0] = 0;
    tally__spin_unlock(&ts->slow_lock);
    tally__writer_kick();
    tally__self = NULL;
    pthread_mutex_lock(&free_lock);
    ts->next_free = free_states;
    free_states = ts;
    pthread_mutex_unlock(&free_lock);
}

static tally__tstate *reuse_state(void)
{
    pthread_mutex_lock(&free_lock);
    tally__tstate *ts = free_states;
    if (ts)
        free_states = ts->next_free;
    pthread_mutex_unlock(&free_lock);
    if (!ts)
        return NULL;
    tally__spin_lock(&ts->slow_lock);
    ts->tid = (int64_t)syscall(SYS_gettid);
    ts->name[0] = 0;
    ts->next_free = NULL;
    tally__spin_unlock(&ts->slow_lock);
    atomic_store_explicit(&ts->depth, 0, RLX);
    ts->dmask = 0;
    ts->pending_pops = 0; /* the exited thread's: counted as dropped already */
    ts->in_slow = 0;
    ts->drop_backoff = 0;
    ts->tm_depth = 0;
    ts->straddle = atomic_load(&tally__sess.straddle_now);
    atomic_store(&ts->epoch, atomic_load(&tally__sess.epoch));
    return ts;
}

static void make_key(void)
{
    pthread_key_create(&tstate_key, tstate_exit);
}

tally__tstate *tally__tstate_create(void)
{
    if (tally__self)
        return tally__self;
    if (tstate_failed)
        return NULL;
    int saved = errno;
    tstate_failed = 1; /* also the recursion guard while we allocate */
    tally__tstate *ts = reuse_state();
    if (ts)
        goto publish;
    uint32_t slot = atomic_fetch_add(&tally__nthreads, 1) + 1;
    if (slot > TALLY__MAX_THREADS) {
        atomic_fetch_add_explicit(&tally__sess.dropped_nothread, 1, RLX);
        goto out;
    }
    if (posix_memalign((void **)&ts, 64, sizeof *ts) != 0) {
        ts = NULL;
        goto out;
    }
    memset(ts, 0, sizeof *ts);
    ts->slot = slot;
    ts->tid = (int64_t)syscall(SYS_gettid);
    ts->straddle = atomic_load(&tally__sess.straddle_now);
    atomic_store(&ts->epoch, atomic_load(&tally__sess.epoch));
    atomic_store_explicit(&tally__threads[slot - 1], ts, memory_order_release);
publish:
    pthread_once(&tstate_key_once, make_key);
    pthread_setspecific(tstate_key, ts);
    tally__self = ts;
    tstate_failed = 0;
out:
    errno = saved;
    return ts;
}

/* ---- pool ------------------------------------------------------------------------------------ */

static void touch(void *p, size_t n)
{
    volatile char *c = p;
    for (size_t i = 0; i < n; i += 4096)
        c[i] = 0;
}

static int buf_alloc_mem(tally__buf *b, size_t size)
{
    if (b->mem)
        return 0;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    touch(m, size);
    b->mem = m;
    return 0;
}

int tally__pool_init(size_t cap, size_t buffer_size)
{
    buffer_size = (buffer_size + 4095) & ~(size_t)4095;
    if (buffer_size < 4096)
        buffer_size = 4096;
    uint32_t n = (uint32_t)(cap / buffer_size);
    if (n < 1)
        n = 1;
    if (n > (1u << 20))
        n = 1u << 20;
    pool *cur = W.pool;
    if (cur && cur->bufsize == buffer_size && cur->nbufs == n)
        return 0; /* reuse: buffers are FREE (or EMPTY) after the previous stop */
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return TALLY_ENOMEM;
    p->bufs = calloc(n, sizeof *p->bufs);
    if (!p->bufs) {
        free(p);
        return TALLY_ENOMEM;
    }
    p->nbufs = n;
    p->bufsize = buffer_size;
    p->nrec = (uint32_t)(buffer_size / sizeof(tally__rec));
    /* An old pool's memory is kept: a thread that raced with stop may still hold a pointer. */
    p->old = cur;
    W.pool = p;
    /* a few buffers ready before the first event */
    for (uint32_t i = 0; i < n && i < 4; i++)
        if (buf_alloc_mem(&p->bufs[i], buffer_size) == 0)
            atomic_store(&p->bufs[i].state, TALLY__B_FREE);
    return 0;
}

void tally__pool_free(void)
{
    /* Buffers stay mapped for the next session (see pool_init); threads let theirs go. */
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (!ts)
            continue;
        tally__spin_lock(&ts->slow_lock);
        release_thread_buffer(ts, 0);
        tally__spin_unlock(&ts->slow_lock);
    }
    pool *p = W.pool;
    if (p)
        for (uint32_t i = 0; i < p->nbufs; i++) {
            int s = atomic_load(&p->bufs[i].state);
            if (s == TALLY__B_FULL || s == TALLY__B_OWNED)
                atomic_store(&p->bufs[i].state, TALLY__B_FREE);
        }
}

static tally__buf *acquire(void)
{
    pool *p = W.pool;
    if (!p)
        return NULL;
    uint32_t n = p->nbufs, h = atomic_load_explicit(&W.hint, RLX) % n;
    for (uint32_t k = 0; k < n; k++) {
        tally__buf *b = &p->bufs[(h + k) % n];
        int s = TALLY__B_FREE;
        if (atomic_load_explicit(&b->state, RLX) == s &&
            atomic_compare_exchange_strong(&b->state, &s, TALLY__B_OWNED)) {
            atomic_store_explicit(&W.hint, (h + k + 1) % n, RLX);
            return b;
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        tally__buf *b = &p->bufs[k];
        int s = TALLY__B_EMPTY;
        if (atomic_load_explicit(&b->state, RLX) == s &&
            atomic_compare_exchange_strong(&b->state, &s, TALLY__B_ALLOC)) {
            if (buf_alloc_mem(b, p->bufsize) != 0) {
                atomic_store(&b->state, TALLY__B_EMPTY);
                return NULL;
            }
            atomic_store(&b->state, TALLY__B_OWNED);
            return b;
        }
    }
    return NULL;
}

/* Under ts->slow_lock: hand [fu, pos) to the writer (hand_off) or just let the buffer go. */
static void release_thread_buffer(tally__tstate *ts, int hand_off)
{
    tally__buf *b = ts->buf;
    if (!b)
        return;
    tally__rec *pos = atomic_load_explicit(&ts->pos, memory_order_acquire);
    atomic_store_explicit(&ts->end, NULL, RLX);
    atomic_store_explicit(&ts->pos, NULL, RLX);
    if (hand_off && pos > ts->fu) {
        b->slot = ts->slot;
        b->tid = ts->tid;
        b->seq = ts->chunk_seq++;
        b->first_begin_seq = ts->fu_begin_seq;
        b->from = (uint32_t)(ts->fu - ts->start);
        b->to = (uint32_t)(pos - ts->start);
        atomic_store_explicit(&b->state, TALLY__B_FULL, memory_order_release);
    } else {
        atomic_store_explicit(&b->state, TALLY__B_FREE, memory_order_release);
    }
    ts->buf = NULL;
    ts->start = ts->fu = NULL;
}

tally__rec *tally__refill(tally__tstate *ts, uint32_t n)
{
    if (ts->in_slow) { /* re-entered from a signal handler */
        atomic_store_explicit(&ts->dropped, atomic_load_explicit(&ts->dropped, RLX) + 1, RLX);
        return NULL;
    }
    ts->in_slow = 1;
    int saved = errno;
    tally__rec *ret = NULL;
    int handed = 0;
    tally__spin_lock(&ts->slow_lock);
    if (ts->buf) {
        handed = atomic_load_explicit(&ts->pos, RLX) > ts->fu;
        release_thread_buffer(ts, 1);
    }
    if (ts->drop_backoff) {
        ts->drop_backoff--;
    } else {
        tally__buf *b = acquire();
        pool *p = W.pool;
        if (!b || !p) {
            ts->drop_backoff = 64;
        } else {
            ts->buf = b;
            ts->start = ts->fu = b->mem;
            ts->fu_begin_seq = atomic_load_explicit(&ts->begin_seq, RLX);
            tally__rec *pos = b->mem;
            if (ts->pending_pops) {
                uint64_t t = tally__ticks();
                for (; ts->pending_pops && pos < b->mem + p->nrec / 2; ts->pending_pops--, pos++) {
                    pos->w0 = TALLY__REC(TALLY__R_POP, t);
                    pos->w1 = 1; /* late: counted as dropped when it was made */
                }
            }
            atomic_store_explicit(&ts->pos, pos, memory_order_release);
            atomic_store_explicit(&ts->end, b->mem + p->nrec, RLX);
            if ((size_t)(b->mem + p->nrec - pos) >= n)
                ret = pos;
        }
    }
    tally__spin_unlock(&ts->slow_lock);
    if (!ret)
        atomic_store_explicit(&ts->dropped, atomic_load_explicit(&ts->dropped, RLX) + 1, RLX);
    if (handed)
        tally__writer_kick();
    errno = saved;
    ts->in_slow = 0;
    return ret;
}

/* ---- chunks ---------------------------------------------------------------------------------- */

/* Write len bytes as one reserved range; returns 0 or -1. Async-signal-safe. */
static int put_bytes(const struct iovec *iov, int n)
{
    int fd = atomic_load(&W.fd);
    if (fd < 0)
        return -1;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    off_t off = (off_t)atomic_fetch_add(&W.off, total);
    for (int i = 0; i < n; i++) {
        const char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left) {
            ssize_t w = pwrite(fd, p, left, off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return -1;
            p += w;
            left -= (size_t)w;
            off += w;
        }
    }
    return 0;
}

static int put_chunk(uint32_t type, const void *payload, size_t len)
{
    tally__chunk_header h = {type, 0, len};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    return put_bytes(iov, 2);
}

static size_t cstrlen(const char *s)
{
    return s ? strlen(s) : 0;
}

/*
 * Write records [r, r + n) of one thread as an EVENTS chunk, preceded by a STRINGS chunk for the
 * call sites not yet in set. Returns the number of BEGIN records (for handle numbering).
 * Async-signal-safe when set and scratch are fixed.
 */
static uint64_t write_events(uint32_t slot, int64_t tid, uint64_t seq, uint64_t fbs,
                             const tally__rec *r, size_t n, locset *set, bb *scratch)
{
    scratch->len = 0;
    scratch->err = 0;
    tally__chunk_header sh = {TALLY__CHUNK_STRINGS, 0, 0};
    bb_put(scratch, &sh, sizeof sh);
    uint64_t begins = 0, records = 0;
    for (size_t i = 0; i < n;) {
        const tally__rec *x = &r[i];
        unsigned t = TALLY__REC_TYPE(x);
        uint64_t slots = tally__rec_slots(x);
        /* records the program made through the API (not step boundaries, prefixes, late pops) */
        if (t != TALLY__R_STR && t != TALLY__R_VALUE && t != TALLY__R_STEP_BEGIN &&
            t != TALLY__R_STEP_END && t != TALLY__R_STEP_STOP && !(t == TALLY__R_POP && x->w1))
            records++;
        if (t == TALLY__R_BEGIN)
            begins++;
        if ((t == TALLY__R_PUSH || t == TALLY__R_BEGIN || t == TALLY__R_MARK ||
             t == TALLY__R_COUNTER) &&
            x->w1 && locset_add(set, x->w1)) {
            const tally_srcloc *loc = (const tally_srcloc *)(uintptr_t)x->w1;
            size_t nl = cstrlen(loc->name), fl = cstrlen(loc->file), gl = cstrlen(loc->function);
            if (nl > TALLY__STR_MAX)
                nl = TALLY__STR_MAX;
            if (fl > TALLY__STR_MAX)
                fl = TALLY__STR_MAX;
            if (gl > TALLY__STR_MAX)
                gl = TALLY__STR_MAX;
            tally__string_entry e = {
                x->w1, loc->line, loc->category, (uint32_t)nl, (uint32_t)fl, (uint32_t)gl, 0};
            size_t mark = scratch->len;
            bb_put(scratch, &e, sizeof e);
            bb_put(scratch, loc->name, nl);
            bb_put(scratch, loc->file, fl);
            bb_put(scratch, loc->function, gl);
            bb_pad8(scratch);
            if (scratch->err) /* no room (signal path): drop this entry, keep going */
                scratch->len = mark, scratch->err = 0;
        }
        i += slots;
    }
    tally__chunk_header *shp = (tally__chunk_header *)scratch->p;
    size_t slen = scratch->len - sizeof sh;
    shp->len = slen;
    struct {
        tally__chunk_header h;
        tally__events_header e;
    } eh = {{TALLY__CHUNK_EVENTS, 0, sizeof(tally__events_header) + n * sizeof(tally__rec)},
            {slot, 0, tid, seq, fbs}};
    struct iovec iov[3];
    int k = 0;
    if (slen) {
        iov[k].iov_base = scratch->p;
        iov[k++].iov_len = scratch->len;
    }
    iov[k].iov_base = &eh;
    iov[k++].iov_len = sizeof eh;
    iov[k].iov_base = (void *)r;
    iov[k++].iov_len = n * sizeof(tally__rec);
    if (put_bytes(iov, k) == 0) {
        atomic_fetch_add(&W.file_records, records);
        atomic_fetch_add(&W.file_buffers, 1);
    }
    return begins;
}

/* Write every FULL buffer. Caller holds W.wlock (or is the signal handler with its own set). */
static void write_full(locset *set, bb *scratch)
{
    pool *p = W.pool;
    if (!p)
        return;
    for (uint32_t i = 0; i < p->nbufs; i++) {
        tally__buf *b = &p->bufs[i];
        int s = TALLY__B_FULL;
        if (atomic_load_explicit(&b->state, RLX) != s ||
            !atomic_compare_exchange_strong(&b->state, &s, TALLY__B_WRITING))
            continue;
        if (atomic_load(&W.fd) >= 0)
            write_events(b->slot, b->tid, b->seq, b->first_begin_seq, b->mem + b->from,
                         b->to - b->from, set, scratch);
        atomic_store_explicit(&b->state, TALLY__B_FREE, memory_order_release);
    }
}

/* Write [fu, pos) of every thread's current buffer. locked: take slow locks (else try). */
static void write_partials(locset *set, bb *scratch, int locked)
{
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (!ts)
            continue;
        if (locked)
            tally__spin_lock(&ts->slow_lock);
        else if (!tally__spin_trylock(&ts->slow_lock))
            continue;
        tally__rec *pos = atomic_load_explicit(&ts->pos, memory_order_acquire);
        if (ts->buf && pos && pos > ts->fu) {
            uint64_t begins = write_events(ts->slot, ts->tid, ts->chunk_seq++, ts->fu_begin_seq,
                                           ts->fu, (size_t)(pos - ts->fu), set, scratch);
            ts->fu_begin_seq += begins;
            ts->fu = pos;
        }
        tally__spin_unlock(&ts->slow_lock);
    }
}

static void writer_replenish(void)
{
    pool *p = W.pool;
    if (!p)
        return;
    /* spares: two, and one more per two recording threads (they may all fill up at once) */
    uint32_t nt = atomic_load_explicit(&tally__nthreads, RLX);
    uint32_t want = 2 + (nt < 64 ? nt : 64) / 2, free_n = 0;
    for (uint32_t i = 0; i < p->nbufs && free_n < want; i++)
        free_n += atomic_load_explicit(&p->bufs[i].state, RLX) == TALLY__B_FREE;
    for (uint32_t i = 0; i < p->nbufs && free_n < want; i++) {
        tally__buf *b = &p->bufs[i];
        int s = TALLY__B_EMPTY;
        if (atomic_load_explicit(&b->state, RLX) == s &&
            atomic_compare_exchange_strong(&b->state, &s, TALLY__B_ALLOC)) {
            if (buf_alloc_mem(b, p->bufsize) == 0) {
                atomic_store(&b->state, TALLY__B_FREE);
                free_n++;
            } else {
                atomic_store(&b->state, TALLY__B_EMPTY);
                break;
            }
        }
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the program's threads */
    pthread_mutex_lock(&W.qlock);
    while (!W.stop) {
        if (!W.kicked) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 100 * 1000000;
            if (dl.tv_nsec >= 1000000000) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&W.qcond, &W.qlock, &dl);
        }
        W.kicked = 0;
        pthread_mutex_unlock(&W.qlock);
        pthread_mutex_lock(&W.wlock);
        write_full(&W.set, &W.scratch);
        pthread_mutex_unlock(&W.wlock);
        writer_replenish();
        pthread_mutex_lock(&W.qlock);
    }
    pthread_mutex_unlock(&W.qlock);
    return NULL;
}

int tally__writer_start(void)
{
    pthread_mutex_lock(&W.qlock);
    W.stop = 0;
    W.kicked = 0;
    pthread_mutex_unlock(&W.qlock);
    if (pthread_create(&W.thread, NULL, writer_main, NULL) != 0)
        return TALLY_ENOMEM;
    W.running = 1;
    return 0;
}

void tally__writer_stop(void)
{
    if (!W.running)
        return;
    pthread_mutex_lock(&W.qlock);
    W.stop = 1;
    pthread_cond_signal(&W.qcond);
    pthread_mutex_unlock(&W.qlock);
    pthread_join(W.thread, NULL);
    W.running = 0;
}

void tally__writer_kick(void)
{
    int saved = errno;
    pthread_mutex_lock(&W.qlock);
    W.kicked = 1;
    pthread_cond_signal(&W.qcond);
    pthread_mutex_unlock(&W.qlock);
    errno = saved;
}

/* ---- files ----------------------------------------------------------------------------------- */

static void meta_put(bb *b, uint32_t key, const void *v, uint32_t len)
{
    bb_put(b, &key, 4);
    bb_put(b, &len, 4);
    bb_put(b, v, len);
    bb_pad8(b);
}

static void meta_put_i64(bb *b, uint32_t key, int64_t v)
{
    meta_put(b, key, &v, 8);
}

static void meta_clock(bb *b)
{
    tally__meta_clock c = {0};
    c.kind = tally__clk.use_tsc ? 1 : 0;
    c.tsc0 = tally__clk.tsc0;
    c.ns0 = tally__clk.ns0;
    c.tsc_hz = tally__clk.tsc_hz;
    meta_put(b, TALLY__META_CLOCK, &c, sizeof c);
}

int tally__file_open(const char *path, int window_index, int64_t first_step)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return TALLY_EIO;
    pthread_mutex_lock(&W.wlock);
    locset_clear(&W.set);
    atomic_store(&W.off, 0);
    atomic_store(&W.file_records, 0);
    atomic_store(&W.file_buffers, 0);
    atomic_store(&W.fd, fd);
    tally__file_header h;
    memcpy(h.magic, TALLY__MAGIC, 8);
    h.major = TALLY__FORMAT_MAJOR;
    h.minor = TALLY__FORMAT_MINOR;
    h.header_size = sizeof h;
    struct iovec iov = {&h, sizeof h};
    int rc = put_bytes(&iov, 1);
    bb m = {0};
    meta_clock(&m);
    meta_put_i64(&m, TALLY__META_WALL_OFFSET, tally__ident.wall_offset);
    meta_put_i64(&m, TALLY__META_PID, tally__ident.pid);
    meta_put(&m, TALLY__META_HOST, tally__ident.host, (uint32_t)strlen(tally__ident.host));
    meta_put(&m, TALLY__META_PROGRAM, tally__ident.program, (uint32_t)strlen(tally__ident.program));
    meta_put(&m, TALLY__META_RANK, &tally__ident.rank, 4);
    meta_put(&m, TALLY__META_WORLD_SIZE, &tally__ident.world, 4);
    meta_put(&m, TALLY__META_SAMPLES_UNIT, tally__ident.samples_unit,
             (uint32_t)strlen(tally__ident.samples_unit));
    tally__meta_window w = {window_index, 0, first_step};
    meta_put(&m, TALLY__META_WINDOW, &w, sizeof w);
    meta_put_i64(&m, TALLY__META_START_NS, tally__ticks_to_ns(tally__ticks()));
    if (m.err || put_chunk(TALLY__CHUNK_META, m.p, m.len) != 0)
        rc = -1;
    free(m.p);
    pthread_mutex_unlock(&W.wlock);
    if (rc != 0) {
        atomic_store(&W.fd, -1);
        close(fd);
        unlink(path);
        return TALLY_EIO;
    }
    return 0;
}

static void threads_chunk(bb *b)
{
    b->len = 0;
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (!ts)
            continue;
        char name[64];
        tally__spin_lock(&ts->slow_lock);
        memcpy(name, ts->name, sizeof name);
        tally__spin_unlock(&ts->slow_lock);
        name[63] = 0;
        tally__thread_entry e = {ts->slot, (uint32_t)strlen(name), ts->tid};
        bb_put(b, &e, sizeof e);
        bb_put(b, name, e.name_len);
        bb_pad8(b);
    }
    pthread_mutex_lock(&W.mlock);
    for (size_t i = 0; i < W.ntid_names; i++) {
        tally__thread_entry e = {0, (uint32_t)strlen(W.tid_names[i].name), W.tid_names[i].tid};
        bb_put(b, &e, sizeof e);
        bb_put(b, W.tid_names[i].name, e.name_len);
        bb_pad8(b);
    }
    pthread_mutex_unlock(&W.mlock);
}

static void devices_chunk(bb *b)
{
    b->len = 0;
    pthread_mutex_lock(&W.mlock);
    for (size_t i = 0; i < W.ndevs; i++) {
        bb_put(b, &W.devs[i], sizeof W.devs[i]);
        bb_put(b, W.dev_names[i], W.devs[i].name_len);
        bb_pad8(b);
    }
    pthread_mutex_unlock(&W.mlock);
}

int tally__file_close(const tally__stats_chunk *st, uint64_t *records_out)
{
    pthread_mutex_lock(&W.wlock);
    int fd = atomic_load(&W.fd);
    if (fd < 0) {
        pthread_mutex_unlock(&W.wlock);
        return TALLY_EIO;
    }
    write_full(&W.set, &W.scratch);
    write_partials(&W.set, &W.scratch, 1);
    bb b = {0};
    int rc = 0;
    threads_chunk(&b);
    if (b.len && put_chunk(TALLY__CHUNK_THREADS, b.p, b.len) != 0)
        rc = -1;
    devices_chunk(&b);
    if (b.len && put_chunk(TALLY__CHUNK_DEVICES, b.p, b.len) != 0)
        rc = -1;
    tally__stats_chunk s = *st;
    s.records = atomic_load(&W.file_records);
    s.buffers = atomic_load(&W.file_buffers);
    if (put_chunk(TALLY__CHUNK_STATS, &s, sizeof s) != 0)
        rc = -1;
    b.len = 0;
    tally__clock_refine();
    meta_clock(&b);
    meta_put_i64(&b, TALLY__META_END_NS, tally__ticks_to_ns(tally__ticks()));
    if (b.err || put_chunk(TALLY__CHUNK_META, b.p, b.len) != 0)
        rc = -1;
    free(b.p);
    atomic_store(&W.fd, -1);
    if (close(fd) != 0)
        rc = -1;
    if (records_out)
        *records_out = s.records;
    atomic_fetch_add(&tally__sess.buffers, s.buffers);
    pthread_mutex_unlock(&W.wlock);
    return rc ? TALLY_EIO : 0;
}

/* In a forked child: the parent's file and writer are not ours; let both go without a write. */
void tally__file_forget(void)
{
    int fd = atomic_exchange(&W.fd, -1);
    if (fd >= 0)
        close(fd);
    W.running = 0;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    W.wlock = m;
    W.qlock = m;
    W.mlock = m;
    W.qcond = c;
}

void tally__flush_now(void)
{
    pthread_mutex_lock(&W.wlock);
    if (atomic_load(&W.fd) >= 0) {
        write_full(&W.set, &W.scratch);
        write_partials(&W.set, &W.scratch, 1);
    }
    pthread_mutex_unlock(&W.wlock);
}

void tally__flush_all(void)
{
    int saved = errno;
    tally__flush_now();
    errno = saved;
}

/* Signal handler: no locks, no malloc. The writer may be writing at the same time; byte ranges
 * are reserved atomically, and the buffer state machine keeps each buffer written once. */
void tally__file_emergency_flush(void)
{
    if (atomic_load(&W.fd) < 0)
        return;
    locset set = {sig_keys, sizeof sig_keys / sizeof *sig_keys, 0, 1};
    memset(sig_keys, 0, sizeof sig_keys);
    bb scratch = {sig_scratch, 0, sizeof sig_scratch, 1, 0};
    write_full(&set, &scratch);
    write_partials(&set, &scratch, 0);
    tally__stats_chunk s = {0};
    s.records = atomic_load(&W.file_records);
    s.buffers = atomic_load(&W.file_buffers);
    s.calls_outside = tally__outside_total();
    put_chunk(TALLY__CHUNK_STATS, &s, sizeof s);
    struct {
        uint32_t key, len;
        int64_t v;
    } end = {TALLY__META_END_NS, 8, tally__ticks_to_ns(tally__ticks())};
    put_chunk(TALLY__CHUNK_META, &end, sizeof end);
}

/* ---- names and devices from collectors
 * ------------------------------------------------------------ */

void tally__name_thread(int64_t tid, const char *name)
{
    if (!name)
        return;
    int saved = errno;
    pthread_mutex_lock(&W.mlock);
    size_t i;
    for (i = 0; i < W.ntid_names; i++)
        if (W.tid_names[i].tid == tid)
            break;
    if (i == W.ntid_names) {
        void *q = realloc(W.tid_names, (W.ntid_names + 1) * sizeof *W.tid_names);
        if (q) {
            W.tid_names = q;
            W.ntid_names++;
        } else {
            i = (size_t)-1;
        }
    }
    if (i != (size_t)-1) {
        W.tid_names[i].tid = tid;
        snprintf(W.tid_names[i].name, sizeof W.tid_names[i].name, "%s", name);
    }
    pthread_mutex_unlock(&W.mlock);
    errno = saved;
}

void tally__record_device_props(int32_t id, const char *name, int64_t memory, int32_t sm_count,
                                int32_t cc_major, int32_t cc_minor)
{
    int saved = errno;
    pthread_mutex_lock(&W.mlock);
    size_t i;
    for (i = 0; i < W.ndevs; i++)
        if (W.devs[i].id == id)
            break;
    if (i == W.ndevs) {
        void *a = realloc(W.devs, (W.ndevs + 1) * sizeof *W.devs);
        if (a)
            W.devs = a;
        void *n = realloc(W.dev_names, (W.ndevs + 1) * sizeof *W.dev_names);
        if (n)
            W.dev_names = n;
        if (a && n)
            W.ndevs++;
        else
            i = (size_t)-1;
    }
    if (i != (size_t)-1) {
        snprintf(W.dev_names[i], sizeof W.dev_names[i], "%s", name ? name : "");
        tally__device_entry e = {
            id, sm_count, memory, cc_major, cc_minor, (uint32_t)strlen(W.dev_names[i]), 0};
        W.devs[i] = e;
    }
    pthread_mutex_unlock(&W.mlock);
    errno = saved;
}
