/*
 * session.c — tally_start/tally_stop/tally_step: the session, the schedule's windows, one .tally
 * file per active window, the trace-ready callback, timer-only mode, and the flushes at exit and
 * on SIGINT/SIGTERM.
 *
 * Steps are numbered from 0 at tally_start. tally_step(samples) closes step N and opens N+1;
 * inside a window each boundary is a STEP_END/STEP_BEGIN record pair on the calling thread, which
 * the reader turns into "ProfilerStep#N" spans. A window opens when a step's state becomes
 * RECORD (or RECORD_AND_RETURN) and closes after its RECORD_AND_RETURN step or at stop; closing
 * writes everything out, closes the file and then calls on_trace_ready with the finished file.
 *
 * Step, start and stop serialise on one mutex; the hot path never touches it.
 */
#include "record/internal.h"
#include "record/recorder.h"
#include "record/schedule.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
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
    char base[PATH_MAX - 16]; /* output_dir/expanded name */
    int multi;                /* one file per window: base-wN.tally */

    int64_t step; /* the open step */
    int state;    /* its schedule state */
    int window_open;
    int window_index;
    int64_t window_first_step;
    int any_step_closed;
    char path[PATH_MAX];
    char base_path[PATH_MAX - 16];
    uint64_t w_dropped0, w_bad_pops0, w_bad_ends0, w_steps;
    uint64_t dropped0; /* at session start */

    /* timer-only mode */
    int64_t last_step_ns;
    tally__perf_step *perf;
    int nperf, cap_perf;

    int hooks; /* atexit and signal handlers installed */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct sigaction old_int, old_term;
static _Atomic int sig_flushed;

#define GATE_SET(v) __atomic_store_n(&tally__recording, (v), __ATOMIC_RELAXED)

uint64_t tally__dropped_total(void)
{
    uint64_t d = atomic_load(&tally__sess.dropped_nothread);
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (ts)
            d += atomic_load_explicit(&ts->dropped, RLX);
    }
    return d;
}

uint64_t tally__open_depth_total(void)
{
    uint64_t d = 0;
    uint32_t ep = atomic_load(&tally__sess.epoch);
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (ts && atomic_load_explicit(&ts->epoch, RLX) == ep)
            d += atomic_load_explicit(&ts->depth, RLX);
    }
    return d;
}

uint64_t tally__outside_total(void)
{
    uint64_t d = atomic_load(&tally__sess.calls_outside);
    uint32_t nt = atomic_load(&tally__nthreads);
    if (nt > TALLY__MAX_THREADS)
        nt = TALLY__MAX_THREADS;
    for (uint32_t i = 0; i < nt; i++) {
        tally__tstate *ts = atomic_load(&tally__threads[i]);
        if (ts)
            d += atomic_load_explicit(&ts->outside, RLX);
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
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", NULL};
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

static void open_window(int64_t step)
{
    int idx = S.window_index;
    if (S.multi)
        snprintf(S.base_path, sizeof S.base_path, "%.*s-w%d", (int)sizeof S.base - 16, S.base, idx);
    else
        snprintf(S.base_path, sizeof S.base_path, "%s", S.base);
    snprintf(S.path, sizeof S.path, "%s.tally", S.base_path);
    if (tally__file_open(S.path, idx, step) != 0) {
        if (!S.cfg.quiet)
            fprintf(stderr, "tally: cannot write %s: %s\n", S.path, strerror(errno));
        return;
    }
    /* ranges open before the window: their pops are straddlers, not errors */
    int straddle = !(idx == 0 && step == 0);
    atomic_store(&tally__sess.straddle_now, straddle);
    /* threads reset their nesting when they see the new epoch (api.c: sync_epoch) */
    atomic_fetch_add(&tally__sess.epoch, 1);
    S.window_open = 1;
    S.window_first_step = step;
    S.w_dropped0 = tally__dropped_total();
    S.w_bad_pops0 = atomic_load(&tally__sess.bad_pops);
    S.w_bad_ends0 = atomic_load(&tally__sess.bad_ends);
    S.w_steps = 0;
    GATE_SET(TALLY__GATE_ON);
    tally__rec_step(TALLY__R_STEP_BEGIN, step, 0, 0);
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

static void close_window(int64_t last_step, ready_call *out)
{
    if (!S.window_open)
        return;
    tally__collect_stop(); /* device work of the window reaches it before the gate closes */
    GATE_SET(TALLY__GATE_CLOSED);
    grace();
    tally__stats_chunk st = {0};
    st.dropped = tally__dropped_total() - S.w_dropped0;
    st.bad_pops = atomic_load(&tally__sess.bad_pops) - S.w_bad_pops0;
    st.bad_ends = atomic_load(&tally__sess.bad_ends) - S.w_bad_ends0;
    st.calls_outside = tally__outside_total();
    st.unclosed = tally__open_depth_total();
    st.steps = S.w_steps;
    atomic_fetch_add(&tally__sess.unclosed, st.unclosed);
    uint64_t records = 0;
    int rc = tally__file_close(&st, &records);
    atomic_fetch_add(&tally__sess.records, records);
    S.window_open = 0;
    int idx = S.window_index++;
    if (rc != 0) {
        if (!S.cfg.quiet)
            fprintf(stderr, "tally: writing %s failed\n", S.path);
        return;
    }
    tally_window *w = &out->w;
    memset(w, 0, sizeof *w);
    w->index = idx;
    w->first_step = S.any_step_closed ? S.window_first_step : -1;
    w->last_step = S.any_step_closed ? last_step : -1;
    w->records = records;
    w->dropped = st.dropped;
    w->write = S.cfg.write;
    if (S.cfg.quiet)
        w->write &= ~(unsigned)TALLY_WRITE_SUMMARY;
    snprintf(out->path, sizeof out->path, "%s", S.path);
    snprintf(out->base_path, sizeof out->base_path, "%s", S.base_path);
    out->fn = S.cfg.on_trace_ready ? S.cfg.on_trace_ready : default_ready;
    out->user = S.cfg.user;
    out->have = 1;
}

/* ---- signals and exit ------------------------------------------------------------------------ */

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

/* A forked child (data-loading workers) does not record into its parent's file: its session
 * ends silently and its calls count as calls outside. */
static void after_fork_child(void)
{
    GATE_SET(TALLY__GATE_OFF);
    atomic_store(&tally__sess.running, 0);
    atomic_store(&tally__sess.timer, 0);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    S.lock = m;
    S.window_open = 0;
    tally__file_forget();
    remove_signals();
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

static int start_locked(const tally_config *cfg, int injected)
{
    (void)injected;
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
    fill_ident(&c);
    if (!c.timer_only) {
        if (ensure_dir(c.output_dir) != 0) {
            if (!c.quiet)
                fprintf(stderr, "tally: output directory %s is not writable: %s\n", c.output_dir,
                        strerror(errno));
            return TALLY_EIO;
        }
        char name[PATH_MAX / 2];
        if (tally__expand_name(c.name, name, sizeof name) != 0)
            return TALLY_EINVAL;
        if (snprintf(S.base, sizeof S.base, "%s/%s", c.output_dir, name) >= (int)sizeof S.base)
            return TALLY_EINVAL;
    }
    S.cfg = c;
    S.multi = c.active > 0 && c.repeat != 1;
    S.step = 0;
    S.window_open = 0;
    S.window_index = 0;
    S.any_step_closed = 0;
    S.nperf = 0;
    S.last_step_ns = tally__mono_ns();
    atomic_store(&tally__sess.records, 0);
    atomic_store(&tally__sess.buffers, 0);
    atomic_store(&tally__sess.bad_pops, 0);
    atomic_store(&tally__sess.bad_ends, 0);
    atomic_store(&tally__sess.unclosed, 0);
    atomic_store(&tally__sess.steps, 0);
    atomic_store(&tally__sess.tm_reader_ns, 0);
    S.dropped0 = tally__dropped_total();

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
    rc = tally__writer_start();
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
            tally__pool_free();
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
    int rc = start_locked(cfg, 0);
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
    int rc = start_locked(NULL, 1);
    pthread_mutex_unlock(&S.lock);
    errno = saved;
    return rc;
}

TALLY_API int tally_running(void)
{
    return atomic_load(&tally__sess.running);
}

/* One entry per closed step, in every mode: its duration, the time spent in dataloader ranges
 * during it (timer-only mode: timed on the hot path) and its sample count. Entry i is step i. */
static void note_step(uint64_t samples)
{
    int64_t now = tally__mono_ns();
    if (S.nperf == S.cap_perf) {
        int ncap = S.cap_perf ? S.cap_perf * 2 : 256;
        void *p = realloc(S.perf, (size_t)ncap * sizeof *S.perf);
        if (!p) {
            S.last_step_ns = now;
            return;
        }
        S.perf = p;
        S.cap_perf = ncap;
    }
    tally__perf_step *ps = &S.perf[S.nperf++];
    ps->batch_ns = now - S.last_step_ns;
    ps->reader_ns = atomic_exchange(&tally__sess.tm_reader_ns, 0);
    ps->samples = samples;
    S.last_step_ns = now;
}

int tally__window_perf(const tally_window *w, tally__perf_summary *out)
{
    memset(out, 0, sizeof *out);
    if (!w || w->first_step < 0 || w->last_step < w->first_step)
        return 0;
    pthread_mutex_lock(&S.lock);
    int64_t a = w->first_step, b = w->last_step + 1;
    if (b > S.nperf)
        b = S.nperf;
    if (a < b)
        tally__perf_compute(S.perf + a, (int)(b - a), out);
    pthread_mutex_unlock(&S.lock);
    return out->steps;
}

TALLY_API void tally_step(uint64_t samples)
{
    int saved = errno;
    if (!atomic_load_explicit(&tally__sess.running, RLX)) {
        tally__outside_call();
        return;
    }
    pthread_mutex_lock(&S.lock);
    if (!atomic_load(&tally__sess.running)) {
        pthread_mutex_unlock(&S.lock);
        errno = saved;
        return;
    }
    atomic_fetch_add(&tally__sess.steps, 1);
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
        if (!S.cfg.quiet) {
            tally__perf_summary p;
            tally__perf_compute(S.perf, S.nperf, &p);
            tally__perf_print(stderr, &p, S.cfg.samples_unit);
        }
    } else {
        if (S.window_open) {
            tally__rec_step(TALLY__R_STEP_STOP, S.step, 0, 0);
            close_window(S.step - 1, &ready);
        }
        GATE_SET(TALLY__GATE_OFF);
        atomic_store(&tally__sess.running, 0);
        grace();
        tally__writer_stop();
        tally__pool_free();
        remove_signals();
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
}
