#!/usr/bin/env bash
# nvtx_inject.sh — an unmodified NVTX program (not linked with tally; two NVTX copies: the
# program and a shared library) run under `tally run`: every range, mark, thread, domain,
# category, payload, wide string, registered string, emit_nvtx operator and the range ended
# on another thread, checked exactly; a timed range checked against its known sleep.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
need_injection
if ! have_nvtx; then
    echo "skipped: no nvtx3 headers (CUDA_INC unset)"
    exit 77
fi
build_dump
cc -std=c11 -O1 -fPIC -shared -I"$CUDA_INC" -o "$W/libnvtxother.so" "$SRC/tests/integration/nvtx_other.c"
cc -std=c11 -O1 -I"$CUDA_INC" -o "$W/nvtx_app" "$SRC/tests/integration/nvtx_app.c" \
    -L"$W" -lnvtxother -Wl,-rpath,"$W" -lpthread

# Without tally the program runs the same and NVTX's calls are no-ops.
"$W/nvtx_app" > "$W/plain.out"
grep -q "nvtx_app done" "$W/plain.out"

"${SAN_ENV[@]}" "$TALLY" run -o "$W/out" --no-gpu -- "$W/nvtx_app" --expect-tool \
    > "$W/run.out" 2> "$W/run.err" || { cat "$W/run.err"; exit 1; }
grep -q "nvtx_app done" "$W/run.out" # the program's stdout is untouched
trace=$(one_trace "$W/out")
case "$trace" in *.tally) ;; *) exit 1 ;; esac
# Chrome traces get TensorBoard's name (when the session writes one)
if grep '\.json\.gz$' <<<"$(ls "$W/out")" | grep -qv '\.pt\.trace\.json\.gz$'; then
    echo "nvtx_inject: a Chrome trace without the .pt.trace.json.gz ending" >&2
    exit 1
fi

"$NVTX_DUMP" "$trace" > "$W/got.txt"
cat > "$W/want.txt" <<'WANT'
main|0|UserDefined|step 0||
main|1|Instant|hello mark||
main|1|Forward|layer1|payload=42|
main|2|Operator|aten::mm|[[2, 3], [3, 4]]|
main|1|UserDefined|load|category=io|
main|1|UserDefined|wide é||
main|1|UserDefined|registered string|domain=my_domain payload=3.5|
main|2|Instant|domain mark||
main|0|UserDefined|cross-thread range||async
main|1|UserDefined|libother: work||
main|2|Instant|libother: mark||
worker1|0|UserDefined|worker1: outer||
worker1|1|UserDefined|worker1: inner||
worker2|0|UserDefined|worker2: job||
worker2|0|UserDefined|worker2: job||
worker2|0|UserDefined|worker2: job||
WANT
if ! diff -u "$W/want.txt" "$W/got.txt"; then
    echo "nvtx_inject: trace differs from the program's ranges" >&2
    exit 1
fi
# aten::mm sleeps 20 ms inside.
dur=$("$NVTX_DUMP" "$trace" --dur aten::mm)
if [ "$dur" -lt 20000000 ] || [ "$dur" -gt 2000000000 ]; then
    echo "nvtx_inject: aten::mm lasted $dur ns, expected >= 20 ms" >&2
    exit 1
fi
echo "nvtx_inject: ok"
