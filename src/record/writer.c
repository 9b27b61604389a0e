/*
 * writer.c — the writer thread and the .tally file.
 *
 * One thread does every write to the file. It appends the buffers threads hand over as they
 * fill, and every flush interval (TALLY_FLUSH_MS, 50 ms by default) it also appends what each
 * thread has recorded since into its current buffer, so that a program killed by SIGKILL, a
 * segfault or abort loses at most the last interval: the page cache holds everything written,
 * whatever happens to the process. Opening and closing a window's file are requests that a
 * program thread hands to the writer and waits for. Because the writer blocks every signal, a
 * file-size limit (RLIMIT_FSIZE) gives it EFBIG and never kills the program with SIGXFSZ; any
 * write error (ENOSPC, EFBIG, EIO) stops the recording cleanly: what could not be written is
 * counted per thread as lost, and closing the file reports the system error.
 *
 * Each thread's records reach the file in the order they were made: the writer writes a
 * thread's current buffer only when none of its full buffers waits to be written, and writes
 * full buffers sorted by thread and sequence. That order lets the writer account, as it goes,
 * for the time spent in dataloader ranges (the reader cost of the summary the program prints at
 * stop), with no work on the recording path.
 *
 * Every write reserves its byte range with an atomic add on the file offset and writes it with
 * pwrite, so a signal handler's emergency flush never mixes its bytes with the writer's; a chunk
 * cut short by a crash is read up to its last complete record.
 *
 * Call-site strings are interned as buffers are written: the writer scans the records for
 * call-site pointers it has not written to this file yet and puts a STRINGS chunk before the
 * EVENTS chunk that needs them.
 */
#include "record/internal.h"
#include "record/recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RLX memory_order_relaxed

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

/* The call sites already written to the file: an open-addressing set in front of which a small
 * direct-mapped cache answers the common case (a few hot call sites) without hashing. */
typedef struct locset {
    uint64_t *k;
    size_t cap, n;
    int fixed;
    uint64_t recent[64];
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
    uint64_t *r = &s->recent[(id >> 4) & 63];
    if (*r == id)
        return 0;
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
        if (s->k[h] == id) {
            *r = id;
            return 0;
        }
        h = (h + 1) & (s->cap - 1);
    }
    s->k[h] = id;
    s->n++;
    *r = id;
    return 1;
}

static void locset_clear(locset *s)
{
    if (s->k)
        memset(s->k, 0, s->cap * sizeof *s->k);
    memset(s->recent, 0, sizeof s->recent);
    s->n = 0;
}

/* ---- writer state ---------------------------------------------------------------------------- */

/* Per thread slot, in the order its records were made: the outermost open dataloader range. */
typedef struct thread_acct {
    int64_t tid;
    uint32_t depth;    /* open push ranges */
    uint32_t dl_level; /* depth + 1 at which the outermost open dataloader range was pushed */
    uint64_t dl_t0;    /* its start, ticks */
} thread_acct;

typedef int (*request_fn)(void *arg);

static struct {
    pthread_mutex_t lock; /* the fields up to `thread` */
    pthread_cond_t wake;  /* the writer waits here */
    pthread_cond_t done;  /* requesters wait here */
    int running, stop, kicked;
    int flush_ms;
    request_fn req_fn;
    void *req_arg;
    int req_rc;
    uint64_t req_seq, done_seq;
    pthread_t thread;

    /* the open file (writer thread; fd and off are also read by the emergency flush) */
    _Atomic int fd;
    _Atomic uint64_t off;
    _Atomic int io_errno; /* the first write error of the file, 0 = none */
    uint64_t fsize_max;   /* RLIMIT_FSIZE when the file was opened */
    _Atomic uint64_t file_records, file_buffers, file_lost;
    locset set;
    bb scratch;
    thread_acct accts[TALLY__MAX_THREADS];

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
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .fd = -1,
    .mlock = PTHREAD_MUTEX_INITIALIZER,
};

/* The signal handler's own call-site table and scratch: no malloc there. */
static uint64_t sig_keys[8192];
static char sig_scratch[1 << 20];

int tally__file_errno(void)
{
    return atomic_load(&W.io_errno);
}

/* ---- bytes to the file ----------------------------------------------------------------------- */

/* Write the iovecs as one reserved byte range; 0, or -1 with the error in W.io_errno (the first
 * error stops every later write of the file). Async-signal-safe. */
static int put_bytes(const struct iovec *iov, int n)
{
    int fd = atomic_load(&W.fd);
    if (fd < 0 || atomic_load(&W.io_errno))
        return -1;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    off_t off = (off_t)atomic_fetch_add(&W.off, total);
    if ((uint64_t)off + total > W.fsize_max) {
        /* past the file-size limit: stop here rather than have the kernel send SIGXFSZ to a
         * thread that may not block it (the emergency flush runs on the program's threads) */
        int z = 0;
        atomic_compare_exchange_strong(&W.io_errno, &z, EFBIG);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left) {
            ssize_t w = pwrite(fd, p, left, off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int z = 0;
                atomic_compare_exchange_strong(&W.io_errno, &z, w < 0 ? errno : ENOSPC);
                return -1;
            }
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

/* ---- events ---------------------------------------------------------------------------------- */

/* What a scan of a run of records found. */
typedef struct scan {
    uint64_t records; /* records the program made through the API */
    uint64_t begins;  /* BEGIN records (handle numbering) */
} scan;

/* Count the records of [r, r + n); with set: add a STRINGS entry to scratch for every call site
 * not yet in set; with a: account for dataloader ranges. Async-signal-safe when set and scratch
 * are fixed and a is NULL. */
static scan scan_records(const tally__rec *r, size_t n, locset *set, bb *scratch, thread_acct *a)
{
    scan s = {0, 0};
    unsigned pending_cat = 0; /* category of a STR NAME before a push with a copied name */
    for (size_t i = 0; i < n;) {
        const tally__rec *x = &r[i];
        unsigned t = TALLY__REC_TYPE(x);
        uint64_t slots = tally__rec_slots(x);
        if (slots > n - i)
            break; /* cannot happen with our own buffers; never read past them */
        /* records the program made through the API (not step boundaries, prefixes, late pops) */
        if (t != TALLY__R_STR && t != TALLY__R_VALUE && t != TALLY__R_ARGREF &&
            t != TALLY__R_STEP_BEGIN && t != TALLY__R_STEP_END && t != TALLY__R_STEP_STOP &&
            !(t == TALLY__R_POP && x->w1))
            s.records++;
        switch (t) {
        case TALLY__R_BEGIN:
            s.begins++;
            /* fall through */
        case TALLY__R_PUSH:
        case TALLY__R_MARK:
        case TALLY__R_COUNTER: {
            const tally_srcloc *loc = (const tally_srcloc *)(uintptr_t)x->w1;
            if (a && t == TALLY__R_PUSH) {
                unsigned cat = loc ? loc->category : pending_cat;
                if (cat == TALLY_DATALOADER && !a->dl_level) {
                    a->dl_level = a->depth + 1;
                    a->dl_t0 = x->w0 & TALLY__TS_MASK;
                }
                a->depth++;
            }
            pending_cat = 0;
            if (!set || !loc || !locset_add(set, x->w1))
                break;
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
            break;
        }
        case TALLY__R_POP:
            if (a && a->depth) {
                a->depth--;
                if (a->dl_level && a->depth + 1 == a->dl_level) {
                    uint64_t t1 = x->w0 & TALLY__TS_MASK;
                    if (t1 > a->dl_t0)
                        tally__perf_add_reader(t1, tally__ticks_to_ns(t1) -
                                                       tally__ticks_to_ns(a->dl_t0));
                    a->dl_level = 0;
                }
            }
            break;
        case TALLY__R_STR:
            if (TALLY__STR_ROLE(x) == TALLY__STR_NAME)
                pending_cat = TALLY__STR_CAT(x);
            break;
        default:
            break;
        }
        i += slots;
    }
    return s;
}

/* Write records [r, r + n) of one thread as an EVENTS chunk, preceded by a STRINGS chunk for the
 * call sites not yet in set; after a write error, count them as lost instead. Returns the number
 * of BEGIN records (for handle numbering). Async-signal-safe when set and scratch are fixed and
 * a is NULL. */
static uint64_t write_events(tally__tstate *ts, uint32_t slot, int64_t tid, uint64_t seq,
                             uint64_t fbs, const tally__rec *r, size_t n, locset *set, bb *scratch,
                             thread_acct *a)
{
    if (a && a->tid != tid) { /* a slot reused by a new thread: its nesting starts afresh */
        memset(a, 0, sizeof *a);
        a->tid = tid;
    }
    if (atomic_load(&W.io_errno)) {
        scan s = scan_records(r, n, NULL, NULL, a);
        atomic_fetch_add(&W.file_lost, s.records);
        if (ts)
            atomic_fetch_add_explicit(&ts->lost, s.records, RLX);
        return s.begins;
    }
    scratch->len = 0;
    scratch->err = 0;
    tally__chunk_header sh = {TALLY__CHUNK_STRINGS, 0, 0};
    bb_put(scratch, &sh, sizeof sh);
    scan s = scan_records(r, n, set, scratch, a);
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
        atomic_fetch_add(&W.file_records, s.records);
        atomic_fetch_add(&W.file_buffers, 1);
    } else {
        atomic_fetch_add(&W.file_lost, s.records);
        if (ts)
            atomic_fetch_add_explicit(&ts->lost, s.records, RLX);
        /* the file cannot take more: stop recording; the program goes on, its calls counted
         * as lost until the window ends */
        int on = TALLY__GATE_ON;
        __atomic_compare_exchange_n((int *)&tally__recording, &on, TALLY__GATE_FAILED, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
    return s.begins;
}

static tally__tstate *slot_state(uint32_t slot)
{
    return slot && slot <= TALLY__MAX_THREADS ? atomic_load(&tally__threads[slot - 1]) : NULL;
}

static int buf_order(const void *x, const void *y)
{
    const tally__buf *a = *(tally__buf *const *)x, *b = *(tally__buf *const *)y;
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Write every FULL buffer, each thread's in sequence order (writer thread). Returns how many. */
static uint32_t write_full(void)
{
    tally__pool *p = tally__pool_cur;
    if (!p)
        return 0;
    enum { BATCH = 256 };
    tally__buf *batch[BATCH];
    uint32_t total = 0, n;
    do {
        n = 0;
        for (uint32_t i = 0; i < p->nbufs && n < BATCH; i++) {
            tally__buf *b = &p->bufs[i];
            int s = TALLY__B_FULL;
            if (atomic_load_explicit(&b->state, memory_order_acquire) == s &&
                atomic_compare_exchange_strong(&b->state, &s, TALLY__B_WRITING))
                batch[n++] = b;
        }
        qsort(batch, n, sizeof *batch, buf_order);
        for (uint32_t i = 0; i < n; i++) {
            tally__buf *b = batch[i];
            tally__tstate *ts = slot_state(b->slot);
            write_events(ts, b->slot, b->tid, b->seq, b->first_begin_seq, b->mem + b->from,
                         b->to - b->from, &W.set, &W.scratch, &W.accts[b->slot - 1]);
            if (ts)
                atomic_fetch_sub(&ts->full_pending, 1);
            atomic_store_explicit(&b->state, TALLY__B_FREE, memory_order_release);
        }
        total += n;
    } while (n == BATCH);
    return total;
}

/* Write [fu, pos) of every thread whose full buffers are all written (writer thread). wait: take
 * the threads' slow locks (else skip a thread that holds its own). Returns the number of
 * threads skipped because a full buffer of theirs is still waiting. */
static uint32_t write_partials(int wait)
{
    uint32_t waiting = 0;
    TALLY__FOR_EACH_THREAD(ts)
    {
        if (wait)
            tally__spin_lock(&ts->slow_lock);
        else if (!tally__spin_trylock(&ts->slow_lock))
            continue;
        tally__rec *pos = atomic_load_explicit(&ts->pos, memory_order_acquire);
        if (atomic_load(&ts->full_pending)) {
            waiting++;
        } else if (ts->buf && pos && pos > ts->fu) {
            uint64_t begins =
                write_events(ts, ts->slot, ts->tid, ts->chunk_seq++, ts->fu_begin_seq, ts->fu,
                             (size_t)(pos - ts->fu), &W.set, &W.scratch, &W.accts[ts->slot - 1]);
            ts->fu_begin_seq += begins;
            ts->fu = pos;
        }
        tally__spin_unlock(&ts->slow_lock);
    }
    return waiting;
}

/* Everything recorded so far goes to the file, each thread's records in order. */
static void write_all(void)
{
    for (int round = 0; round < 1000; round++) {
        write_full();
        if (write_partials(1) == 0)
            return;
    }
}

static void writer_replenish(void)
{
    tally__pool *p = tally__pool_cur;
    if (!p)
        return;
    /* spares: two, and one more per recording thread (they may all fill up at once) */
    uint32_t nt = tally__thread_count();
    uint32_t want = 2 + (nt < 64 ? nt : 64), free_n = 0;
    for (uint32_t i = 0; i < p->nbufs && free_n < want; i++)
        free_n += atomic_load_explicit(&p->bufs[i].state, RLX) == TALLY__B_FREE;
    while (free_n < want && tally__pool_grow() == 0)
        free_n++;
}

/* ---- the thread ------------------------------------------------------------------------------ */

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals (SIGXFSZ too) are the program's business */
    pthread_mutex_lock(&W.lock);
    int64_t next_flush = mono_ms() + W.flush_ms;
    for (;;) {
        if (W.req_seq != W.done_seq) {
            request_fn fn = W.req_fn;
            void *a = W.req_arg;
            pthread_mutex_unlock(&W.lock);
            int rc = fn(a);
            pthread_mutex_lock(&W.lock);
            W.req_rc = rc;
            W.done_seq = W.req_seq;
            pthread_cond_broadcast(&W.done);
            continue;
        }
        if (W.stop)
            break;
        int64_t now = mono_ms();
        if (!W.kicked && now < next_flush) {
            struct timespec dl;
            clock_gettime(CLOCK_MONOTONIC, &dl);
            int64_t ns = dl.tv_nsec + (next_flush - now) * 1000000;
            dl.tv_sec += ns / 1000000000;
            dl.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&W.wake, &W.lock, &dl);
            continue; /* look at requests and the clock again */
        }
        W.kicked = 0;
        int flush = mono_ms() >= next_flush;
        pthread_mutex_unlock(&W.lock);
        if (atomic_load(&W.fd) >= 0) {
            write_full();
            if (flush)
                write_partials(0);
        }
        writer_replenish();
        pthread_mutex_lock(&W.lock);
        if (flush)
            next_flush = mono_ms() + W.flush_ms;
    }
    pthread_mutex_unlock(&W.lock);
    return NULL;
}

int tally__writer_start(int flush_ms)
{
    pthread_mutex_lock(&W.lock);
    if (W.running) {
        pthread_mutex_unlock(&W.lock);
        return 0;
    }
    W.stop = 0;
    W.kicked = 0;
    W.flush_ms = flush_ms > 0 ? flush_ms : 50;
    W.req_seq = W.done_seq = 0;
    /* the writer's own waits are on CLOCK_MONOTONIC: a wall-clock jump does not stall it */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&W.wake);
    pthread_cond_init(&W.wake, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&W.thread, NULL, writer_main, NULL);
    if (rc == 0)
        W.running = 1;
    pthread_mutex_unlock(&W.lock);
    return rc == 0 ? 0 : TALLY_ENOMEM;
}

void tally__writer_stop(void)
{
    pthread_mutex_lock(&W.lock);
    if (!W.running) {
        pthread_mutex_unlock(&W.lock);
        return;
    }
    W.stop = 1;
    pthread_cond_signal(&W.wake);
    pthread_mutex_unlock(&W.lock);
    pthread_join(W.thread, NULL);
    pthread_mutex_lock(&W.lock);
    W.running = 0;
    pthread_mutex_unlock(&W.lock);
}

void tally__writer_kick(void)
{
    int saved = errno;
    pthread_mutex_lock(&W.lock);
    W.kicked = 1;
    pthread_cond_signal(&W.wake);
    pthread_mutex_unlock(&W.lock);
    errno = saved;
}

/* Run fn on the writer thread and wait for it (one request at a time). Without a writer (no
 * session), run it here. */
static int writer_call(request_fn fn, void *arg)
{
    pthread_mutex_lock(&W.lock);
    if (!W.running || pthread_equal(pthread_self(), W.thread)) {
        pthread_mutex_unlock(&W.lock);
        return fn(arg);
    }
    while (W.req_seq != W.done_seq)
        pthread_cond_wait(&W.done, &W.lock);
    W.req_fn = fn;
    W.req_arg = arg;
    uint64_t seq = ++W.req_seq;
    pthread_cond_signal(&W.wake);
    while (W.done_seq != seq)
        pthread_cond_wait(&W.done, &W.lock);
    int rc = W.req_rc;
    pthread_mutex_unlock(&W.lock);
    return rc;
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

/* A new file under base + suffix, never one that exists; its descriptor is >= 3 (a program that
 * closes and reopens its standard streams never lands on it) and closed on exec. */
static int create_unique(const char *base, const char *suffix, char *path, size_t cap)
{
    for (int n = 0; n < 10000; n++) {
        int w = n ? snprintf(path, cap, "%s%s-%d.tally", base, suffix, n)
                  : snprintf(path, cap, "%s%s.tally", base, suffix);
        if (w < 0 || (size_t)w >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd >= 0 && fd < 3) {
            int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
            int e = errno;
            close(fd);
            fd = hi;
            errno = e;
            if (fd < 0)
                unlink(path);
        }
        return fd;
    }
    errno = EEXIST;
    return -1;
}

struct open_req {
    const char *base, *suffix;
    int window_index;
    int64_t first_step;
    char *path;
    size_t cap;
    int io_errno;
};

static int do_open(void *arg)
{
    struct open_req *o = arg;
    int fd = create_unique(o->base, o->suffix, o->path, o->cap);
    if (fd < 0) {
        o->io_errno = errno;
        return TALLY_EIO;
    }
    struct rlimit rl;
    W.fsize_max = getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                      ? (uint64_t)rl.rlim_cur
                      : UINT64_MAX;
    locset_clear(&W.set);
    memset(W.accts, 0, sizeof W.accts);
    atomic_store(&W.off, 0);
    atomic_store(&W.io_errno, 0);
    atomic_store(&W.file_records, 0);
    atomic_store(&W.file_buffers, 0);
    atomic_store(&W.file_lost, 0);
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
    tally__meta_window w = {o->window_index, 0, o->first_step};
    meta_put(&m, TALLY__META_WINDOW, &w, sizeof w);
    meta_put_i64(&m, TALLY__META_START_NS, tally__ticks_to_ns(tally__ticks()));
    if (rc == 0 && (m.err || put_chunk(TALLY__CHUNK_META, m.p, m.len) != 0))
        rc = -1;
    free(m.p);
    if (rc != 0) {
        o->io_errno = atomic_load(&W.io_errno) ? atomic_load(&W.io_errno) : EIO;
        atomic_store(&W.fd, -1);
        close(fd);
        unlink(o->path);
        return TALLY_EIO;
    }
    return 0;
}

int tally__file_open(const char *base, const char *suffix, int window_index, int64_t first_step,
                     char *path_out, size_t cap, int *io_errno)
{
    struct open_req o = {base, suffix, window_index, first_step, path_out, cap, 0};
    int rc = writer_call(do_open, &o);
    if (io_errno)
        *io_errno = o.io_errno;
    return rc;
}

static void threads_chunk(bb *b)
{
    b->len = 0;
    TALLY__FOR_EACH_THREAD(ts)
    {
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

/* Per thread: what it dropped at the cap and lost to I/O since the window opened. */
static void losses_chunk(bb *b)
{
    b->len = 0;
    TALLY__FOR_EACH_THREAD(ts)
    {
        uint64_t d = atomic_load(&ts->dropped) - ts->dropped0;
        uint64_t l = atomic_load(&ts->lost) - ts->lost0;
        if (!d && !l)
            continue;
        tally__loss_entry e = {ts->slot, 0, ts->tid, d, l};
        bb_put(b, &e, sizeof e);
    }
}

struct close_req {
    const tally__stats_chunk *st;
    tally__close_result *res;
};

static int do_close(void *arg)
{
    struct close_req *c = arg;
    int fd = atomic_load(&W.fd);
    if (fd < 0)
        return TALLY_EIO;
    write_all();
    bb b = {0};
    threads_chunk(&b);
    if (b.len)
        put_chunk(TALLY__CHUNK_THREADS, b.p, b.len);
    devices_chunk(&b);
    if (b.len)
        put_chunk(TALLY__CHUNK_DEVICES, b.p, b.len);
    losses_chunk(&b);
    if (b.len)
        put_chunk(TALLY__CHUNK_LOSSES, b.p, b.len);
    /* lost: what the writer could not write, and what the program recorded after that */
    uint64_t lost = 0;
    TALLY__FOR_EACH_THREAD(ts)
    lost += atomic_load(&ts->lost) - ts->lost0;
    tally__stats_chunk s = *c->st;
    s.records = atomic_load(&W.file_records);
    s.buffers = atomic_load(&W.file_buffers);
    s.lost = lost;
    s.io_errno = atomic_load(&W.io_errno);
    put_chunk(TALLY__CHUNK_STATS, &s, sizeof s);
    b.len = 0;
    tally__clock_refine();
    meta_clock(&b);
    meta_put_i64(&b, TALLY__META_END_NS, tally__ticks_to_ns(tally__ticks()));
    if (!b.err)
        put_chunk(TALLY__CHUNK_META, b.p, b.len);
    free(b.p);
    atomic_store(&W.fd, -1);
    int e = atomic_load(&W.io_errno);
    if (close(fd) != 0 && !e)
        e = errno;
    c->res->records = atomic_load(&W.file_records);
    c->res->lost = lost;
    c->res->io_errno = e;
    atomic_fetch_add(&tally__sess.buffers, s.buffers);
    return e ? TALLY_EIO : 0;
}

int tally__file_close(const tally__stats_chunk *st, tally__close_result *res)
{
    tally__close_result dummy;
    struct close_req c = {st, res ? res : &dummy};
    memset(c.res, 0, sizeof *c.res);
    return writer_call(do_close, &c);
}

static int do_flush(void *arg)
{
    (void)arg;
    if (atomic_load(&W.fd) >= 0)
        write_all();
    return 0;
}

void tally__flush_all(void)
{
    int saved = errno;
    writer_call(do_flush, NULL);
    errno = saved;
}

/* In a forked child: the parent's file and writer thread are not ours; let both go unwritten
 * (the parent writes them). */
void tally__writer_after_fork(void)
{
    int fd = atomic_exchange(&W.fd, -1);
    if (fd >= 0)
        close(fd);
    W.running = 0;
    W.stop = 0;
    W.kicked = 0;
    W.req_seq = W.done_seq = 0;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    W.lock = m;
    W.mlock = m;
    W.wake = c;
    W.done = c;
    atomic_store(&W.io_errno, 0);
}

/* Signal handler: no locks, no malloc. The writer may be writing at the same time; byte ranges
 * are reserved atomically, and the buffer state machine keeps each buffer written once. */
void tally__file_emergency_flush(void)
{
    if (atomic_load(&W.fd) < 0 || atomic_load(&W.io_errno))
        return;
    static locset set;
    memset(&set, 0, sizeof set);
    set.k = sig_keys;
    set.cap = sizeof sig_keys / sizeof *sig_keys;
    set.fixed = 1;
    memset(sig_keys, 0, sizeof sig_keys);
    bb scratch = {sig_scratch, 0, sizeof sig_scratch, 1, 0};
    tally__pool *p = tally__pool_cur;
    for (uint32_t i = 0; p && i < p->nbufs; i++) {
        tally__buf *b = &p->bufs[i];
        int s = TALLY__B_FULL;
        if (atomic_load_explicit(&b->state, memory_order_acquire) != s ||
            !atomic_compare_exchange_strong(&b->state, &s, TALLY__B_WRITING))
            continue;
        tally__tstate *ts = slot_state(b->slot);
        write_events(ts, b->slot, b->tid, b->seq, b->first_begin_seq, b->mem + b->from,
                     b->to - b->from, &set, &scratch, NULL);
        if (ts)
            atomic_fetch_sub(&ts->full_pending, 1);
        atomic_store_explicit(&b->state, TALLY__B_FREE, memory_order_release);
    }
    TALLY__FOR_EACH_THREAD(ts)
    {
        if (!tally__spin_trylock(&ts->slow_lock))
            continue;
        tally__rec *pos = atomic_load_explicit(&ts->pos, memory_order_acquire);
        if (ts->buf && pos && pos > ts->fu) {
            ts->fu_begin_seq +=
                write_events(ts, ts->slot, ts->tid, ts->chunk_seq++, ts->fu_begin_seq, ts->fu,
                             (size_t)(pos - ts->fu), &set, &scratch, NULL);
            ts->fu = pos;
        }
        tally__spin_unlock(&ts->slow_lock);
    }
    tally__stats_chunk s = {0};
    s.records = atomic_load(&W.file_records);
    s.buffers = atomic_load(&W.file_buffers);
    s.lost = atomic_load(&W.file_lost);
    s.calls_outside = tally__outside_total();
    put_chunk(TALLY__CHUNK_STATS, &s, sizeof s);
    struct {
        uint32_t key, len;
        int64_t v;
    } end = {TALLY__META_END_NS, 8, tally__ticks_to_ns(tally__ticks())};
    put_chunk(TALLY__CHUNK_META, &end, sizeof end);
}

/* ---- names and devices from collectors ------------------------------------------------------- */

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
