/*
 * prog_nvtx_linked.c — a program linked with tally that also uses NVTX (nvtx_linked.sh): its
 * own tally ranges and its NVTX ranges land in one trace, nested as they ran, without
 * `tally run` (tally_start points NVTX at the linked libtally).
 *
 *   prog_nvtx_linked OUTDIR
 */
#include <stdio.h>
#include <tally.h>

#ifdef TALLY_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_nvtx_linked OUTDIR\n");
        return 2;
    }
    tally_config cfg = {0};
    cfg.output_dir = argv[1];
    cfg.quiet = 1;
    cfg.write = TALLY_WRITE_TALLY;
    if (tally_start(&cfg) != 0) {
        fprintf(stderr, "prog_nvtx_linked: tally_start failed\n");
        return 1;
    }
    TALLY_SCOPE("tally outer", TALLY_FORWARD)
    {
        nvtxRangePushA("nvtx inside");
        TALLY_SCOPE("tally innermost", TALLY_USER)
        {
            nvtxMarkA("nvtx mark");
        }
        nvtxRangePop();
    }
    nvtxRangePushA("aten::add, seq = 1, op_id = 2, sizes = [[4], [4]]");
    nvtxRangePop();
    tally_stop();
    puts("linked done");
    return 0;
}
#else
int main(void)
{
    puts("skipped: built without nvtx3 headers");
    return 0;
}
#endif
