/* nvtx_other.c — a shared library with its own NVTX copy (built by nvtx_inject.sh). */
#include <nvtx3/nvToolsExt.h>

int nvtx_other_work(void)
{
    int level = nvtxRangePushA("libother: work");
    nvtxMarkA("libother: mark");
    nvtxRangePop();
    return level;
}
