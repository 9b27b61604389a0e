/*
 * bench_workload.c — what profiling costs the built-in workload: the same model, the same
 * batches, run unprofiled and profiled in one process, in interleaved rounds.
 *
 * Each round runs --steps-per-round steps without a session and the same steps (same data
 * indices) inside a tally session, the order of the two alternating from round to round so
 * that drift (other load, frequency) falls on both alike. Every step is timed on its own;
 * the figures are the median step time of each mode and their ratio, and the median over rounds
 * of each round's own ratio (paired, so load that comes and goes between rounds cancels). The
 * session writes only the .tally file (no JSON, no summary) to a temporary directory, removed at
 * the end; starting and stopping it is outside the timed steps.
 *
 *   bench_workload [--rounds 7] [--steps-per-round 2] [model options]
 */
#include "llama.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally.h>

#define MAX_FILES 64

static char *files[MAX_FILES];
static int nfiles;

static void on_ready(const tally_window *w, void *user)
{
    (void)user;
    if (nfiles < MAX_FILES && w->path)
        files[nfiles++] = strdup(w->path);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int run_round(llama_model *m, int profiled, int steps, const char *dir, double *times,
                     uint64_t *records)
{
    if (profiled) {
        tally_config tc;
        memset(&tc, 0, sizeof tc);
        tc.output_dir = dir;
        tc.name = "bench-workload-{pid}-{time}";
        tc.write = TALLY_WRITE_TALLY;
        tc.quiet = 1;
        tc.samples_unit = "tokens";
        tc.on_trace_ready = on_ready;
        int rc = tally_start(&tc);
        if (rc != 0) {
            fprintf(stderr, "bench_workload: tally_start: %s\n", tally_strerror(rc));
            return -1;
        }
    }
    for (int i = 0; i < steps; i++) {
        double t0 = now_s();
        llama_step(m, i);
        times[i] = now_s() - t0;
    }
    if (profiled) {
        tally_stop();
        tally_stats st; /* the session's counts, complete once it stopped */
        tally_get_stats(&st);
        *records += st.records;
    }
    return 0;
}

/* ns per push+pop pair in a tight loop inside a session, with a shape argument like the
 * workload's operator ranges (the dearer kind): what one recorded range costs here. */
static double pair_cost_ns(const char *dir)
{
    enum { PAIRS = 200000 };
    tally_config tc;
    memset(&tc, 0, sizeof tc);
    tc.output_dir = dir;
    tc.name = "bench-workload-pairs-{pid}";
    tc.write = TALLY_WRITE_TALLY;
    tc.quiet = 1;
    tc.on_trace_ready = on_ready;
    if (tally_start(&tc) != 0)
        return -1;
    double t0 = now_s();
    for (int i = 0; i < PAIRS; i++) {
        TALLY_PUSH_ARG("pair", TALLY_OPERATOR, "[[4, 128, 256], [704, 256]]");
        __asm__ __volatile__("" ::: "memory");
        TALLY_POP();
    }
    double dt = now_s() - t0;
    tally_stop();
    return 1e9 * dt / PAIRS;
}

int main(int argc, char **argv)
{
    llama_config cfg;
    llama_config_default(&cfg);
    int rounds = 7, per = 2;
    char err[200];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: bench_workload [--rounds N] [--steps-per-round N] [model options]\n");
            llama_options_help(stdout, NULL, 1);
            return 0;
        }
        if ((!strcmp(argv[i], "--rounds") || !strcmp(argv[i], "--steps-per-round")) &&
            i + 1 < argc) {
            int v = atoi(argv[i + 1]);
            if (v < 1) {
                fprintf(stderr, "bench_workload: %s: expected a positive count\n", argv[i]);
                return 2;
            }
            *(argv[i][2] == 'r' ? &rounds : &per) = v;
            i++;
            continue;
        }
        int r = llama_parse_option(&cfg, argc, argv, &i, err, sizeof err);
        if (r <= 0) {
            fprintf(stderr, "bench_workload: %s\n", r < 0 ? err : "unknown option");
            return 2;
        }
    }
    char dir[] = "/tmp/tally-bench-workload-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_workload: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    llama_model *m = llama_create(&cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "bench_workload: %s\n", err);
        return 1;
    }
    llama_step(m, -1); /* warm-up */

    int n = rounds * per;
    double *plain = calloc((size_t)n, sizeof *plain), *prof = calloc((size_t)n, sizeof *prof);
    uint64_t records = 0;
    if (!plain || !prof)
        return 1;
    for (int r = 0; r < rounds; r++) {
        int first = r % 2; /* which mode goes first this round */
        for (int k = 0; k < 2; k++) {
            int profiled = k == 0 ? first : !first;
            if (run_round(m, profiled, per, dir, (profiled ? prof : plain) + r * per, &records))
                return 1;
        }
        fprintf(stderr, "round %d/%d: unprofiled", r + 1, rounds);
        for (int i = 0; i < per; i++)
            fprintf(stderr, " %.1f", 1e3 * plain[r * per + i]);
        fprintf(stderr, " ms, profiled");
        for (int i = 0; i < per; i++)
            fprintf(stderr, " %.1f", 1e3 * prof[r * per + i]);
        fprintf(stderr, " ms\n");
    }
    double sum_plain = 0, sum_prof = 0, min_plain = 1e30, min_prof = 1e30;
    for (int i = 0; i < n; i++) {
        sum_plain += plain[i], sum_prof += prof[i];
        min_plain = plain[i] < min_plain ? plain[i] : min_plain;
        min_prof = prof[i] < min_prof ? prof[i] : min_prof;
    }
    /* paired: each round's profiled steps against its own unprofiled ones, which ran next to
     * them in time — less sensitive to load that comes and goes than the overall medians */
    double *pair = calloc((size_t)rounds, sizeof *pair), *tmp = calloc((size_t)per, sizeof *tmp);
    if (!pair || !tmp)
        return 1;
    for (int r = 0; r < rounds; r++) {
        memcpy(tmp, plain + r * per, (size_t)per * sizeof *tmp);
        double a = median(tmp, per);
        memcpy(tmp, prof + r * per, (size_t)per * sizeof *tmp);
        pair[r] = median(tmp, per) / a - 1.0;
    }
    double mpair = median(pair, rounds);
    double mp = median(plain, n), mq = median(prof, n);
    printf("workload: %d layers, dim %d, ffn %d, vocab %d, %d x %d tokens/step, %d threads, "
           "rmsnorm %s\n",
           cfg.layers, cfg.dim, cfg.ffn, cfg.vocab, cfg.batch, cfg.seq,
           llama_get_config(m)->threads, llama_rmsnorm_name(cfg.rmsnorm));
    printf("rounds %d x %d steps per mode, interleaved\n", rounds, per);
    printf("%-12s %12s %12s %12s\n", "mode", "median_ms", "mean_ms", "min_ms");
    printf("%-12s %12.3f %12.3f %12.3f\n", "unprofiled", 1e3 * mp, 1e3 * sum_plain / n,
           1e3 * min_plain);
    printf("%-12s %12.3f %12.3f %12.3f\n", "profiled", 1e3 * mq, 1e3 * sum_prof / n,
           1e3 * min_prof);
    printf("records per profiled step: %.0f\n", (double)records / n);
    double pair_ns = pair_cost_ns(dir), per_step = (double)records / n;
    printf("push_arg+pop pair while recording (shape argument): %.1f ns\n", pair_ns);
    printf("estimated cost of the records: %.0f pairs/step x %.1f ns = %.1f us/step = %.4f%%\n",
           per_step / 2, pair_ns, per_step / 2 * pair_ns * 1e-3,
           100.0 * per_step / 2 * pair_ns * 1e-9 / mp);
    printf("overhead, medians: profiled / unprofiled - 1 = %+.2f%%\n", 100.0 * (mq / mp - 1.0));
    printf("overhead, paired:  median over rounds of (profiled / unprofiled - 1) = %+.2f%%  "
           "(target <= 3%%)\n",
           100.0 * mpair);

    for (int i = 0; i < nfiles; i++) {
        unlink(files[i]);
        free(files[i]);
    }
    rmdir(dir);
    free(plain);
    free(prof);
    free(pair);
    free(tmp);
    llama_free(m);
    return 0;
}
