/*
 * prog_export_losses.c — a trace with everything a .tally file holds beyond its events, for
 * tests/integration/export_tally_lossless.sh: tally_alloc/tally_free with categories and names,
 * a block allocated before the window opens (a LIVE record), tally_label_memory of a block
 * another allocator made, host memory and device memory, a free of an unknown address and an
 * allocation at a live address (memory losses), a pop with nothing pushed (a bad pop), a range
 * left open at tally_stop, steps with sample counts in "tokens", and a counter and a mark with
 * their call sites. 2 windows would be two files: one window, all steps.
 *
 * usage: prog_export_losses OUTDIR
 */
#include <tally.h>

#include <stdio.h>

static void spin(long n)
{
    volatile long x = 0;
    for (long i = 0; i < n; i++)
        x += i;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_export_losses OUTDIR\n");
        return 2;
    }
    static char blocks[16][64];
    /* before recording: in every window as a block live at its start */
    tally_alloc(blocks[0], 4096, 0, TALLY_MEM_PARAMETER, "layer.0.weight");
    tally_config cfg = {0};
    cfg.output_dir = argv[1];
    cfg.name = "losses";
    cfg.write = TALLY_WRITE_TALLY;
    cfg.quiet = 1;
    cfg.samples_unit = "tokens";
    if (tally_start(&cfg) != 0)
        return 1;
    tally_label_memory(blocks[1], 2048, -1, TALLY_MEM_INPUT, "batch.tokens");
    for (int s = 0; s < 3; s++) {
        TALLY_PUSH("forward", TALLY_FORWARD);
        tally_alloc(blocks[2 + s], 1000 + 100 * s, 0, TALLY_MEM_ACTIVATION, "act");
        tally_alloc(blocks[8], 512, -1, TALLY_MEM_TEMPORARY, NULL);
        spin(200000);
        tally_free(blocks[8]);
        TALLY_POP();
        TALLY_PUSH("backward", TALLY_BACKWARD);
        tally_alloc(blocks[10 + s], 700, 0, TALLY_MEM_GRADIENT, "layer.0.weight.grad");
        tally_free(blocks[2 + s]);
        spin(300000);
        TALLY_POP();
        TALLY_MARK("step_done");
        TALLY_COUNTER("loss", 2.5 - s);
        tally_step(128 * (uint64_t)(s + 1));
    }
    tally_free(blocks[15]);                                       /* never allocated */
    tally_alloc(blocks[10], 700, 0, TALLY_MEM_GRADIENT, "again"); /* still live */
    tally_pop();                                                  /* nothing pushed */
    TALLY_PUSH("left_open", TALLY_USER);
    spin(100000);
    return tally_stop() != 0;
}
