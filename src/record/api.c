/*
 * api.c — the hot path: ranges, marks, counters, thread names, and the collectors' entry points
 * of recorder.h.
 *
 * A call first loads the recording gate (tally__recording) and leaves through an out-of-line
 * function when it is not 1: outside an active window a call costs that one predictable branch.
 * Inside, it reads the clock, finds the thread's state through one initial-exec TLS pointer,
 * checks that the buffer has room (one compare: a thread with no buffer has pos == end), stores
 * a 16-byte record and publishes the new end of data with a release store (a plain mov on x86)
 * so that a window closer on another thread may write out what is complete. No lock, no
 * allocation, no system call; errno is untouched (only the slow paths may call the C library,
 * and they save and restore it).
 *
 * Push/pop nesting is counted per thread (depth) so that pops on an empty stack are counted, and
 * a pop whose push was dropped at the memory cap is dropped too (dmask), so what reaches the
 * file always nests.
 */
#include "record/internal.h"
#include "record/recorder.h"

#include <errno.h>
#include <string.h>

TALLY_API volatile int tally__recording;
/* The same variable under a hidden name: loaded without going through the GOT. */
extern volatile int tally__gate __attribute__((alias("tally__recording"), visibility("hidden")));

#define GATE() __atomic_load_n(&tally__gate, __ATOMIC_RELAXED)
#define RLX    memory_order_relaxed

/* A handle returned while not recording: ending it is neither recorded nor an error. */
#define HANDLE_OUTSIDE  ((tally_range)1)
#define HANDLE_SEQ_BITS 40
#define HANDLE_SEQ_MASK ((UINT64_C(1) << HANDLE_SEQ_BITS) - 1)

static inline tally__tstate *self_state(void)
{
    tally__tstate *ts = tally__self;
    if (TALLY__UNLIKELY(!ts))
        ts = tally__tstate_create();
    return ts;
}

/* A new window began since this thread last recorded: nesting starts afresh (owner only). */
__attribute__((noinline)) static void new_epoch(tally__tstate *ts, uint32_t ep)
{
    atomic_store_explicit(&ts->depth, 0, RLX);
    ts->dmask = 0;
    ts->pending_pops = 0; /* already counted as dropped */
    ts->straddle = atomic_load_explicit(&tally__sess.straddle_now, RLX);
    atomic_store_explicit(&ts->epoch, ep, RLX);
}

static inline void sync_epoch(tally__tstate *ts)
{
    uint32_t ep = atomic_load_explicit(&tally__sess.epoch, memory_order_acquire);
    if (TALLY__UNLIKELY(atomic_load_explicit(&ts->epoch, RLX) != ep))
        new_epoch(ts, ep);
}

/* Room for n slots: where to write them, or NULL when dropped (counted by refill). */
static inline tally__rec *claim(tally__tstate *ts, uint32_t n)
{
    tally__rec *p = atomic_load_explicit(&ts->pos, RLX);
    /* signed: a thread without a buffer (pos == end == NULL), or one whose buffer was taken away
     * at stop while it was inside a call (end == NULL, pos not), both go to refill */
    if (TALLY__UNLIKELY((intptr_t)((uintptr_t)atomic_load_explicit(&ts->end, RLX) - (uintptr_t)p) <
                        (intptr_t)(n * sizeof(tally__rec))))
        p = tally__refill(ts, n);
    return p;
}

static inline void commit(tally__tstate *ts, tally__rec *next)
{
    atomic_store_explicit(&ts->pos, next, memory_order_release);
}

/* ---- outside the window: out of line --------------------------------------------------------- */

/* The first call outside a session on this thread: its state is made here. */
__attribute__((noinline)) static void count_outside_first(void)
{
    int saved = errno;
    tally__tstate *ts = tally__tstate_create();
    errno = saved;
    if (!ts)
        atomic_fetch_add_explicit(&tally__sess.calls_outside, 1, RLX);
    else
        atomic_store_explicit(&ts->outside, atomic_load_explicit(&ts->outside, RLX) + 1, RLX);
}

/* Counted per thread (a shared counter would bounce between cores); summed when read. */
static inline __attribute__((always_inline)) void count_outside(void)
{
    tally__tstate *ts = tally__self;
    if (TALLY__UNLIKELY(!ts))
        count_outside_first();
    else
        atomic_store_explicit(&ts->outside, atomic_load_explicit(&ts->outside, RLX) + 1, RLX);
}

void tally__outside_call(void)
{
    count_outside();
}

/* The window's file failed: what the program records now is lost, and counted as such. */
static void count_lost(void)
{
    tally__tstate *ts = tally__self;
    if (!ts) {
        int saved = errno;
        ts = tally__tstate_create();
        errno = saved;
        if (!ts)
            return;
    }
    atomic_store_explicit(&ts->lost, atomic_load_explicit(&ts->lost, RLX) + 1, RLX);
}

/* Timer-only mode keeps the start of open ranges to add up dataloader time per step. */
static void timer_push(uint32_t cat)
{
    int saved = errno;
    tally__tstate *ts = self_state();
    errno = saved;
    if (!ts)
        return;
    if (ts->tm_depth < TALLY__TIMER_DEPTH) {
        ts->tm_cat[ts->tm_depth] = (uint8_t)cat;
        ts->tm_t0[ts->tm_depth] = cat == TALLY_DATALOADER ? tally__mono_ns() : 0;
    }
    ts->tm_depth++;
}

static void timer_pop(void)
{
    tally__tstate *ts = tally__self;
    if (!ts || ts->tm_depth == 0)
        return;
    ts->tm_depth--;
    if (ts->tm_depth < TALLY__TIMER_DEPTH && ts->tm_cat[ts->tm_depth] == TALLY_DATALOADER) {
        int saved = errno;
        int64_t d = tally__mono_ns() - ts->tm_t0[ts->tm_depth];
        errno = saved;
        /* count only the outermost dataloader range of the thread */
        int outer = 1;
        for (int i = 0; i < ts->tm_depth && i < TALLY__TIMER_DEPTH; i++)
            outer &= ts->tm_cat[i] != TALLY_DATALOADER;
        if (outer && d > 0)
            atomic_fetch_add_explicit(&tally__sess.tm_reader_ns, d, RLX);
    }
}

/* Not recording: count calls outside a session, time dataloader ranges in timer-only mode.
 * In a forked child whose session has not resumed yet, resume it: these return non-zero when
 * the call should now be recorded (the caller calls itself again). */
static inline __attribute__((always_inline)) int off_push(int gate, uint32_t cat)
{
    if (gate == TALLY__GATE_OFF)
        count_outside();
    else if (gate == TALLY__GATE_TIMER)
        timer_push(cat);
    else if (gate == TALLY__GATE_FAILED)
        count_lost();
    else if (gate == TALLY__GATE_FORKED)
        return tally__fork_resume() == TALLY__GATE_ON;
    return 0;
}

static inline __attribute__((always_inline)) int off_pop(int gate)
{
    if (gate == TALLY__GATE_OFF)
        count_outside();
    else if (gate == TALLY__GATE_TIMER)
        timer_pop();
    else if (gate == TALLY__GATE_FAILED)
        count_lost();
    else if (gate == TALLY__GATE_FORKED)
        return tally__fork_resume() == TALLY__GATE_ON;
    return 0;
}

__attribute__((noinline)) static int off_other(int gate)
{
    if (gate == TALLY__GATE_OFF)
        count_outside();
    else if (gate == TALLY__GATE_FAILED)
        count_lost();
    else if (gate == TALLY__GATE_FORKED)
        return tally__fork_resume() == TALLY__GATE_ON;
    return 0;
}

/* ---- ranges ---------------------------------------------------------------------------------- */

/* Bookkeeping after a push whose record was dropped: its pop must not be written either. */
static inline void push_done(tally__tstate *ts, int stored)
{
    sync_epoch(ts);
    uint32_t d = atomic_load_explicit(&ts->depth, RLX);
    if (TALLY__UNLIKELY(!stored) && d < 64)
        ts->dmask |= UINT64_C(1) << d;
    atomic_store_explicit(&ts->depth, d + 1, RLX);
}

/* The recording paths are separate functions reached by a tail jump, so that the gate test
 * runs before any register is saved: outside a window a call is a load, a compare and a jump. */
__attribute__((noinline)) static void push_on(const tally_srcloc *loc)
{
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    tally__rec *p = claim(ts, 1);
    if (TALLY__LIKELY(p != NULL)) {
        p->w0 = TALLY__REC(TALLY__R_PUSH, t);
        p->w1 = (uint64_t)(uintptr_t)loc;
        commit(ts, p + 1);
    }
    push_done(ts, p != NULL);
}

/* Off the window with a call site: its category is read only when timer-only mode needs it;
 * after a forked child's session resumed, the push is recorded. */
__attribute__((noinline)) static void off_push_loc(int gate, const tally_srcloc *loc)
{
    if (TALLY__LIKELY(gate == TALLY__GATE_OFF))
        count_outside(); /* no frame on this path: calls before start stay ~2 ns */
    else if (off_push(gate, gate == TALLY__GATE_TIMER && loc ? loc->category : 0))
        push_on(loc);
}

TALLY_API void tally_push(const tally_srcloc *loc)
{
    int g = GATE();
    if (TALLY__LIKELY(g == TALLY__GATE_ON))
        push_on(loc);
    else if (g != TALLY__GATE_CLOSED)
        off_push_loc(g, loc);
}

__attribute__((noinline)) static void pop_on(void)
{
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    sync_epoch(ts);
    uint32_t d = atomic_load_explicit(&ts->depth, RLX);
    if (TALLY__UNLIKELY(d == 0)) {
        /* nothing open: a straddler from before the window, or an unbalanced pop */
        if (!ts->straddle)
            atomic_fetch_add_explicit(&tally__sess.bad_pops, 1, RLX);
        return;
    }
    d--;
    atomic_store_explicit(&ts->depth, d, RLX);
    if (TALLY__UNLIKELY(ts->dmask) && d < 64 && ((ts->dmask >> d) & 1)) {
        ts->dmask &= ~(UINT64_C(1) << d);
        atomic_store_explicit(&ts->dropped, atomic_load_explicit(&ts->dropped, RLX) + 1, RLX);
        return;
    }
    tally__rec *p = claim(ts, 1);
    if (TALLY__LIKELY(p != NULL)) {
        p->w0 = TALLY__REC(TALLY__R_POP, t);
        p->w1 = 0;
        commit(ts, p + 1);
    } else {
        /* counted as dropped now; written late (w1 = 1, not counted as a record) first thing in
         * the next buffer, so that what reaches the file still nests */
        ts->pending_pops++;
    }
}

static inline uint32_t str_slots(size_t len)
{
    return (uint32_t)((len + 15) / 16);
}

/* STR record + bytes at p; returns the slot after it. */
static tally__rec *put_str(tally__rec *p, unsigned role, unsigned cat, const char *s, size_t len)
{
    p->w0 = TALLY__REC(TALLY__R_STR, ((uint64_t)role << 48) | ((uint64_t)(cat & 0xff) << 40));
    p->w1 = len;
    size_t slots = str_slots(len);
    if (slots) {
        memset(p + slots, 0, sizeof *p); /* zero the tail of the last slot */
        memcpy(p + 1, s, len);
    }
    return p + 1 + slots;
}

static size_t cut_len(const char *s, size_t len)
{
    (void)s;
    return len > TALLY__STR_MAX ? TALLY__STR_MAX : len;
}

/* Room for a STR record of s (cut to TALLY__STR_MAX) and then `extra` slots, the STR written:
 * returns where the extra slots start, or NULL when the buffer is full (counted by claim). */
static tally__rec *claim_str(tally__tstate *ts, uint32_t extra, unsigned role, unsigned cat,
                             const char *s, size_t len)
{
    len = cut_len(s, len);
    tally__rec *p = claim(ts, 1 + extra + str_slots(len));
    return p ? put_str(p, role, cat, s, len) : NULL;
}

/* A key for an argument string: 64 bits of a multiply-xorshift hash, never 0. */
static inline uint64_t arg_key(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)n * UINT64_C(0xff51afd7ed558ccd));
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 29;
    return h | 1;
}

/* The thread's cache entry for argument key (emptied when a new window, a new file, began). */
static inline uint64_t *arg_slot(tally__tstate *ts, uint64_t key)
{
    uint32_t ep = atomic_load_explicit(&tally__sess.epoch, RLX);
    if (TALLY__UNLIKELY(ts->arg_epoch != ep)) {
        memset(ts->arg_seen, 0, sizeof ts->arg_seen);
        ts->arg_epoch = ep;
    }
    return &ts->arg_seen[key % TALLY__ARG_CACHE];
}

/* A push with optional copied name (name != NULL: id 0 + STR NAME) and an argument: one this
 * thread already wrote into the window's file under key is written as an ARGREF to it (arg may
 * then be NULL); a new one as VALUE(key) + STR ARG, which defines the key for the whole file.
 * key 0: the argument's own hash. */
static void push_keyed(const tally_srcloc *loc, const char *name, size_t nlen, uint32_t cat,
                       uint64_t key, const char *arg, size_t alen)
{
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    nlen = name ? cut_len(name, nlen) : 0;
    alen = arg ? cut_len(arg, alen) : 0;
    uint64_t *seen = NULL;
    int known = 0;
    if (arg || key) {
        if (!key)
            key = arg_key(arg, alen);
        seen = arg_slot(ts, key);
        known = *seen == key;
        if (!known && !arg) { /* a reference to what this file does not hold: no argument */
            seen = NULL;
            key = 0;
        }
    }
    int has_arg = seen != NULL;
    uint32_t n =
        1 + (name ? 1 + str_slots(nlen) : 0) + (has_arg ? (known ? 1 : 2 + str_slots(alen)) : 0);
    tally__rec *p = claim(ts, n);
    if (p) {
        if (name)
            p = put_str(p, TALLY__STR_NAME, cat, name, nlen);
        if (has_arg && known) {
            p->w0 = TALLY__REC(TALLY__R_ARGREF, 0);
            p->w1 = key;
            p++;
        } else if (has_arg) {
            p->w0 = TALLY__REC(TALLY__R_VALUE, 0);
            p->w1 = key;
            p = put_str(p + 1, TALLY__STR_ARG, 0, arg, alen);
            *seen = key;
        }
        p->w0 = TALLY__REC(TALLY__R_PUSH, t);
        p->w1 = name ? 0 : (uint64_t)(uintptr_t)loc;
        commit(ts, p + 1);
    }
    push_done(ts, p != NULL);
}

TALLY_API void tally_push_arg(const tally_srcloc *loc, const char *arg)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) &&
        !off_push(g, g == TALLY__GATE_TIMER && loc ? loc->category : 0))
        return;
    int saved = errno;
    push_keyed(loc, NULL, 0, 0, 0, arg, arg ? strlen(arg) : 0);
    errno = saved;
}

TALLY_API void tally_push_dynamic(const char *name, uint32_t category, const char *arg)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_push(g, category))
        return;
    int saved = errno;
    if (!name)
        name = "";
    push_keyed(NULL, name, strlen(name), category, 0, arg, arg ? strlen(arg) : 0);
    errno = saved;
}

int tally__push_argref(const tally_srcloc *loc, uint64_t key)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) &&
        !off_push(g, g == TALLY__GATE_TIMER && loc ? loc->category : 0))
        return 1;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return 1;
    key |= 1;
    if (*arg_slot(ts, key) != key)
        return 0; /* not in this file yet: the caller sends the string */
    tally__rec *p = claim(ts, 2);
    if (p) {
        p[0].w0 = TALLY__REC(TALLY__R_ARGREF, 0);
        p[0].w1 = key;
        p[1].w0 = TALLY__REC(TALLY__R_PUSH, t);
        p[1].w1 = (uint64_t)(uintptr_t)loc;
        commit(ts, p + 2);
    }
    push_done(ts, p != NULL);
    return 1;
}

void tally__push_argkey(const tally_srcloc *loc, uint64_t key, const char *arg, size_t len)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) &&
        !off_push(g, g == TALLY__GATE_TIMER && loc ? loc->category : 0))
        return;
    int saved = errno;
    push_keyed(loc, NULL, 0, 0, key | 1, arg, len);
    errno = saved;
}

void tally__push_copy(const char *name, size_t len, uint32_t cat, const char *arg, size_t arg_len)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_push(g, cat))
        return;
    int saved = errno;
    push_keyed(NULL, name ? name : "", name ? len : 0, cat, 0, arg, arg_len);
    errno = saved;
}

__attribute__((noinline)) static void off_pop_then(int gate)
{
    if (TALLY__LIKELY(gate == TALLY__GATE_OFF))
        count_outside();
    else if (off_pop(gate))
        pop_on();
}

TALLY_API void tally_pop(void)
{
    int g = GATE();
    if (TALLY__LIKELY(g == TALLY__GATE_ON))
        pop_on();
    else if (g != TALLY__GATE_CLOSED)
        off_pop_then(g);
}

void tally__pop(void)
{
    tally_pop();
}

static tally_range begin_full(const tally_srcloc *loc, const char *name, size_t nlen, uint32_t cat)
{
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return HANDLE_OUTSIDE;
    nlen = name ? cut_len(name, nlen) : 0;
    uint32_t n = 1 + (name ? 1 + str_slots(nlen) : 0);
    tally__rec *p = claim(ts, n);
    uint64_t seq = atomic_load_explicit(&ts->begin_seq, RLX);
    if (p) {
        if (name)
            p = put_str(p, TALLY__STR_NAME, cat, name, nlen);
        p->w0 = TALLY__REC(TALLY__R_BEGIN, t);
        p->w1 = name ? 0 : (uint64_t)(uintptr_t)loc;
        commit(ts, p + 1);
    }
    atomic_store_explicit(&ts->ring[seq % TALLY__RING], seq + 1, RLX);
    atomic_store_explicit(&ts->begin_seq, seq + 1, memory_order_release);
    return ((uint64_t)ts->slot << HANDLE_SEQ_BITS) | (seq & HANDLE_SEQ_MASK);
}

TALLY_API tally_range tally_begin(const tally_srcloc *loc)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return HANDLE_OUTSIDE;
    return begin_full(loc, NULL, 0, 0);
}

tally_range tally__begin_copy(const char *name, size_t len, uint32_t cat)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return HANDLE_OUTSIDE;
    int saved = errno;
    tally_range r = begin_full(NULL, name ? name : "", name ? len : 0, cat);
    errno = saved;
    return r;
}

__attribute__((noinline)) static void bad_end(void)
{
    atomic_fetch_add_explicit(&tally__sess.bad_ends, 1, RLX);
}

TALLY_API void tally_end(tally_range r)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    uint64_t t = tally__ticks();
    if (TALLY__UNLIKELY(r == HANDLE_OUTSIDE))
        return;
    /* validate: a live slot, a sequence number it issued, and still open */
    uint64_t slot = r >> HANDLE_SEQ_BITS, seq = r & HANDLE_SEQ_MASK;
    if (TALLY__UNLIKELY(slot == 0 || slot > TALLY__MAX_THREADS)) {
        bad_end();
        return;
    }
    tally__tstate *owner = atomic_load_explicit(&tally__threads[slot - 1], memory_order_acquire);
    if (TALLY__UNLIKELY(!owner ||
                        seq >= atomic_load_explicit(&owner->begin_seq, memory_order_acquire))) {
        bad_end();
        return;
    }
    _Atomic uint64_t *cell = &owner->ring[seq % TALLY__RING];
    uint64_t open = atomic_load_explicit(cell, RLX);
    if (TALLY__UNLIKELY(open != seq + 1)) {
        if (open == 0 || open < seq + 1) { /* ended already (stale) */
            bad_end();
            return;
        }
        /* the cell was reused by a newer begin (> TALLY__RING open at once): accept */
    } else {
        atomic_store_explicit(cell, 0, RLX);
    }
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    tally__rec *p = claim(ts, 1);
    if (TALLY__LIKELY(p != NULL)) {
        p->w0 = TALLY__REC(TALLY__R_END, t);
        p->w1 = r;
        commit(ts, p + 1);
    }
}

/* ---- marks, counters, names ------------------------------------------------------------------ */

TALLY_API void tally_mark(const tally_srcloc *loc)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    tally__rec *p = claim(ts, 1);
    if (p) {
        p->w0 = TALLY__REC(TALLY__R_MARK, t);
        p->w1 = (uint64_t)(uintptr_t)loc;
        commit(ts, p + 1);
    }
}

void tally__mark_copy(const char *name, size_t len)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    int saved = errno;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (ts) {
        if (!name)
            name = "", len = 0;
        tally__rec *p = claim_str(ts, 1, TALLY__STR_NAME, TALLY__CAT_INSTANT, name, len);
        if (p) {
            p->w0 = TALLY__REC(TALLY__R_MARK, t);
            p->w1 = 0;
            commit(ts, p + 1);
        }
    }
    errno = saved;
}

TALLY_API void tally_counter(const tally_srcloc *loc, double value)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    tally__rec *p = claim(ts, 2);
    if (p) {
        uint64_t bits;
        memcpy(&bits, &value, sizeof bits);
        p[0].w0 = TALLY__REC(TALLY__R_VALUE, 0);
        p[0].w1 = bits;
        p[1].w0 = TALLY__REC(TALLY__R_COUNTER, t);
        p[1].w1 = (uint64_t)(uintptr_t)loc;
        commit(ts, p + 2);
    }
}

TALLY_API void tally_thread_name(const char *name)
{
    if (!name)
        return;
    int saved = errno;
    tally__tstate *ts = self_state();
    if (ts) {
        size_t len = strlen(name);
        if (len >= sizeof ts->name)
            len = sizeof ts->name - 1;
        tally__spin_lock(&ts->slow_lock);
        memcpy(ts->name, name, len);
        ts->name[len] = 0;
        tally__spin_unlock(&ts->slow_lock);
        if (GATE() == TALLY__GATE_ON) {
            tally__rec *p = claim_str(ts, 0, TALLY__STR_THREAD, 0, name, len);
            if (p)
                commit(ts, p);
        }
    }
    errno = saved;
}

/* ---- device and API events (collectors) ------------------------------------------------------ */

void tally__record_device(const tally__device_event *e)
{
    if (TALLY__UNLIKELY(GATE() != TALLY__GATE_ON) || !e)
        return;
    int saved = errno;
    tally__tstate *ts = self_state();
    if (ts) {
        const char *name = e->name ? e->name : "";
        size_t nl = cut_len(name, strlen(name));
        size_t al = e->args ? cut_len(e->args, strlen(e->args)) : 0;
        size_t bytes = sizeof(tally__fmt_device) + nl + al;
        uint32_t slots = (uint32_t)((bytes + 15) / 16);
        tally__rec *p = claim(ts, 1 + slots);
        if (p) {
            tally__fmt_device d;
            memset(&d, 0, sizeof d);
            d.start = e->start;
            d.end = e->end;
            d.corr = e->corr;
            d.bytes = e->bytes;
            d.stream = e->stream;
            d.device = e->device;
            d.cat = e->cat;
            d.flags = e->flags;
            d.copy_kind = e->copy_kind;
            d.name_len = (uint32_t)nl;
            d.args_len = (uint32_t)al;
            p->w0 = TALLY__REC(TALLY__R_DEVICE, slots);
            p->w1 = 0;
            char *q = (char *)(p + 1);
            memset(q + (size_t)(slots - 1) * 16, 0, 16);
            memcpy(q, &d, sizeof d);
            memcpy(q + sizeof d, name, nl);
            if (al)
                memcpy(q + sizeof d + nl, e->args, al);
            commit(ts, p + 1 + slots);
        }
    }
    errno = saved;
}

void tally__record_api(const tally__api_event *e)
{
    if (TALLY__UNLIKELY(GATE() != TALLY__GATE_ON) || !e)
        return;
    int saved = errno;
    tally__tstate *ts = self_state();
    if (ts) {
        const char *name = e->name ? e->name : "";
        size_t nl = cut_len(name, strlen(name));
        size_t bytes = sizeof(tally__fmt_api) + nl;
        uint32_t slots = (uint32_t)((bytes + 15) / 16);
        tally__rec *p = claim(ts, 1 + slots);
        if (p) {
            tally__fmt_api a;
            memset(&a, 0, sizeof a);
            a.start = e->start;
            a.end = e->end;
            a.corr = e->corr;
            a.tid = e->tid;
            a.cat = e->cat;
            a.name_len = (uint32_t)nl;
            p->w0 = TALLY__REC(TALLY__R_API, slots);
            p->w1 = 0;
            char *q = (char *)(p + 1);
            memset(q + (size_t)(slots - 1) * 16, 0, 16);
            memcpy(q, &a, sizeof a);
            memcpy(q + sizeof a, name, nl);
            commit(ts, p + 1 + slots);
        }
    }
    errno = saved;
}

/* Slots of a memory record: two without the allocator's totals (MEMORY_SHORT), else three. */
static inline uint32_t memory_slots(int64_t total_allocated, int64_t total_reserved)
{
    return total_allocated < 0 && total_reserved < 0 ? 2 : 3;
}

/* One memory record (memory_slots of them) at p; returns the slot after it. */
static tally__rec *put_memory(tally__rec *p, uint64_t t, uint64_t ptr, int64_t bytes,
                              int32_t device, uint32_t category, int64_t total_allocated,
                              int64_t total_reserved)
{
    tally__fmt_memory m = {ptr, device, category, total_allocated, total_reserved};
    uint32_t slots = memory_slots(total_allocated, total_reserved);
    p->w0 = TALLY__REC(slots == 2 ? TALLY__R_MEMORY_SHORT : TALLY__R_MEMORY, t);
    p->w1 = (uint64_t)bytes;
    memcpy(p + 1, &m, (slots - 1) * sizeof *p);
    return p + slots;
}

void tally__record_memory(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category,
                          int64_t total_allocated, int64_t total_reserved)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (TALLY__UNLIKELY(!ts))
        return;
    tally__rec *p = claim(ts, memory_slots(total_allocated, total_reserved));
    if (p)
        commit(ts, put_memory(p, t, ptr, bytes, device, category, total_allocated, total_reserved));
}

void tally__record_memory_named(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category,
                                const char *name, size_t name_len)
{
    int g = GATE();
    if (TALLY__UNLIKELY(g != TALLY__GATE_ON) && !off_other(g))
        return;
    int saved = errno;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (ts) {
        tally__rec *p = claim_str(ts, memory_slots(-1, -1), TALLY__STR_NAME,
                                  category & TALLY__MEM_CAT_MASK, name, name_len);
        if (p)
            commit(ts, put_memory(p, t, ptr, bytes, device, category, -1, -1));
    }
    errno = saved;
}

int64_t tally__now_ns(void)
{
    int saved = errno;
    tally__clock_init();
    int64_t ns = tally__ticks_to_ns(tally__ticks());
    errno = saved;
    return ns;
}

int tally__is_recording(void)
{
    return GATE() == TALLY__GATE_ON;
}

void tally__rec_step(unsigned type, int64_t step, uint64_t samples, int with_value)
{
    if (GATE() != TALLY__GATE_ON)
        return;
    uint64_t t = tally__ticks();
    tally__tstate *ts = self_state();
    if (!ts)
        return;
    tally__rec *p = claim(ts, with_value ? 2 : 1);
    if (!p)
        return;
    if (with_value) {
        p->w0 = TALLY__REC(TALLY__R_VALUE, 0);
        p->w1 = samples;
        p++;
    }
    p->w0 = TALLY__REC(type, t);
    p->w1 = (uint64_t)step;
    commit(ts, p + 1);
}
