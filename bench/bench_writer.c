/*
 * bench_writer.c — what the end of recording costs the program, and whether the writer keeps up.
 *
 * Prints, as medians over rounds (each round a fresh session writing a fresh file to --dir,
 * after a sync so that the page cache starts clean):
 *   stop        one thread records N push/pop pairs at full speed (default 5 M), then calls
 *               tally_stop: the time tally_stop takes (the writer catching up and closing the
 *               file; nothing is read back) and how much the process's peak RSS grew during it
 *   window      the same under a schedule that closes a window (and opens the next) at every
 *               step of 1 M pairs: the time of the tally_step calls that close a window
 *   push_arg    two threads each record M push_arg/pop pairs (a 27-byte shape string, like
 *               PyTorch's "[[128, 4096], [4096, 4096]]") at full speed at the default memory cap:
 *               records dropped, and the rate the program produced trace bytes at
 * and, for reference, the time of two TSC reads and of a push+pop pair on this machine.
 *
 *   bench_writer [--pairs N] [--arg-pairs M] [--rounds R] [--dir DIR]
 */
#include <tally.h>

#include "bench_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long N = 5000000, M = 8000000;
static int ROUNDS = 5;
static char dir[512] = "/tmp/tally-bench-writer";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static const tally_srcloc loc = {"range", __FILE__, "bench", __LINE__, TALLY_USER};
static const tally_srcloc op = {"aten::mm", __FILE__, "bench", __LINE__, TALLY_OPERATOR};

static uint64_t last_window_bytes;
static void on_ready(const tally_window *w, void *u)
{
    (void)u;
    struct stat st;
    if (stat(w->path, &st) == 0)
        last_window_bytes += (uint64_t)st.st_size;
    unlink(w->path);
}

static void start(int per_step_windows)
{
    sync(); /* the page cache starts each round with nothing to write back */
    tally_config c = bench_config(dir, "bench", on_ready);
    if (per_step_windows) { /* every step is a window of its own */
        c.active = 1;
        c.repeat = 0;
    }
    if (tally_start(&c) != 0) {
        fprintf(stderr, "bench_writer: tally_start failed\n");
        exit(1);
    }
}

#define median bench_median

static void *arg_thread(void *p)
{
    (void)p;
    for (long i = 0; i < M; i++) {
        tally_push_arg(&op, "[[128, 4096], [4096, 4096]]");
        tally_pop();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            N = atol(argv[++i]);
        else if (!strcmp(argv[i], "--arg-pairs") && i + 1 < argc)
            M = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            ROUNDS = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            snprintf(dir, sizeof dir, "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: bench_writer [--pairs N] [--arg-pairs M] [--rounds R] "
                            "[--dir DIR]\n");
            return 2;
        }
    }
    if (N < 1000 || M < 1000 || ROUNDS < 1 || ROUNDS > 100) {
        fprintf(stderr, "bench_writer: --pairs and --arg-pairs >= 1000, --rounds 1..100\n");
        return 2;
    }
    mkdir(dir, 0755);
    double stop_ms[100], rss_mb[100], rec_s[100], win_ms[100], win_max[100], drop_pct[100],
        arg_s[100], arg_mbs[100], pair_ns[100];
    for (int r = 0; r < ROUNDS; r++) {
        /* stop after N pairs */
        start(0);
        double t0 = now();
        for (long i = 0; i < N; i++) {
            tally_push(&loc);
            tally_pop();
        }
        double t1 = now();
        long rss0 = peak_rss_kb();
        tally_stop();
        double t2 = now();
        rec_s[r] = t1 - t0;
        pair_ns[r] = (t1 - t0) * 1e9 / (double)N;
        stop_ms[r] = (t2 - t1) * 1e3;
        rss_mb[r] = (double)(peak_rss_kb() - rss0) / 1024.0;

        /* windows closing at every step */
        start(1);
        double worst = 0, closes[64];
        int nc = 0;
        for (int s = 0; s < 6; s++) {
            for (long i = 0; i < 1000000; i++) {
                tally_push(&loc);
                tally_pop();
            }
            double a = now();
            tally_step(1);
            double d = (now() - a) * 1e3;
            if (s > 0 && nc < 64) /* step 0 opens the first window: every later step closes one */
                closes[nc++] = d;
            if (d > worst)
                worst = d;
        }
        tally_stop();
        win_ms[r] = median(closes, nc);
        win_max[r] = worst;

        /* two threads of push_arg at full speed */
        start(0);
        last_window_bytes = 0;
        pthread_t th[2];
        double a0 = now();
        for (int k = 0; k < 2; k++)
            pthread_create(&th[k], NULL, arg_thread, NULL);
        for (int k = 0; k < 2; k++)
            pthread_join(th[k], NULL);
        double a1 = now();
        tally_stop();
        tally_stats st;
        tally_get_stats(&st);
        drop_pct[r] = 100.0 * (double)st.dropped / (double)(st.records + st.dropped);
        arg_s[r] = a1 - a0;
        arg_mbs[r] = (double)last_window_bytes / 1e6 / (a1 - a0);
        fprintf(stderr,
                "round %d: stop %.1f ms, rss +%.1f MB, window close %.1f ms, push_arg "
                "drops %.2f%% (%llu of %llu)\n",
                r + 1, stop_ms[r], rss_mb[r], win_ms[r], drop_pct[r],
                (unsigned long long)st.dropped, (unsigned long long)(st.records + st.dropped));
    }
    rmdir(dir);
    printf("bench_writer: %d rounds, medians\n", ROUNDS);
    printf("  %-44s %9.3f s   (%.1f ns a pair)\n", "record N pairs, 1 thread",
           median(rec_s, ROUNDS), median(pair_ns, ROUNDS));
    printf("  %-44s %9.1f ms  (target <= 50)\n", "tally_stop after them", median(stop_ms, ROUNDS));
    printf("  %-44s %9.1f MB  (target <= 16)\n", "peak RSS growth during tally_stop",
           median(rss_mb, ROUNDS));
    printf("  %-44s %9.1f ms  (worst %.1f)\n", "tally_step that closes a window (1 M pairs)",
           median(win_ms, ROUNDS), median(win_max, ROUNDS));
    printf("  %-44s %9.3f s   (%.0f MB/s of trace)\n", "2 threads x M push_arg pairs",
           median(arg_s, ROUNDS), median(arg_mbs, ROUNDS));
    printf("  %-44s %9.2f %%   (target 0)\n", "records dropped at the default cap",
           median(drop_pct, ROUNDS));
    printf("  (N = %ld pairs, M = %ld pairs a thread)\n", N, M);
    return 0;
}
