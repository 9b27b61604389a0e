/*
 * llama_main.c — tally-llama: the built-in workload as a program of its own, linked to
 * libtally. It profiles itself (tally_start with the TALLY_* environment on top of its own
 * settings: samples in tokens, the warm-up steps skipped by the schedule) unless --no-profile is
 * given, and prints its throughput on stderr; tally_stop's
 * default handler writes the trace and prints the summary.
 *
 *   tally-llama [--no-profile] [--rmsnorm unfused|fused] [--steps N] [model options]
 *   TALLY_OUTPUT_DIR=out TALLY_SCHEDULE="wait=1,warmup=1,active=3" tally-llama --steps 8
 *
 * Built with -DTALLY_DISABLE, every tally call compiles away and it is the plain workload.
 */
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tally.h>

static void usage(FILE *f)
{
    fputs("usage: tally-llama [--no-profile] [--warmup N] [model options]\n\n"
          "The built-in Llama-style workload of tally, profiled by tally (settings from the\n"
          "TALLY_* environment: TALLY_OUTPUT_DIR, TALLY_SCHEDULE, TALLY_WRITE, ...).\n\n"
          "options:\n"
          "  --no-profile           run without starting a tally session\n"
          "  --warmup N             warm-up steps, not recorded (default 1)\n",
          f);
    llama_options_help(f, NULL, 1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    llama_config cfg;
    llama_config_default(&cfg);
    int profile = 1, warmup = 1;
    char err[200];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--no-profile")) {
            profile = 0;
            continue;
        }
        if (!strcmp(argv[i], "--warmup")) {
            char *end;
            if (i + 1 >= argc || (warmup = (int)strtol(argv[i + 1], &end, 10)) < 0 || *end) {
                fprintf(stderr, "tally-llama: --warmup: expected a count\n");
                return 2;
            }
            i++;
            continue;
        }
        int r = llama_parse_option(&cfg, argc, argv, &i, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "tally-llama: %s\n", err);
            return 2;
        }
        if (r == 0) {
            fprintf(stderr, "tally-llama: unknown option '%s'; --help lists them\n", argv[i]);
            return 2;
        }
    }
    llama_model *m = llama_create(&cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tally-llama: %s\n", err);
        return 1;
    }
    fprintf(stderr, "tally-llama: %zu parameters, %d threads, rmsnorm %s, %d x %d tokens/step\n",
            llama_param_count(m), llama_get_config(m)->threads, llama_rmsnorm_name(cfg.rmsnorm),
            cfg.batch, cfg.seq);
#ifndef TALLY_DISABLE
    if (profile) {
        tally_config tc;
        memset(&tc, 0, sizeof tc);
        tc.samples_unit = "tokens";
        if (warmup > 0) { /* warm-up steps inside the session, not recorded */
            tc.skip_first = warmup;
            tc.active = cfg.steps;
            tc.repeat = 1;
        }
        int rc = tally_start(&tc);
        if (rc != 0)
            fprintf(stderr, "tally-llama: not profiling: %s\n", tally_strerror(rc));
    }
#else
    (void)profile;
#endif
    for (int i = 0; i < warmup; i++)
        llama_step(m, -1 - i);

    double t0 = now_s();
    float loss = 0;
    for (int i = 0; i < cfg.steps; i++)
        loss = llama_step(m, i);
    double dt = now_s() - t0;
    fprintf(stderr, "tally-llama: %d steps in %.3f s: %.1f ms/step, %.0f tokens/s, loss %.4f\n",
            cfg.steps, dt, 1e3 * dt / cfg.steps, (double)cfg.steps * cfg.batch * cfg.seq / dt,
            loss);
#ifndef TALLY_DISABLE
    if (profile && tally_running())
        tally_stop();
#endif
    llama_free(m);
    return 0;
}
