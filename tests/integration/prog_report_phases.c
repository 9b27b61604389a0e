/*
 * prog_report_phases.c — a training loop whose phase durations are known by construction, for
 * tests/integration/report_phases.sh. Busy-waits (not sleeps) of fixed length in ranges of
 * each category:
 *
 *   per step (4 steps, tally_step(16)):
 *     dataloader 2 ms | forward 6 ms (a nested forward of 3 ms holding a user range "attn" of
 *     2 ms) | backward 8 ms | optimizer 3 ms | 1 ms outside any phase
 *
 * The program also measures every phase with its own clock (CLOCK_MONOTONIC), independently of
 * tally: once inside the range (a lower bound of what tally must report) and once around it (an
 * upper bound), and writes the bounds to OUTDIR/expected.json. A preempted busy-wait widens
 * nothing: both bounds see the preemption, so the test can be tight on a loaded machine.
 *
 * usage: prog_report_phases OUTDIR
 */
#include <tally.h>

#include <stdio.h>
#include <time.h>

#define STEPS 4

enum { P_LOAD, P_FWD, P_BWD, P_OPT, P_ATTN, P_STEP, NPHASES };
static const char *const phase_key[NPHASES] = {"dataloader",   "forward", "backward",
                                               "optimization", "attn",    "step"};

static double lo[STEPS][NPHASES], hi[STEPS][NPHASES];

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void spin_ms(double ms)
{
    double a = now_us();
    while (now_us() - a < ms * 1e3) {
    }
}

/* Runs `body` in a range; records the inner (lo) and outer (hi) duration of phase p. */
#define PHASE(s, p, name, cat, body)                                                               \
    do {                                                                                           \
        double o0_ = now_us(), i0_ = 0, i1_ = 0;                                                   \
        TALLY_SCOPE(name, cat)                                                                     \
        {                                                                                          \
            i0_ = now_us();                                                                        \
            body;                                                                                  \
            i1_ = now_us();                                                                        \
        }                                                                                          \
        double o1_ = now_us();                                                                     \
        lo[s][p] = i1_ - i0_;                                                                      \
        hi[s][p] = o1_ - o0_;                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    tally_config cfg = {0};
    cfg.output_dir = argv[1];
    cfg.name = "phases";
    cfg.write = TALLY_WRITE_TALLY | TALLY_WRITE_JSON | TALLY_WRITE_SUMMARY;
    /* step s runs from the end of the previous tally_step (or tally_start) to its tally_step */
    double prev_in = now_us();
    if (tally_start(&cfg) != 0)
        return 1;
    double prev_out = now_us();
    for (int s = 0; s < STEPS; s++) {
        PHASE(s, P_LOAD, "load", TALLY_DATALOADER, spin_ms(2));
        PHASE(s, P_FWD, "forward", TALLY_FORWARD, {
            spin_ms(1.5);
            TALLY_SCOPE("block", TALLY_FORWARD)
            {
                spin_ms(0.5);
                PHASE(s, P_ATTN, "attn", TALLY_USER, spin_ms(2));
                spin_ms(0.5);
            }
            spin_ms(1.5);
        });
        PHASE(s, P_BWD, "backward", TALLY_BACKWARD, spin_ms(8));
        PHASE(s, P_OPT, "sgd", TALLY_OPTIMIZER, spin_ms(3));
        spin_ms(1);
        double a = now_us();
        tally_step(16);
        double b = now_us();
        lo[s][P_STEP] = a - prev_out;
        hi[s][P_STEP] = b - prev_in;
        prev_in = a;
        prev_out = b;
    }
    int rc = tally_stop() == 0 ? 0 : 1;

    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "[");
    for (int s = 0; s < STEPS; s++) {
        fprintf(f, "%s{", s ? ",\n " : "");
        for (int p = 0; p < NPHASES; p++)
            fprintf(f, "%s\"%s\": [%.3f, %.3f]", p ? ", " : "", phase_key[p], lo[s][p], hi[s][p]);
        fprintf(f, "}");
    }
    fprintf(f, "]\n");
    return fclose(f) == 0 ? rc : 1;
}
