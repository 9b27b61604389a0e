/*
 * bench_overhead.c — what a range costs the program being profiled.
 *
 * Prints, as medians over ROUNDS rounds of N pairs each (ns per pair, [min-max] beside):
 *   tsc2        two back-to-back TSC reads: the floor of any TSC-stamped begin+end
 *   push+pop    a TALLY_PUSH/TALLY_POP pair while recording, 1 thread
 *   push+pop x2 the same on 2 threads at once (each thread's own time per pair)
 *   ... CPU    the same two, in each thread's own CPU time (CLOCK_THREAD_CPUTIME_ID): leaves out
 *               the time a thread waited for a core (the writer thread needs one too)
 *   begin+end   a tally_begin/tally_end pair (handles) while recording
 *   off         a push+pop pair while a session runs but the window is closed (per call: /2)
 *   before      a push+pop pair before tally_start (counted as calls outside; per call: /2)
 *   alloc+free  a tally_alloc/tally_free pair while recording, with 10,000 other blocks alive
 *               (the live table's steady state); "named": the allocation carries a dotted name;
 *               "window closed": the live table alone, nothing recorded; "16 addresses": the
 *               same 16 blocks over and over (a caching allocator within a step), where the
 *               4096 of the others cycle through the table's cache lines
 * and bytes per record (the record size, and the file's bytes per record written).
 * Targets (issue 2): pair <= 1.5 x tsc2; off <= 2 ns per call; x2 within 10% of 1 thread;
 * record <= 16 bytes. (issue 9): an alloc+free pair <= 2 x a push+pop pair.
 *
 *   bench_overhead [pairs_per_round] [rounds]     (defaults 1000000 and 7)
 * Trace files go to a temporary directory that is removed at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "record/format.h"
#include <tally.h>

#include "bench_util.h"

static long N = 1000000;
static int ROUNDS = 7;
static char dir[256];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const tally_srcloc loc = {"range", __FILE__, "bench", __LINE__, TALLY_USER};

__attribute__((noinline)) static double loop_tsc2(void)
{
    double t0 = now();
    uint64_t acc = 0;
    for (long i = 0; i < N; i++) {
#if defined(__x86_64__) || defined(__i386__)
        acc += __rdtsc();
        __asm__ __volatile__("" ::: "memory");
        acc += __rdtsc();
#endif
        __asm__ __volatile__("" ::: "memory");
    }
    double t = (now() - t0) / (double)N;
    __asm__ __volatile__("" ::"r"(acc));
    return t;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* wall ns per pair; *cpu (if given): the thread's own CPU ns per pair (time it was preempted,
 * e.g. by the writer thread on a machine with few cores, left out) */
__attribute__((noinline)) static double loop_pushpop_cpu(double *cpu)
{
    double c0 = cpu_now(), t0 = now();
    for (long i = 0; i < N; i++) {
        tally_push(&loc);
        __asm__ __volatile__("" ::: "memory");
        tally_pop();
    }
    double t = (now() - t0) / (double)N;
    if (cpu)
        *cpu = (cpu_now() - c0) / (double)N;
    return t;
}

static double loop_pushpop(void)
{
    return loop_pushpop_cpu(NULL);
}

__attribute__((noinline)) static double loop_beginend(void)
{
    double t0 = now();
    for (long i = 0; i < N; i++) {
        tally_range r = tally_begin(&loc);
        __asm__ __volatile__("" ::: "memory");
        tally_end(r);
    }
    return (now() - t0) / (double)N;
}

/* Blocks to allocate from: LIVE stay allocated through the loop, the loop cycles through the
 * next SPAN addresses. */
#define LIVE 10000
#define SPAN 4096
static char blocks[(LIVE + SPAN) * 64];

__attribute__((noinline)) static double loop_allocfree(const char *name, long span)
{
    double t0 = now();
    for (long i = 0; i < N; i++) {
        const char *p = blocks + (LIVE + (i & (span - 1))) * 64;
        tally_alloc(p, 256, 0, TALLY_MEM_ACTIVATION, name);
        __asm__ __volatile__("" ::: "memory");
        tally_free(p);
    }
    return (now() - t0) / (double)N;
}

static pthread_barrier_t bar;
static double thread_result[2], thread_cpu[2];

static void *thread_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    tally_push(&loc); /* first use: thread state and buffer, outside the timing */
    tally_pop();
    pthread_barrier_wait(&bar);
    thread_result[id] = loop_pushpop_cpu(&thread_cpu[id]);
    return NULL;
}

static double two_threads(double *cpu)
{
    pthread_t th[2];
    pthread_barrier_init(&bar, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    *cpu = (thread_cpu[0] + thread_cpu[1]) / 2;
    return (thread_result[0] + thread_result[1]) / 2;
}

static long long file_bytes, file_records;

static void on_ready(const tally_window *w, void *u)
{
    (void)u;
    struct stat st;
    if (stat(w->path, &st) == 0) {
        file_bytes += st.st_size;
        file_records += (long long)w->records;
    }
    unlink(w->path);
}

static void start(int closed)
{
    tally_config c = bench_config(dir, "bench", on_ready);
    c.memory_cap = (size_t)512 << 20;
    if (closed) { /* step 0 is in the "wait" part of the schedule: nothing recorded */
        c.wait = 1000;
        c.active = 1;
        c.repeat = 1;
    }
    if (tally_start(&c) != 0) {
        fprintf(stderr, "bench_overhead: tally_start failed\n");
        exit(1);
    }
}

typedef struct stat3 {
    double med, min, max;
} stat3;

static stat3 summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    stat3 s = {v[n / 2], v[0], v[n - 1]};
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        N = atol(argv[1]);
    if (argc > 2)
        ROUNDS = atoi(argv[2]);
    if (N < 1000 || ROUNDS < 1 || ROUNDS > 100) {
        fprintf(stderr, "usage: bench_overhead [pairs_per_round >= 1000] [rounds 1..100]\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "/tmp/tally-bench-overhead-%d", (int)getpid());
    mkdir(dir, 0755);

    double tsc2[100], pp[100], pp2[100], be[100], off[100], before[100], ppc[100], pp2c[100];
    double af[100], afn[100], afoff[100], afhot[100];
    for (int i = 0; i < LIVE; i++)
        tally_alloc(blocks + (size_t)i * 64, 64, 0, TALLY_MEM_PARAMETER, NULL);
    for (int r = 0; r < ROUNDS; r++) {
        tsc2[r] = loop_tsc2();
        before[r] = loop_pushpop() / 2;

        start(0);
        loop_pushpop(); /* warm: buffers touched, thread state made */
        pp[r] = loop_pushpop_cpu(&ppc[r]);
        pp2[r] = two_threads(&pp2c[r]);
        be[r] = loop_beginend();
        af[r] = loop_allocfree(NULL, SPAN);
        afn[r] = loop_allocfree("layers.0.mlp.act", SPAN);
        afhot[r] = loop_allocfree(NULL, 16);
        tally_stop();

        start(1);
        off[r] = loop_pushpop() / 2;
        afoff[r] = loop_allocfree(NULL, SPAN);
        tally_stop();
    }
    stat3 a = summarize(tsc2, ROUNDS), b = summarize(pp, ROUNDS), c = summarize(pp2, ROUNDS);
    stat3 d = summarize(be, ROUNDS), e = summarize(off, ROUNDS), f = summarize(before, ROUNDS);
    stat3 g = summarize(ppc, ROUNDS), h = summarize(pp2c, ROUNDS);
    stat3 k = summarize(af, ROUNDS), l = summarize(afn, ROUNDS), m = summarize(afoff, ROUNDS);
    stat3 o = summarize(afhot, ROUNDS);
    printf("bench_overhead: %ld pairs x %d rounds, medians [min-max], ns\n", N, ROUNDS);
    printf("  %-28s %7.2f [%.2f-%.2f]\n", "two TSC reads (pair floor)", a.med, a.min, a.max);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx tsc2 (target <= 1.5x)\n", "push+pop, 1 thread", b.med,
           b.min, b.max, b.med / a.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %+.1f%% vs 1 thread (target within 10%%)\n",
           "push+pop, 2 threads", c.med, c.min, c.max, 100.0 * (c.med - b.med) / b.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   thread CPU time per pair\n", "push+pop, 1 thread, CPU",
           g.med, g.min, g.max);
    printf("  %-28s %7.2f [%.2f-%.2f]   %+.1f%% vs 1 thread, CPU time\n",
           "push+pop, 2 threads, CPU", h.med, h.min, h.max, 100.0 * (h.med - g.med) / g.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx tsc2\n", "begin+end (handles)", d.med, d.min, d.max,
           d.med / a.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx push+pop (target <= 2x)\n", "alloc+free", k.med,
           k.min, k.max, k.med / b.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx push+pop\n", "alloc+free, named", l.med, l.min, l.max,
           l.med / b.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx push+pop\n", "alloc+free, 16 addresses", o.med, o.min,
           o.max, o.med / b.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   %.2fx push+pop (the live table alone)\n",
           "alloc+free, window closed", m.med, m.min, m.max, m.med / b.med);
    printf("  %-28s %7.2f [%.2f-%.2f]   per call (target <= 2)\n", "call, window closed", e.med,
           e.min, e.max);
    printf("  %-28s %7.2f [%.2f-%.2f]   per call (counted)\n", "call, before start", f.med, f.min,
           f.max);
    printf("  %-28s %7zu\n", "bytes per record", sizeof(tally__rec));
    if (file_records)
        printf("  %-28s %7.2f   (%lld records, %lld bytes, incl. headers)\n",
               "file bytes per record", (double)file_bytes / (double)file_records, file_records,
               file_bytes);
    for (int i = 0; i < LIVE; i++)
        tally_free(blocks + (size_t)i * 64);
    rmdir(dir);
    return 0;
}
