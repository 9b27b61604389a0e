#!/usr/bin/env bash
# static_inject.sh — a statically linked program that uses NVTX, with NVTX_INJECTION64_PATH
# pointing at libtally (as `tally run` sets it, or a parent's environment passes it on): NVTX
# dlopens libtally into a program whose C library cannot start its threads. libtally declines
# with one line on stderr, and the program runs normally (it used to crash with SIGSEGV).
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
: "${LIBTALLY:?}"
if ! have_nvtx; then
    echo "skipped: no nvtx3 headers (CUDA_INC unset)"
    exit 77
fi
if [ -n "$SAN" ]; then # a sanitizer's runtime cannot be preloaded into a static program
    echo "skipped: a sanitized libtally cannot be injected into a static program ($SAN)"
    exit 77
fi
cat >"$W/snv.c" <<'C'
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
int main(void)
{
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("step");
        nvtxRangePop();
    }
    printf("static done\n");
    return 7;
}
C
if ! cc -static -std=c11 -I"$CUDA_INC" -o "$W/snv" "$W/snv.c" -ldl 2>"$W/cc.err"; then
    echo "skipped: cannot link a static program here: $(tail -1 "$W/cc.err")"
    exit 77
fi
mkdir "$W/out"
set +e
NVTX_INJECTION64_PATH="$LIBTALLY" TALLY_OUTPUT_DIR="$W/out" "$W/snv" >"$W/out.txt" 2>"$W/err.txt"
st=$?
set -e
[ "$st" = 7 ] || { echo "static_inject: exit $st, expected the program's 7: $(cat "$W/err.txt")"; exit 1; }
grep -qx "static done" "$W/out.txt" || { echo "static_inject: the program's output is missing"; exit 1; }
grep -q "statically linked" "$W/err.txt" || { echo "static_inject: no message: $(cat "$W/err.txt")"; exit 1; }
[ -z "$(ls "$W/out")" ] || { echo "static_inject: files written: $(ls "$W/out")"; exit 1; }
echo "static_inject: ok"
