/*
 * internal.h — state shared by the recorder's files (api.c: the hot path; thread_buffers.c: thread
 * states and the buffer pool; writer.c: the writer thread and the .tally file; session.c:
 * start/stop, schedule, windows, fork; clock.c; config.c; perf_summary.c; trace_ready.c).
 *
 * Who touches what:
 *   - a thread's tstate: its hot fields (pos, end, depth, begin_seq) are written by the owning
 *     thread only; pos is published with a release store so that a flusher on another thread may
 *     write out [fu, pos) while the owner keeps recording. Everything the flusher and the owner
 *     both change (buffer hand-off, fu) is done under the tstate's slow_lock, a spin flag taken
 *     only on slow paths.
 *   - buffer descriptors: a lock-free state machine (EMPTY -> OWNED -> FULL -> WRITING -> FREE
 *     -> OWNED ...), so that the writer thread, a window closer and a signal handler never write
 *     the same buffer twice.
 */
#ifndef TALLY_RECORD_INTERNAL_H
#define TALLY_RECORD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tally.h>

#include "record/format.h"

#define TALLY__LIKELY(x)   __builtin_expect(!!(x), 1)
#define TALLY__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TALLY__TLS         __thread __attribute__((tls_model("initial-exec")))
#define TALLY__HIDDEN      __attribute__((visibility("hidden")))

#define TALLY__MAX_THREADS 4096
#define TALLY__RING        1024 /* open begin/end handles remembered per thread */
#define TALLY__TIMER_DEPTH 64
#define TALLY__ARG_CACHE                                                                           \
    4096 /* argument strings remembered per thread (by key): a step of                             \
            a transformer has hundreds of distinct input shapes */

/* ---- clock (clock.c) ------------------------------------------------------------------------- */

typedef struct tally__clock {
    int use_tsc;   /* ticks are TSC cycles (invariant TSC found) */
    uint64_t tsc0; /* calibration point */
    int64_t ns0;
    double tsc_hz; /* ticks per second */
    double ns_per_tick;
} tally__clock_t;

extern TALLY__HIDDEN tally__clock_t tally__clk;

void tally__clock_init(void); /* once per process (idempotent) */
void tally__clock_refine(void);
int64_t tally__mono_ns(void);
int64_t tally__real_ns(void);
int64_t tally__ticks_to_ns(uint64_t ticks);

static inline uint64_t tally__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (TALLY__LIKELY(tally__clk.use_tsc)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return (uint64_t)tally__mono_ns();
}

/* ---- thread states and buffers (thread_buffers.c) ---------------------------------------------
 */

enum {
    TALLY__B_EMPTY = 0,
    TALLY__B_ALLOC,
    TALLY__B_FREE,
    TALLY__B_OWNED,
    TALLY__B_FULL,
    TALLY__B_WRITING
};

typedef struct tally__buf {
    _Atomic int state;
    tally__rec *mem;
    /* Filled by the owner before the release store of FULL: */
    uint32_t slot;
    int64_t tid;
    uint64_t seq, first_begin_seq;
    uint32_t from, to; /* record slots [from, to) to write */
} tally__buf;

typedef struct tally__tstate {
    /* hot: owner only (pos is read by flushers) */
    _Atomic(tally__rec *) pos;
    _Atomic(tally__rec *) end;
    uint64_t dmask;             /* bit d: the push at depth d was dropped (skip its pop) */
    uint32_t pending_pops;      /* pops dropped at the cap: written first in the next buffer */
    _Atomic uint32_t depth;     /* open push ranges (this window) */
    _Atomic uint32_t epoch;     /* window epoch that depth, dmask, pending_pops belong to */
    int straddle;               /* window opened while ranges may have been open: pops on an
                                   empty stack are straddlers, not errors */
    _Atomic uint64_t begin_seq; /* handles issued */
    int in_slow;                /* recursion guard for slow paths (signal re-entry) */
    uint32_t drop_backoff;
    _Atomic uint64_t dropped; /* records dropped at the memory cap (whole session) */
    _Atomic uint64_t outside; /* calls while no session ran */

    /* slow: under slow_lock */
    _Atomic int slow_lock;
    tally__buf *buf;
    tally__rec *start;
    tally__rec *fu;        /* first record not yet written out */
    uint64_t fu_begin_seq; /* handle sequence number of the first BEGIN at or after fu */
    uint64_t chunk_seq;
    char name[64];

    /* the writer's */
    _Atomic uint32_t full_pending; /* buffers handed to the writer and not yet written: while
                                      any is, the writer does not write this thread's current
                                      buffer (the file keeps each thread's records in order) */
    _Atomic uint64_t lost;         /* records not written: the file failed (whole session) */
    uint64_t dropped0, lost0;      /* dropped and lost when the open window began */

    uint32_t slot; /* 1.. */
    int64_t tid;
    struct tally__tstate *next_free; /* on the list of states of exited threads */

    /* timer-only mode: open ranges' categories and start times */
    int tm_depth;
    uint8_t tm_cat[TALLY__TIMER_DEPTH];
    int64_t tm_t0[TALLY__TIMER_DEPTH];

    /* argument strings this thread already wrote into the open window's file, by hash: a
     * repeated one (the same input shapes at every step) costs a 16-byte reference */
    uint32_t arg_epoch; /* the window epoch the cache belongs to */
    uint64_t arg_seen[TALLY__ARG_CACHE];

    /* handles of open begin/end ranges: ring[seq % RING] = seq + 1 while open */
    _Atomic uint64_t ring[TALLY__RING];
} tally__tstate;

extern TALLY__HIDDEN TALLY__TLS tally__tstate *tally__self;
extern TALLY__HIDDEN _Atomic(tally__tstate *) tally__threads[TALLY__MAX_THREADS];
extern TALLY__HIDDEN _Atomic uint32_t tally__nthreads;

/* The thread states in use (the table may hold states of exited threads, reused later). */
#define TALLY__FOR_EACH_THREAD(ts)                                                                 \
    for (uint32_t ts##_i = 0, ts##_n = tally__thread_count(); ts##_i < ts##_n; ts##_i++)           \
        for (tally__tstate *ts = atomic_load(&tally__threads[ts##_i]); ts; ts = NULL)
uint32_t tally__thread_count(void);

tally__tstate *tally__tstate_create(void);
/* Make room for n slots in the thread's buffer; returns where to write, or NULL (dropped). */
tally__rec *tally__refill(tally__tstate *ts, uint32_t n);

static inline void tally__spin_lock(_Atomic int *l)
{
    while (atomic_exchange_explicit(l, 1, memory_order_acquire))
        while (atomic_load_explicit(l, memory_order_relaxed))
            __builtin_ia32_pause();
}
static inline int tally__spin_trylock(_Atomic int *l)
{
    return !atomic_exchange_explicit(l, 1, memory_order_acquire);
}
static inline void tally__spin_unlock(_Atomic int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

/* The pool of buffers, shared by the threads (which take FREE buffers and hand FULL ones over)
 * and the writer (which writes FULL buffers and keeps FREE ones touched in advance). */
typedef struct tally__pool {
    tally__buf *bufs;
    uint32_t nbufs;
    size_t bufsize; /* bytes */
    uint32_t nrec;  /* records per buffer */
    struct tally__pool *old;
} tally__pool;
extern TALLY__HIDDEN tally__pool *tally__pool_cur;

int tally__pool_init(size_t cap, size_t buffer_size);
/* Let every thread's buffer go without writing it (after the last window closed). */
void tally__pool_release(void);
/* Allocate and touch one EMPTY buffer as FREE; 0, or -1 when none is EMPTY or memory is out. */
int tally__pool_grow(void);
/* Under ts->slow_lock: hand [fu, pos) to the writer (hand_off) or just let the buffer go. */
void tally__release_thread_buffer(tally__tstate *ts, int hand_off);
/* In a forked child: the parent's buffers and threads are not ours (thread_buffers.c). */
void tally__threads_after_fork(void);

/* ---- the writer thread and the .tally file (writer.c) --------------------------------------- */

/* What closing a window's file tells the session. */
typedef struct tally__close_result {
    uint64_t records; /* records written to the file */
    uint64_t lost;    /* records recorded in the window but not written (I/O error) */
    int io_errno;     /* the system error that stopped writing, 0 = none */
} tally__close_result;

/* Start the writer thread (flush_ms: how often every thread's records go to the file). */
int tally__writer_start(int flush_ms);
/* Stop it (after the last file was closed). */
void tally__writer_stop(void);
/* Wake the writer: a buffer was handed over. Never blocks (may be called anywhere). */
void tally__writer_kick(void);
/* Open a window's file: base + suffix + ".tally", or base + suffix + "-N.tally" when that
 * exists (a file is never overwritten: an exec'd program, a second session, another process
 * with the same name). The chosen path goes to path_out. The writer thread writes the header
 * and META. Returns 0, or TALLY_EIO with the system error in *io_errno. */
int tally__file_open(const char *base, const char *suffix, int window_index, int64_t first_step,
                     char *path_out, size_t cap, int *io_errno);
/* Write every thread's records, then the closing chunks, and close the file (on the writer
 * thread: a file-size limit's SIGXFSZ never reaches a program thread). Returns 0 or TALLY_EIO. */
int tally__file_close(const tally__stats_chunk *st, tally__close_result *res);
/* From a signal handler: write what can be written without blocking. */
void tally__file_emergency_flush(void);
/* In a forked child: forget the parent's file and writer thread. */
void tally__writer_after_fork(void);
/* The writer's errno of the open file (0 = fine). */
int tally__file_errno(void);

/* ---- session (session.c) --------------------------------------------------------------------- */

/* Values of tally__recording, the hot-path gate: one load tells a call what to do. */
enum {
    TALLY__GATE_OFF = 0,    /* no session: calls are counted as calls outside */
    TALLY__GATE_ON = 1,     /* recording */
    TALLY__GATE_CLOSED = 2, /* a session runs, outside its active window: nothing to do */
    TALLY__GATE_TIMER = 3,  /* timer-only mode: dataloader ranges are timed */
    TALLY__GATE_FORKED = 4, /* a forked child whose session has not resumed: the first call
                               starts its own writer and file (tally__fork_resume) */
    TALLY__GATE_FAILED = 5  /* the window's file could not be written (disk full, file-size
                               limit): calls are counted as lost until the window ends */
};

/* In a forked child, at its first tally call: the session goes on in a file of its own. Returns
 * the gate now in force. */
int tally__fork_resume(void);

typedef struct tally__session {
    _Atomic int running;    /* started, not stopped */
    _Atomic int timer;      /* timer-only mode */
    _Atomic uint32_t epoch; /* window epoch: bumped when a window opens */
    _Atomic int first_window_at_start;
    _Atomic uint64_t calls_outside;
    _Atomic uint64_t bad_pops, bad_ends;
    _Atomic uint64_t records; /* written to files */
    _Atomic uint64_t buffers; /* events chunks written */
    _Atomic uint64_t steps;
    _Atomic uint64_t unclosed;
    _Atomic uint64_t dropped_nothread; /* thread table full */
    _Atomic int straddle_now;          /* the open window began after tally_start */
    _Atomic int64_t tm_reader_ns;      /* timer mode: dataloader ns in the current step */
} tally__session_t;

extern TALLY__HIDDEN tally__session_t tally__sess;

/* Who is recording: written into every file's META chunk (set at tally_start). */
typedef struct tally__ident {
    char host[256];
    char program[256];
    char samples_unit[64];
    int64_t pid;
    int32_t rank, world;
    int64_t wall_offset; /* Unix-epoch ns minus CLOCK_MONOTONIC ns */
} tally__ident_t;
extern tally__ident_t tally__ident;

/* Step records on the calling thread (api.c); with_value: a VALUE(samples) record first. */
void tally__rec_step(unsigned type, int64_t step, uint64_t samples, int with_value);

/* The writer saw an outermost dataloader range end at tick end_tick after ns: add it to the
 * reader cost of the step it ended in. */
void tally__perf_add_reader(uint64_t end_tick, int64_t ns);

uint64_t tally__dropped_total(void);
uint64_t tally__open_depth_total(void);
uint64_t tally__outside_total(void);
void tally__outside_call(void);

/* ---- tally_alloc's live set (memory.c) ---------------------------------------------------------
 */

/* One LIVE record per block alive now (a window opens: what was allocated before it). */
void tally__memory_snapshot(void);
/* Mistakes of tally_alloc/tally_free since the process began: frees of unknown addresses,
 * allocations at live addresses, sizes over INT64_MAX. */
typedef struct tally__mem_counts {
    uint64_t bad_frees, reused, bad_sizes;
} tally__mem_counts;
void tally__memory_counts(tally__mem_counts *c);

/* ---- the Perf Summary (perf_summary.c) --------------------------------------------------------
 */

typedef struct tally__perf_step {
    int64_t batch_ns;  /* step duration */
    int64_t reader_ns; /* time in dataloader ranges during the step */
    uint64_t samples;  /* tally_step's count (0 = unknown) */
} tally__perf_step;

typedef struct tally__perf_stat {
    double avg, max, min;
} tally__perf_stat;

typedef struct tally__perf_summary {
    int steps;
    int samples_mode;                    /* every step had a sample count */
    tally__perf_stat reader, batch, ips; /* seconds, seconds, per second */
    double reader_ratio;                 /* percent: total reader / total batch */
} tally__perf_summary;

/* Pure computation over n steps (values by construction in tests). avg cost = total / n; avg ips
 * = total samples (or n) / total batch time; max/min ips from per-step rates. */
void tally__perf_compute(const tally__perf_step *s, int n, tally__perf_summary *out);
/* Paddle-like "Perf Summary" table. */
void tally__perf_print(FILE *f, const tally__perf_summary *p, const char *unit);
/* The summary of the steps of a finished window (session.c); returns the number of steps. */
int tally__window_perf(const tally_window *w, tally__perf_summary *out);
/* The window's summary on f: steps, batch/reader cost and throughput, losses (perf_summary.c). */
void tally__print_window_summary(FILE *f, const tally_window *w);

/* ---- helpers of the default trace-ready handler (trace_ready.c, inject.c) ------------------- */

/* Path of the file holding this code: libtally.so, or the program it is linked into. */
int tally__self_path(char *out, size_t cap);
/* The tally command line: $TALLY_BIN, beside this library, in ../bin, or on PATH. 0 or -1. */
int tally__find_cli(char *out, size_t cap);
/* Inside the Python package, whose extension module carries the command line (python3 -m
 * tally): the interpreter and the folder the package is in, so that the default handler runs
 * its conversions with them when no tally binary is set by TALLY_BIN (a pip-installed package
 * has none). NULL: forget them. */
void tally__set_cli_python(const char *python, const char *package_parent);

#endif
