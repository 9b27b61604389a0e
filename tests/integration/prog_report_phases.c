/*
 * prog_report_phases.c — a training loop whose phase durations are known by construction, for
 * tests/integration/report_phases.sh. Busy-waits (not sleeps) of fixed length in ranges of
 * each category:
 *
 *   per step (4 steps, tally_step(16)):
 *     dataloader 2 ms | forward 6 ms (a nested forward of 3 ms holding a user range "attn" of
 *     2 ms) | backward 8 ms | optimizer 3 ms | 1 ms outside any phase
 *
 * usage: prog_report_phases OUTDIR
 */
#include <tally.h>

#include <stdio.h>
#include <time.h>

static void spin_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &b);
        double d = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        if (d >= ms)
            return;
    }
}

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
    if (tally_start(&cfg) != 0)
        return 1;
    for (int s = 0; s < 4; s++) {
        TALLY_SCOPE("load", TALLY_DATALOADER) spin_ms(2);
        TALLY_SCOPE("forward", TALLY_FORWARD)
        {
            spin_ms(1.5);
            TALLY_SCOPE("block", TALLY_FORWARD)
            {
                spin_ms(0.5);
                TALLY_SCOPE("attn", TALLY_USER) spin_ms(2);
                spin_ms(0.5);
            }
            spin_ms(1.5);
        }
        TALLY_SCOPE("backward", TALLY_BACKWARD) spin_ms(8);
        TALLY_SCOPE("sgd", TALLY_OPTIMIZER) spin_ms(3);
        spin_ms(1);
        tally_step(16);
    }
    return tally_stop() == 0 ? 0 : 1;
}
