/*
 * thread_buffers.c — per-thread state and the pool of record buffers.
 *
 * A thread's state is made at its first recorded call and found through one initial-exec TLS
 * pointer. When the thread exits, its state goes on a free list with its slot (the thread part
 * of begin/end handles) and is reused by the next new thread, so the table never fills with
 * dead threads.
 *
 * The pool is a fixed array of buffer descriptors (memory cap / buffer size of them), each with
 * an atomic state: EMPTY (no memory yet) -> OWNED by a thread -> FULL (handed to the writer) ->
 * WRITING -> FREE -> OWNED ... A thread whose buffer is full hands it over with a release store
 * of FULL and takes a FREE one with a compare-and-swap: no lock. When no buffer is FREE and the
 * cap allows no new one, the thread's records are dropped and counted until one comes back. The
 * writer keeps a few FREE buffers touched in advance (a first-touch page fault costs 5-15 us on
 * the project's VMs), so a thread rarely faults a page in itself.
 */
#include "record/internal.h"
#include "record/recorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RLX memory_order_relaxed

TALLY__TLS tally__tstate *tally__self;
_Atomic(tally__tstate *) tally__threads[TALLY__MAX_THREADS];
_Atomic uint32_t tally__nthreads;
tally__pool *tally__pool_cur;
static _Atomic uint32_t hint;
static TALLY__TLS int tstate_failed;
static pthread_key_t tstate_key;
static pthread_once_t tstate_key_once = PTHREAD_ONCE_INIT;

uint32_t tally__thread_count(void)
{
    uint32_t n = atomic_load(&tally__nthreads);
    return n > TALLY__MAX_THREADS ? TALLY__MAX_THREADS : n;
}

/* ---- thread states --------------------------------------------------------------------------- */

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
    tally__release_thread_buffer(ts, 1);
    ts->name[0] = 0;
    tally__spin_unlock(&ts->slow_lock);
    tally__writer_kick();
    tally__self = NULL;
    pthread_mutex_lock(&free_lock);
    ts->next_free = free_states;
    free_states = ts;
    pthread_mutex_unlock(&free_lock);
}

static void reset_nesting(tally__tstate *ts)
{
    atomic_store_explicit(&ts->depth, 0, RLX);
    ts->dmask = 0;
    ts->pending_pops = 0; /* counted as dropped already */
    ts->in_slow = 0;
    ts->drop_backoff = 0;
    ts->tm_depth = 0;
    ts->straddle = atomic_load(&tally__sess.straddle_now);
    atomic_store(&ts->epoch, atomic_load(&tally__sess.epoch));
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
    reset_nesting(ts);
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

static int buf_alloc_mem(tally__buf *b, size_t size)
{
    if (b->mem)
        return 0;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    volatile char *c = m; /* touch every page now, not on a recording thread later */
    for (size_t i = 0; i < size; i += 4096)
        c[i] = 0;
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
    tally__pool *cur = tally__pool_cur;
    if (cur && cur->bufsize == buffer_size && cur->nbufs == n)
        return 0; /* reuse: buffers are FREE (or EMPTY) after the previous stop */
    tally__pool *p = calloc(1, sizeof *p);
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
    tally__pool_cur = p;
    for (uint32_t i = 0; i < n && i < 4; i++) /* a few buffers ready before the first event */
        tally__pool_grow();
    return 0;
}

/* A new buffer within the cap, in state `to` (FREE for anyone, OWNED for the caller); NULL when
 * the cap is reached or memory is short. */
static tally__buf *grow(int to)
{
    tally__pool *p = tally__pool_cur;
    if (!p)
        return NULL;
    for (uint32_t i = 0; i < p->nbufs; i++) {
        tally__buf *b = &p->bufs[i];
        int s = TALLY__B_EMPTY;
        if (atomic_load_explicit(&b->state, RLX) != s ||
            !atomic_compare_exchange_strong(&b->state, &s, TALLY__B_ALLOC))
            continue;
        if (buf_alloc_mem(b, p->bufsize) != 0) {
            atomic_store(&b->state, TALLY__B_EMPTY);
            return NULL;
        }
        atomic_store(&b->state, to);
        return b;
    }
    return NULL;
}

int tally__pool_grow(void)
{
    return grow(TALLY__B_FREE) ? 0 : -1;
}

void tally__pool_release(void)
{
    /* Buffers stay mapped for the next session (see pool_init); threads let theirs go. */
    TALLY__FOR_EACH_THREAD(ts)
    {
        tally__spin_lock(&ts->slow_lock);
        tally__release_thread_buffer(ts, 0);
        tally__spin_unlock(&ts->slow_lock);
    }
    tally__pool *p = tally__pool_cur;
    if (p)
        for (uint32_t i = 0; i < p->nbufs; i++) {
            int s = atomic_load(&p->bufs[i].state);
            if (s == TALLY__B_FULL || s == TALLY__B_OWNED)
                atomic_store(&p->bufs[i].state, TALLY__B_FREE);
        }
}

/* A FREE buffer (or, when none is, a new one within the cap); NULL when there is none. */
static tally__buf *acquire(void)
{
    tally__pool *p = tally__pool_cur;
    if (!p)
        return NULL;
    uint32_t n = p->nbufs, h = atomic_load_explicit(&hint, RLX) % n;
    for (uint32_t k = 0; k < n; k++) {
        tally__buf *b = &p->bufs[(h + k) % n];
        int s = TALLY__B_FREE;
        if (atomic_load_explicit(&b->state, RLX) == s &&
            atomic_compare_exchange_strong(&b->state, &s, TALLY__B_OWNED)) {
            atomic_store_explicit(&hint, (h + k + 1) % n, RLX);
            return b;
        }
    }
    /* none ready (the writer is behind): make one here, ours from the start. Made FREE and
     * looked for again, it could be taken by another thread first, and this one then dropped
     * records and backed off with buffers to spare under the cap (seen under TSan, 8 threads) */
    return grow(TALLY__B_OWNED);
}

void tally__release_thread_buffer(tally__tstate *ts, int hand_off)
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
        atomic_fetch_add(&ts->full_pending, 1);
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
        tally__release_thread_buffer(ts, 1);
    }
    if (ts->drop_backoff) {
        ts->drop_backoff--;
    } else {
        tally__buf *b = acquire();
        tally__pool *p = tally__pool_cur;
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

/* ---- fork ------------------------------------------------------------------------------------ */

void tally__threads_after_fork(void)
{
    /* Only the forking thread exists in the child. Every buffer holds the parent's records
     * (which the parent writes): all of them become FREE here, unwritten. The other threads'
     * states go to the free list, for the child's new threads. */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    free_lock = m;
    free_states = NULL;
    tally__tstate *me = tally__self;
    TALLY__FOR_EACH_THREAD(ts)
    {
        atomic_store(&ts->slow_lock, 0);
        atomic_store(&ts->pos, NULL);
        atomic_store(&ts->end, NULL);
        ts->buf = NULL;
        ts->start = ts->fu = NULL;
        atomic_store(&ts->full_pending, 0);
        atomic_store(&ts->dropped, 0);
        atomic_store(&ts->lost, 0);
        atomic_store(&ts->outside, 0);
        ts->dropped0 = ts->lost0 = 0;
        reset_nesting(ts);
        ts->straddle = 1; /* ranges the parent had open may be popped in the child */
        if (ts != me) {
            ts->name[0] = 0;
            ts->next_free = free_states;
            free_states = ts;
        }
    }
    if (me)
        me->tid = (int64_t)syscall(SYS_gettid);
    tally__pool *p = tally__pool_cur;
    if (p)
        for (uint32_t i = 0; i < p->nbufs; i++) {
            int s = atomic_load(&p->bufs[i].state);
            if (s != TALLY__B_EMPTY)
                atomic_store(&p->bufs[i].state, p->bufs[i].mem ? TALLY__B_FREE : TALLY__B_EMPTY);
        }
}
