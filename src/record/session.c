/*
 * session.c — tally_start/tally_stop/tally_step: the session, the schedule's windows, one .tally
 * file per active window, the trace-ready callback, the per-step figures of the summary, and
 * what happens at exit, on SIGINT/SIGTERM and in a forked child.
 *
 * Steps are numbered from 0 at tally_start. tally_step(samples) closes step N and opens N+1;
 * inside a window each boundary is a STEP_END/STEP_BEGIN record pair on the calling thread, which
 * the reader turns into "ProfilerStep#N" spans. A window opens when a step's state becomes
 * RECORD (or RECORD_AND_RETURN) and closes after its RECORD_AND_RETURN step or at stop; closing
 * has the writer write everything out and close the file, then calls on_trace_ready with the
 * finished file. What the program pays at a window's end is the writer catching up with what
 * was recorded, never a reading of the trace.
 *
 * Each step's duration, sample count and reader cost (time in dataloader ranges, accounted by
 * the writer as it writes, or timed on the hot path in timer-only mode) are kept here, so that
 * the summary printed at a window's end comes from counters.
 *
 * fork: the child keeps none of the parent's records or buffers and does not touch its file. Its
 * session goes on at its first tally call (tally__fork_resume): a writer of its own, a file of its
 * own named again with the child's pid. A child that only execs never creates a file.
 *
 * Step, start and stop serialise on one mutex; the hot path never touches it. The writer thread
 * never takes it (program threads wait for the writer while holding it).
 */
#include "record/env_check.h"
#include "record/internal.h"
#include "record/recorder.h"
#include "record/schedule.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RLX memory_order_relaxed

tally__session_t tally__sess;
tally__ident_t tally__ident;

static struct {
    pthread_mutex_t lock;
    tally_config cfg;
    char pattern[PATH_MAX / 2]; /* the name pattern (TALLY_NAME), kept for a forked child */
    char dir[PATH_MAX / 2];     /* the output directory */
    char base[PATH_MAX - 16];   /* dir/expanded name */
    int multi;                  /* one file per window: base-wN.tally */

    int64_t step; /* the open step */
    int state;    /* its schedule state */
    int window_open;
    int window_index;
    int64_t window_first_step;
    int any_step_closed;
    char path[PATH_MAX]; /* the open window's file */
    uint64_t w_bad_pops0, w_bad_ends0, w_steps;
    tally__mem_counts w_mem0; /* tally_alloc/free mistakes when the window opened */
    uint64_t dropped0, lost0; /* at session start */
    int io_failed;            /* a window's file could not be written whole */

    /* forked child: the session resumes at the child's first call */
    int resume_window; /* the parent had a window open */
    int forked;        /* this process is a forked child of the one that started the session */

    int hooks; /* atexit and fork handlers installed */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Per-step figures: entry i is step perf_first + i. Under P.lock (the writer adds reader cost;
 * it must never wait for S.lock). */
static struct {
    pthread_mutex_t lock;
    tally__perf_step *steps;
    uint64_t *end_ticks; /* tick at which each step closed */
    int64_t n, cap;
    int64_t first;       /* the step number of entry 0 */
    uint64_t last_ticks; /* when the open step began */
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct sigaction old_int, old_term;
static _Atomic int sig_flushed;

#define GATE_SET(v) __atomic_store_n(&tally__recording, (v), __ATOMIC_RELAXED)
#define GATE()      __atomic_load_n(&tally__recording, __ATOMIC_RELAXED)

static uint64_t sum_threads(size_t field)
{
    uint64_t d = 0;
    TALLY__FOR_EACH_THREAD(ts)
    d += atomic_load_explicit((_Atomic uint64_t *)((char *)ts + field), RLX);
    return d;
}

uint64_t tally__dropped_total(void)
{
    return atomic_load(&tally__sess.dropped_nothread) +
           sum_threads(offsetof(tally__tstate, dropped));
}

static uint64_t lost_total(void)
{
    return sum_threads(offsetof(tally__tstate, lost));
}

uint64_t tally__outside_total(void)
{
    return atomic_load(&tally__sess.calls_outside) + sum_threads(offsetof(tally__tstate, outside));
}

uint64_t tally__open_depth_total(void)
{
    uint64_t d = 0;
    uint32_t ep = atomic_load(&tally__sess.epoch);
    TALLY__FOR_EACH_THREAD(ts)
    {
        if (atomic_load_explicit(&ts->epoch, RLX) == ep)
            d += atomic_load_explicit(&ts->depth, RLX);
    }
    return d;
}

/* ---- names ----------------------------------------------------------------------------------- */

static int env_int(const char *const *names, int dflt)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            char *e;
            long x = strtol(v, &e, 10);
            if (!*e && x >= 0 && x < INT_MAX)
                return (int)x;
        }
    }
    return dflt;
}

static void fill_ident(const tally_config *c)
{
    memset(&tally__ident, 0, sizeof tally__ident);
    if (gethostname(tally__ident.host, sizeof tally__ident.host - 1) != 0)
        strcpy(tally__ident.host, "localhost");
    tally__ident.host[sizeof tally__ident.host - 1] = 0;
    FILE *f = fopen("/proc/self/comm", "r");
    if (f) {
        if (fgets(tally__ident.program, sizeof tally__ident.program, f))
            tally__ident.program[strcspn(tally__ident.program, "\n")] = 0;
        fclose(f);
    }
    tally__ident.pid = (int64_t)getpid();
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                            "PMI_RANK", NULL};
    static const char *const world_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS",
                                             NULL};
    tally__ident.rank = env_int(rank_vars, -1);
    tally__ident.world = env_int(world_vars, 0);
    snprintf(tally__ident.samples_unit, sizeof tally__ident.samples_unit, "%s",
             c->samples_unit ? c->samples_unit : "samples");
    /* wall offset: the tightest of a few (realtime, monotonic) pairs */
    int64_t best = INT64_MAX;
    for (int i = 0; i < 5; i++) {
        int64_t a = tally__mono_ns(), r = tally__real_ns(), b = tally__mono_ns();
        if (b - a < best) {
            best = b - a;
            tally__ident.wall_offset = r - (a + (b - a) / 2);
        }
    }
}

int tally__expand_name(const char *pat, char *out, size_t cap)
{
    size_t n = 0;
    char tmp[300];
    for (const char *p = pat; *p;) {
        const char *rep = NULL;
        size_t skip = 1;
        if (!strncmp(p, "{host}", 6)) {
            rep = tally__ident.host[0] ? tally__ident.host : "host";
            skip = 6;
        } else if (!strncmp(p, "{pid}", 5)) {
            snprintf(tmp, sizeof tmp, "%lld", (long long)getpid());
            rep = tmp;
            skip = 5;
        } else if (!strncmp(p, "{rank}", 6)) {
            snprintf(tmp, sizeof tmp, "%d", tally__ident.rank < 0 ? 0 : tally__ident.rank);
            rep = tmp;
            skip = 6;
        } else if (!strncmp(p, "{time}", 6)) {
            time_t now = time(NULL);
            struct tm tm;
            localtime_r(&now, &tm);
            strftime(tmp, sizeof tmp, "%Y%m%d-%H%M%S", &tm);
            rep = tmp;
            skip = 6;
        }
        if (rep) {
            size_t l = strlen(rep);
            if (n + l + 1 > cap)
                return -1;
            memcpy(out + n, rep, l);
            n += l;
        } else {
            if (n + 2 > cap)
                return -1;
            out[n++] = *p;
        }
        p += skip;
    }
    out[n] = 0;
    return 0;
}

/* The session's counters, at start and in a forked child. */
static void reset_counts(void)
{
    atomic_store(&tally__sess.records, 0);
    atomic_store(&tally__sess.buffers, 0);
    atomic_store(&tally__sess.bad_pops, 0);
    atomic_store(&tally__sess.bad_ends, 0);
    atomic_store(&tally__sess.unclosed, 0);
    atomic_store(&tally__sess.steps, 0);
}

/* ---- per-step figures ------------------------------------------------------------------------ */

static void perf_reset(int64_t first_step)
{
    pthread_mutex_lock(&P.lock);
    P.n = 0;
    P.first = first_step;
    P.last_ticks = tally__ticks();
    atomic_store(&tally__sess.tm_reader_ns, 0);
    pthread_mutex_unlock(&P.lock);
}

/* The open step closed now: its duration, the reader cost gathered for it, its samples. */
static void note_step(uint64_t samples)
{
    uint64_t now = tally__ticks();
    pthread_mutex_lock(&P.lock);
    if (P.n == P.cap) {
        int64_t ncap = P.cap ? P.cap * 2 : 256;
        void *a = realloc(P.steps, (size_t)ncap * sizeof *P.steps);
        if (a)
            P.steps = a;
        void *b = realloc(P.end_ticks, (size_t)ncap * sizeof *P.end_ticks);
        if (b)
            P.end_ticks = b;
        if (a && b)
            P.cap = ncap;
    }
    int64_t reader = atomic_exchange(&tally__sess.tm_reader_ns, 0);
    if (P.n < P.cap) {
        tally__perf_step *ps = &P.steps[P.n];
        ps->batch_ns = tally__ticks_to_ns(now) - tally__ticks_to_ns(P.last_ticks);
        ps->reader_ns = reader;
        ps->samples = samples;
        P.end_ticks[P.n++] = now;
    }
    P.last_ticks = now;
    pthread_mutex_unlock(&P.lock);
}

void tally__perf_add_reader(uint64_t end_tick, int64_t ns)
{
    pthread_mutex_lock(&P.lock);
    /* the first step that closed at or after end_tick; none: the open step */
    int64_t lo = 0, hi = P.n;
    uint64_t t = end_tick & TALLY__TS_MASK;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((P.end_ticks[mid] & TALLY__TS_MASK) < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < P.n)
        P.steps[lo].reader_ns += ns;
    else
        atomic_fetch_add(&tally__sess.tm_reader_ns, ns);
    pthread_mutex_unlock(&P.lock);
}

int tally__window_perf(const tally_window *w, tally__perf_summary *out)
{
    memset(out, 0, sizeof *out);
    if (!w || w->first_step < 0 || w->last_step < w->first_step)
        return 0;
    pthread_mutex_lock(&P.lock);
    int64_t a = w->first_step - P.first, b = w->last_step + 1 - P.first;
    if (a < 0)
        a = 0;
    if (b > P.n)
        b = P.n;
    if (a < b)
        tally__perf_compute(P.steps + a, (int)(b - a), out);
    pthread_mutex_unlock(&P.lock);
    return out->steps;
}

/* ---- windows --------------------------------------------------------------------------------- */

static void default_ready(const tally_window *w, void *user)
{
    tally_default_trace_ready(w, user);
}

static void grace(void)
{
    /* let calls that passed the gate just before it closed finish their store */
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

/* The step whose STEP_BEGIN waits for the first NVTX step range; -1 = none. */
static _Atomic int64_t g_deferred_step = -1;

void tally__step_range_begin(void)
{
    if (atomic_load_explicit(&g_deferred_step, memory_order_relaxed) < 0)
        return;
    int64_t step = atomic_exchange(&g_deferred_step, -1);
    if (step >= 0)
        tally__rec_step(TALLY__R_STEP_BEGIN, step, 0, 0);
}

static void open_window(int64_t step)
{
    int idx = S.window_index;
    char suffix[32] = "";
    if (S.multi)
        snprintf(suffix, sizeof suffix, "-w%d", idx);
    int err = 0;
    if (tally__file_open(S.base, suffix, idx, step, S.path, sizeof S.path, &err) != 0) {
        if (!S.cfg.quiet)
            fprintf(stderr, "tally: cannot write %s%s.tally: %s; this window is not recorded\n",
                    S.base, suffix, strerror(err));
        S.io_failed = 1;
        return;
    }
    /* ranges open before the window (or in the parent, before a fork): their pops are
     * straddlers, not errors */
    int straddle = S.forked || !(idx == 0 && step == 0);
    atomic_store(&tally__sess.straddle_now, straddle);
    /* threads reset their nesting when they see the new epoch (api.c: sync_epoch) */
    atomic_fetch_add(&tally__sess.epoch, 1);
    S.window_open = 1;
    S.window_first_step = step;
    TALLY__FOR_EACH_THREAD(ts)
    {
        ts->dropped0 = atomic_load(&ts->dropped);
        ts->lost0 = atomic_load(&ts->lost);
    }
    S.w_bad_pops0 = atomic_load(&tally__sess.bad_pops);
    S.w_bad_ends0 = atomic_load(&tally__sess.bad_ends);
    tally__memory_counts(&S.w_mem0);
    S.w_steps = 0;
    GATE_SET(TALLY__GATE_ON);
    /* With steps made by NVTX ranges (tally run --step-range), the session's first step
     * begins where the first such range begins (tally__step_range_begin), not at start-up:
     * the time before it (imports, model building) is no step. Later steps follow on. */
    const char *step_range = getenv("TALLY_STEP_RANGE");
    if (step == 0 && step_range && *step_range)
        atomic_store(&g_deferred_step, step);
    else
        tally__rec_step(TALLY__R_STEP_BEGIN, step, 0, 0);
    tally__memory_snapshot(); /* what tally_alloc gave before the window and is still live */
}

/* A finished window whose trace-ready callback runs once the session lock is released (so that
 * the callback may call tally functions, even tally_stop). */
typedef struct ready_call {
    int have;
    tally_window w;
    char path[PATH_MAX];
    char base_path[PATH_MAX];
    tally_trace_ready_fn fn;
    void *user;
} ready_call;

static void fire(ready_call *rc)
{
    if (!rc->have)
        return;
    rc->have = 0;
    rc->w.path = rc->path;
    rc->w.base_path = rc->base_path;
    rc->fn(&rc->w, rc->user);
}

static uint64_t window_delta(size_t field, size_t field0)
{
    uint64_t d = 0;
    TALLY__FOR_EACH_THREAD(ts)
    {
        uint64_t now = atomic_load_explicit((_Atomic uint64_t *)((char *)ts + field), RLX);
        uint64_t then = *(uint64_t *)((char *)ts + field0);
        d += now >= then ? now - then : 0;
    }
    return d;
}

static void close_window(int64_t last_step, ready_call *out)
{
    if (!S.window_open)
        return;
    tally__collect_stop(); /* device work of the window reaches it before the gate closes */
    GATE_SET(TALLY__GATE_CLOSED);
    grace();
    tally__stats_chunk st = {0};
    st.dropped = window_delta(offsetof(tally__tstate, dropped), offsetof(tally__tstate, dropped0));
    st.bad_pops = atomic_load(&tally__sess.bad_pops) - S.w_bad_pops0;
    st.bad_ends = atomic_load(&tally__sess.bad_ends) - S.w_bad_ends0;
    st.calls_outside = tally__outside_total();
    st.unclosed = tally__open_depth_total();
    st.steps = S.w_steps;
    tally__mem_counts mc;
    tally__memory_counts(&mc);
    st.bad_frees = mc.bad_frees - S.w_mem0.bad_frees;
    st.reused_allocs = mc.reused - S.w_mem0.reused;
    st.bad_sizes = mc.bad_sizes - S.w_mem0.bad_sizes;
    atomic_fetch_add(&tally__sess.unclosed, st.unclosed);
    tally__close_result res;
    int rc = tally__file_close(&st, &res);
    atomic_fetch_add(&tally__sess.records, res.records);
    S.window_open = 0;
    int idx = S.window_index++;
    if (rc != 0) {
        S.io_failed = 1;
        if (!S.cfg.quiet)
            fprintf(stderr,
                    "tally: writing %s failed: %s; %llu records lost, the trace ends where "
                    "writing stopped\n",
                    S.path, strerror(res.io_errno ? res.io_errno : EIO),
                    (unsigned long long)res.lost);
    }
    tally_window *w = &out->w;
    memset(w, 0, sizeof *w);
    w->index = idx;
    w->first_step = S.any_step_closed ? S.window_first_step : -1;
    w->last_step = S.any_step_closed ? last_step : -1;
    w->records = res.records;
    w->dropped = st.dropped;
    w->lost = res.lost;
    w->io_errno = res.io_errno;
    w->write = S.cfg.write;
    if (S.cfg.quiet)
        w->write &= ~(unsigned)TALLY_WRITE_SUMMARY;
    if (rc != 0) /* no conversion of a file that is not whole */
        w->write &= ~(unsigned)(TALLY_WRITE_JSON | TALLY_WRITE_JSON_GZ);
    snprintf(out->path, sizeof out->path, "%s", S.path);
    size_t n = strlen(out->path);
    snprintf(out->base_path, sizeof out->base_path, "%.*s", (int)(n > 6 ? n - 6 : n),
             out->path); /* without ".tally" */
    out->fn = S.cfg.on_trace_ready ? S.cfg.on_trace_ready : default_ready;
    out->user = S.cfg.user;
    out->have = 1;
}

/* ---- signals, exit, fork --------------------------------------------------------------------- */

/* SIGINT/SIGTERM: write what is complete (async-signal-safe: no lock, no allocation), then
 * hand the signal to the program's own disposition. Recording goes on: if the program's handler
 * lets it continue, so does the trace (and tally_stop or the exit hook finishes the file). */
static void on_signal(int sig)
{
    int saved = errno;
    if (!atomic_exchange(&sig_flushed, 1))
        tally__file_emergency_flush();
    sigaction(sig, sig == SIGINT ? &old_int : &old_term, NULL);
    errno = saved;
    raise(sig); /* delivered with the program's own disposition once we return */
}

static void at_exit(void)
{
    if (atomic_load(&tally__sess.running))
        tally_stop();
}

static void remove_signals(void);

/* In the child (only the forking thread exists): forget the parent's file, writer, buffers and
 * records; the session resumes at the child's first call. */
static void after_fork_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    S.lock = m;
    P.lock = m;
    tally__writer_after_fork();
    tally__threads_after_fork();
    int gate = GATE();
    if (!atomic_load(&tally__sess.running))
        return;
    reset_counts();
    atomic_store(&tally__sess.calls_outside, 0);
    atomic_store(&tally__sess.straddle_now, 1);
    atomic_fetch_add(&tally__sess.epoch, 1);
    S.dropped0 = S.lost0 = 0;
    S.io_failed = 0;
    S.any_step_closed = 0;
    perf_reset(S.step);
    if (gate == TALLY__GATE_TIMER)
        return; /* timer-only: the child times its own steps */
    S.resume_window = S.window_open;
    S.forked = 1;
    S.window_open = 0;
    S.window_index = 0;
    GATE_SET(TALLY__GATE_FORKED);
}

/* The child's own base name: the pattern expanded again (a new {pid}); when the pattern has no
 * {pid}, the parent's name with "-<pid>" added. */
static void child_base(void)
{
    char name[PATH_MAX / 2];
    char parent[sizeof S.base];
    snprintf(parent, sizeof parent, "%s", S.base);
    if (tally__expand_name(S.pattern, name, sizeof name) != 0 ||
        snprintf(S.base, sizeof S.base, "%s/%s", S.dir, name) >= (int)sizeof S.base ||
        strcmp(S.base, parent) == 0)
        snprintf(S.base, sizeof S.base, "%.*s-%lld", (int)sizeof parent - 24, parent,
                 (long long)getpid());
}

int tally__fork_resume(void)
{
    int saved = errno;
    pthread_mutex_lock(&S.lock);
    if (GATE() == TALLY__GATE_FORKED) {
        tally__ident.pid = (int64_t)getpid();
        child_base();
        GATE_SET(TALLY__GATE_CLOSED);
        if (tally__writer_start(S.cfg.flush_ms) != 0) {
            /* no writer: the child does not record */
        } else if (S.resume_window) {
            S.any_step_closed = 0;
            open_window(S.step);
        }
    }
    int g = GATE();
    pthread_mutex_unlock(&S.lock);
    errno = saved;
    return g;
}

static void install_hooks(void)
{
    if (S.hooks)
        return;
    S.hooks = 1;
    atexit(at_exit);
    pthread_atfork(NULL, NULL, after_fork_child);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    struct sigaction cur;
    /* leave alone signals the program ignores */
    if (sigaction(SIGINT, NULL, &cur) == 0 && cur.sa_handler != SIG_IGN &&
        cur.sa_handler != on_signal)
        sigaction(SIGINT, &sa, &old_int);
    if (sigaction(SIGTERM, NULL, &cur) == 0 && cur.sa_handler != SIG_IGN &&
        cur.sa_handler != on_signal)
        sigaction(SIGTERM, &sa, &old_term);
    atomic_store(&sig_flushed, 0);
}

static void remove_signals(void)
{
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) == 0 && cur.sa_handler == on_signal)
        sigaction(SIGINT, &old_int, NULL);
    if (sigaction(SIGTERM, NULL, &cur) == 0 && cur.sa_handler == on_signal)
        sigaction(SIGTERM, &old_term, NULL);
}

/* ---- session --------------------------------------------------------------------------------- */

static int ensure_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
    } else if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return access(dir, W_OK) == 0 ? 0 : -1;
}

/* The per-rank folder DIR/rank<N> when the launcher gave this process a rank (fill_ident read
 * it), unless TALLY_RANK_DIRS=0 or DIR already is that folder (tally run's injection sets it).
 * 1 with the path in out, else 0. */
static int rank_dir(const char *dir, char *out, size_t cap)
{
    const char *on = getenv("TALLY_RANK_DIRS");
    if (tally__ident.rank < 0 || (on && !strcmp(on, "0")))
        return 0;
    char leaf[32];
    snprintf(leaf, sizeof leaf, "rank%d", tally__ident.rank);
    size_t n = strlen(dir), l = strlen(leaf);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= l && !strncmp(dir + n - l, leaf, l) && (n == l || dir[n - l - 1] == '/'))
        return 0;
    return snprintf(out, cap, "%.*s/%s", (int)n, dir, leaf) < (int)cap;
}

static int start_locked(const tally_config *cfg)
{
    if (atomic_load(&tally__sess.running))
        return TALLY_ESTATE;
    tally__clock_init();
    tally_config c;
    if (cfg)
        c = *cfg;
    else
        memset(&c, 0, sizeof c);
    int rc = tally_config_from_env(&c);
    if (rc != 0)
        return rc;
    if (!tally__sched_valid(&c))
        return TALLY_EINVAL;
    char bad[256];
    if (!c.quiet && tally__env_check(bad, sizeof bad) != 0) /* a misspelt setting is ignored */
        fprintf(stderr, "tally: warning: %s\n", bad);
    fill_ident(&c);
    if (!c.timer_only) {
        if (ensure_dir(c.output_dir) != 0) {
            if (!c.quiet)
                fprintf(stderr, "tally: output directory %s is not writable: %s\n", c.output_dir,
                        strerror(errno));
            return TALLY_EIO;
        }
        /* a rank's files go to rank<N>/, where `tally report DIR` and TensorBoard find them */
        char rdir[PATH_MAX];
        if (rank_dir(c.output_dir, rdir, sizeof rdir)) {
            if (ensure_dir(rdir) != 0) {
                if (!c.quiet)
                    fprintf(stderr, "tally: output directory %s is not writable: %s\n", rdir,
                            strerror(errno));
                return TALLY_EIO;
            }
            c.output_dir = rdir;
        }
        char name[PATH_MAX / 2];
        if (tally__expand_name(c.name, name, sizeof name) != 0 ||
            snprintf(S.base, sizeof S.base, "%s/%s", c.output_dir, name) >= (int)sizeof S.base ||
            snprintf(S.pattern, sizeof S.pattern, "%s", c.name) >= (int)sizeof S.pattern ||
            snprintf(S.dir, sizeof S.dir, "%s", c.output_dir) >= (int)sizeof S.dir)
            return TALLY_EINVAL;
    }
    S.cfg = c;
    /* the config's strings may not outlive this call: keep our copies */
    S.cfg.output_dir = S.dir;
    S.cfg.name = S.pattern;
    S.multi = c.active > 0 && c.repeat != 1;
    S.step = 0;
    S.window_open = 0;
    S.window_index = 0;
    S.any_step_closed = 0;
    S.io_failed = 0;
    S.resume_window = 0;
    S.forked = 0;
    reset_counts();
    S.dropped0 = tally__dropped_total();
    S.lost0 = lost_total();
    perf_reset(0);

    if (c.timer_only) {
        atomic_store(&tally__sess.timer, 1);
        atomic_store(&tally__sess.running, 1);
        GATE_SET(TALLY__GATE_TIMER);
        install_hooks();
        return 0;
    }
    atomic_store(&tally__sess.timer, 0);
    rc = tally__pool_init(c.memory_cap, c.buffer_size);
    if (rc != 0)
        return rc;
    rc = tally__writer_start(c.flush_ms);
    if (rc != 0)
        return rc;
    atomic_store(&tally__sess.running, 1);
    GATE_SET(TALLY__GATE_CLOSED);
    install_hooks();
    install_signals();
    S.state = tally__sched_state(&c, 0);
    if (S.state == TALLY__ST_RECORD || S.state == TALLY__ST_RECORD_AND_RETURN) {
        open_window(0);
        if (!S.window_open) { /* the file could not be written */
            atomic_store(&tally__sess.running, 0);
            GATE_SET(TALLY__GATE_OFF);
            tally__writer_stop();
            tally__pool_release();
            remove_signals();
            return TALLY_EIO;
        }
    }
    return 0;
}

TALLY_API int tally_start(const tally_config *cfg)
{
    int saved = errno;
    pthread_mutex_lock(&S.lock);
    int rc = start_locked(cfg);
    pthread_mutex_unlock(&S.lock);
    if (rc == 0 && !atomic_load(&tally__sess.timer))
        tally__collect_start(); /* outside the lock: CUPTI calls back into the recorder */
    errno = saved;
    return rc;
}

int tally__start_injected(void)
{
    int saved = errno;
    pthread_mutex_lock(&S.lock);
    int rc = start_locked(NULL);
    pthread_mutex_unlock(&S.lock);
    errno = saved;
    return rc;
}

TALLY_API int tally_running(void)
{
    return atomic_load(&tally__sess.running);
}

TALLY_API void tally_step(uint64_t samples)
{
    int saved = errno;
    if (!atomic_load_explicit(&tally__sess.running, RLX)) {
        tally__outside_call();
        return;
    }
    if (GATE() == TALLY__GATE_FORKED)
        tally__fork_resume();
    pthread_mutex_lock(&S.lock);
    if (!atomic_load(&tally__sess.running)) {
        pthread_mutex_unlock(&S.lock);
        errno = saved;
        return;
    }
    atomic_fetch_add(&tally__sess.steps, 1);
    atomic_store(&g_deferred_step, -1); /* a step that ended before any step range began */
    S.any_step_closed = 1;
    int64_t n = S.step;
    ready_call ready;
    ready.have = 0;
    note_step(samples);
    if (S.cfg.timer_only) {
        S.step = n + 1;
        pthread_mutex_unlock(&S.lock);
        errno = saved;
        return;
    }
    if (S.window_open) {
        tally__rec_step(TALLY__R_STEP_END, n, samples, 1);
        S.w_steps++;
    }
    int next = tally__sched_state(&S.cfg, n + 1);
    int next_records = next == TALLY__ST_RECORD || next == TALLY__ST_RECORD_AND_RETURN;
    if (S.window_open && (S.state == TALLY__ST_RECORD_AND_RETURN || !next_records))
        close_window(n, &ready);
    S.step = n + 1;
    S.state = next;
    if (next_records) {
        if (!S.window_open)
            open_window(n + 1);
        else
            tally__rec_step(TALLY__R_STEP_BEGIN, n + 1, 0, 0);
    }
    pthread_mutex_unlock(&S.lock);
    fire(&ready);
    errno = saved;
}

TALLY_API int tally_stop(void)
{
    int saved = errno;
    pthread_mutex_lock(&S.lock);
    if (!atomic_load(&tally__sess.running)) {
        pthread_mutex_unlock(&S.lock);
        errno = saved;
        return TALLY_ESTATE;
    }
    int rc = 0;
    ready_call ready;
    ready.have = 0;
    if (S.cfg.timer_only) {
        GATE_SET(TALLY__GATE_OFF);
        atomic_store(&tally__sess.running, 0);
        atomic_store(&tally__sess.timer, 0);
        tally__perf_summary p;
        memset(&p, 0, sizeof p);
        pthread_mutex_lock(&P.lock);
        tally__perf_compute(P.steps, (int)P.n, &p);
        pthread_mutex_unlock(&P.lock);
        /* a forked child that closed no step of its own has nothing to say */
        if (!S.cfg.quiet && (p.steps || P.first == 0))
            tally__perf_print(stderr, &p, S.cfg.samples_unit);
    } else if (GATE() == TALLY__GATE_FORKED) {
        /* a forked child that never called tally: no file, nothing to say */
        GATE_SET(TALLY__GATE_OFF);
        atomic_store(&tally__sess.running, 0);
    } else {
        if (S.window_open) {
            tally__rec_step(TALLY__R_STEP_STOP, S.step, 0, 0);
            close_window(S.step - 1, &ready);
        }
        GATE_SET(TALLY__GATE_OFF);
        atomic_store(&tally__sess.running, 0);
        grace();
        tally__writer_stop();
        tally__pool_release();
        remove_signals();
        if (S.io_failed)
            rc = TALLY_EIO;
    }
    pthread_mutex_unlock(&S.lock);
    fire(&ready);
    errno = saved;
    return rc;
}

TALLY_API void tally_get_stats(tally_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->records = atomic_load(&tally__sess.records);
    out->dropped = tally__dropped_total() - S.dropped0;
    out->bad_pops = atomic_load(&tally__sess.bad_pops);
    out->bad_ends = atomic_load(&tally__sess.bad_ends);
    out->calls_outside = tally__outside_total();
    out->unclosed = atomic_load(&tally__sess.unclosed);
    out->steps = atomic_load(&tally__sess.steps);
    out->buffers_written = atomic_load(&tally__sess.buffers);
    out->lost = lost_total() - S.lost0;
    tally__mem_counts mc;
    tally__memory_counts(&mc);
    out->bad_frees = mc.bad_frees;
    out->reused_allocs = mc.reused;
    out->bad_sizes = mc.bad_sizes;
}
