#!/usr/bin/env bash
# run_nodriver.sh — a CUDA program on a machine without a driver, under `tally run` (which sets
# CUDA_INJECTION64_PATH): the program calls cuInit through the toolkit's stub libcuda (which
# fails the way a missing driver does) and goes on; it runs normally, its output and exit
# status unchanged, and tally says once that there is no driver.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
if [ -z "${CUDA_INC:-}" ] || [ ! -f "$CUDA_INC/cuda.h" ]; then
    echo "skipped: no CUDA headers"
    exit 77
fi
if grep -q 'libcuda\.so\.1' <<<"$(ldconfig -p 2>/dev/null)"; then
    echo "skipped: a CUDA driver is installed here"
    exit 77
fi
stubdir=$(cd "$CUDA_INC/.." && pwd)/lib64/stubs
cat > "$W/prog.c" <<'C'
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        h = dlopen("libcuda.so", RTLD_NOW);
    if (!h) {
        printf("no libcuda: running on the CPU\n");
        return 5;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult r = init ? init(0) : CUDA_ERROR_UNKNOWN;
    printf("cuInit returned %d: running on the CPU\n", (int)r);
    return 5;
}
C
cc -std=c11 -I"$CUDA_INC" -o "$W/prog" "$W/prog.c" -ldl
set +e
plain=$(LD_LIBRARY_PATH="$stubdir" "$W/prog")
prc=$?
got=$(LD_LIBRARY_PATH="$stubdir" "$TALLY" run -o "$W/o" -- "$W/prog" 2> "$W/err")
rc=$?
set -e
[ $rc = $prc ] || { echo "status $rc, expected $prc"; cat "$W/err"; exit 1; }
[ "$got" = "$plain" ] || { echo "output changed: '$got' vs '$plain'"; exit 1; }
[ "$(grep -c "no CUDA driver" "$W/err")" = 1 ] || { echo "expected one no-driver line"; cat "$W/err"; exit 1; }
echo "run_nodriver: ok"
