/*
 * nvtx_steps_app.c — an unmodified NVTX program with a training-loop shape: 6 iterations, each
 * an NVTX range "train_step" holding a range "forward" and a mark "iter<i>" (nvtx_steps.sh).
 */
#define _DEFAULT_SOURCE
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <unistd.h>

int main(void)
{
    for (int i = 0; i < 6; i++) {
        char mark[16];
        snprintf(mark, sizeof mark, "iter%d", i);
        nvtxRangePushA("train_step");
        nvtxRangePushA("forward");
        nvtxMarkA(mark);
        usleep(2000);
        nvtxRangePop();
        nvtxRangePop();
    }
    puts("steps done");
    return 0;
}
