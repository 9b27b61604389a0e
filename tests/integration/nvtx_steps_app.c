/*
 * nvtx_steps_app.c — an unmodified NVTX program with a training-loop shape: 6 iterations, each
 * an NVTX range "train_step" holding a range "forward" and a mark "iter<i>" (nvtx_steps.sh).
 * With an argument, it first marks "startup" (its first NVTX call, which starts an injected
 * session) and sleeps that many ms, as a program's start-up (imports, model building, a library
 * using NVTX) would: no step holds that time (steps_agree.sh).
 */
#define _DEFAULT_SOURCE
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc > 1) {
        nvtxMarkA("startup");
        usleep((useconds_t)atoi(argv[1]) * 1000);
    }
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
