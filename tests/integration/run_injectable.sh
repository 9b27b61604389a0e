#!/usr/bin/env bash
# run_injectable.sh — libtally.so loads the way the CUDA driver loads an injection library
# (dlopen RTLD_NOW: one undefined symbol and the driver silently skips it) and the way NVTX
# does (RTLD_LAZY), and exports both entry points; InitializeInjection returns 1 without a
# driver and the host program goes on.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
need_injection
: "${LIBTALLY:?}"
cat > "$W/load.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    (void)argc;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen RTLD_NOW failed: %s\n", dlerror());
        return 1;
    }
    int (*cuda)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    void *nvtx = dlsym(h, "InitializeInjectionNvtx2");
    if (!cuda || !nvtx) {
        printf("missing entry point: InitializeInjection %p InitializeInjectionNvtx2 %p\n",
               (void *)cuda, nvtx);
        return 1;
    }
    printf("InitializeInjection returned %d\n", cuda());
    return 0;
}
C
cc -std=c11 -o "$W/load" "$W/load.c" -ldl
out=$(TALLY_OUTPUT_DIR="$W/o" TALLY_CUPTI_PATH=/nonexistent/libcupti.so TALLY_QUIET=1 \
    "${SAN_ENV[@]}" "$W/load" "$LIBTALLY" 2> "$W/err") || { echo "$out"; cat "$W/err"; exit 1; }
[ "$out" = "InitializeInjection returned 1" ] || { echo "$out"; exit 1; }
grep -q "CUPTI" "$W/err" || { echo "expected one line about CUPTI"; cat "$W/err"; exit 1; }
echo "run_injectable: ok"
