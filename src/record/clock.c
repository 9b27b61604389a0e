/*
 * clock.c — tally's clock. Timestamps on the hot path are raw ticks: TSC cycles where the TSC is
 * invariant (constant rate, keeps counting in deep C-states: cpuid 0x80000007 EDX bit 8, or
 * constant_tsc + nonstop_tsc in /proc/cpuinfo), else CLOCK_MONOTONIC ns. The calibration
 * (a TSC/ns point and the TSC rate measured against CLOCK_MONOTONIC) goes into every .tally file,
 * so the reader converts ticks to ns and the hot path never multiplies.
 *
 * The rate is first measured over a few ms when the first session starts, then refined over the
 * whole session each time a file is closed (a longer baseline, a smaller error).
 */
#include "record/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

tally__clock_t tally__clk;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

int64_t tally__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tally__real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static int cpuinfo_has(const char *flag1, const char *flag2)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[4096];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, flag1) != NULL && strstr(line, flag2) != NULL;
            break;
        }
    }
    fclose(f);
    return ok;
}

static int tsc_invariant(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
        __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
        return 1;
    return cpuinfo_has(" constant_tsc", " nonstop_tsc");
}

/* A (tsc, ns) pair taken as close together as possible: the tightest of a few tries. */
static void sample_pair(uint64_t *tsc, int64_t *ns)
{
    *tsc = 0;
    *ns = 0;
    int64_t best = INT64_MAX;
    for (int i = 0; i < 8; i++) {
        int64_t a = tally__mono_ns();
        uint64_t t = rdtsc();
        int64_t b = tally__mono_ns();
        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *ns = a + (b - a) / 2;
        }
    }
}
#endif

static void clock_init_once(void)
{
    memset(&tally__clk, 0, sizeof tally__clk);
#if defined(__x86_64__) || defined(__i386__)
    if (getenv("TALLY_NO_TSC") == NULL && tsc_invariant()) {
        uint64_t t0 = 0, t1 = 0;
        int64_t n0 = 0, n1 = 0;
        sample_pair(&t0, &n0);
        do {
            sample_pair(&t1, &n1);
        } while (n1 - n0 < 5000000); /* 5 ms */
        double hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
        if (hz > 1e6) {
            tally__clk.tsc0 = t0;
            tally__clk.ns0 = n0;
            tally__clk.tsc_hz = hz;
            tally__clk.ns_per_tick = 1e9 / hz;
            tally__clk.use_tsc = 1;
            return;
        }
    }
#endif
    tally__clk.use_tsc = 0;
    tally__clk.tsc_hz = 1e9;
    tally__clk.ns_per_tick = 1.0;
}

void tally__clock_init(void)
{
    pthread_once(&clock_once, clock_init_once);
}

void tally__clock_refine(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (!tally__clk.use_tsc)
        return;
    uint64_t t1 = 0;
    int64_t n1 = 0;
    sample_pair(&t1, &n1);
    if (n1 - tally__clk.ns0 < 50000000) /* keep the first estimate under 50 ms of baseline */
        return;
    double hz = (double)(t1 - tally__clk.tsc0) * 1e9 / (double)(n1 - tally__clk.ns0);
    if (hz > 1e6) {
        tally__clk.tsc_hz = hz;
        tally__clk.ns_per_tick = 1e9 / hz;
    }
#endif
}

int64_t tally__ticks_to_ns(uint64_t ticks)
{
    if (!tally__clk.use_tsc)
        return (int64_t)ticks;
    return tally__clk.ns0 +
           (int64_t)((double)(int64_t)(ticks - tally__clk.tsc0) * tally__clk.ns_per_tick);
}
