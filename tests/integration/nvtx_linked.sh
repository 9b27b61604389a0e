#!/usr/bin/env bash
# nvtx_linked.sh — a program linked with tally that uses NVTX, without `tally run`: tally's
# ranges and the NVTX ranges in one trace, nested exactly as they ran.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
if ! have_nvtx; then
    echo "skipped: no nvtx3 headers (CUDA_INC unset)"
    exit 77
fi
build_dump
env -u NVTX_INJECTION64_PATH "$BUILD/tests/prog_nvtx_linked" "$W/out" > "$W/out.txt"
grep -q "linked done" "$W/out.txt"
trace=$(one_trace "$W/out")
"$NVTX_DUMP" "$trace" | sed 's/^[^|]*|//' > "$W/got.txt"
cat > "$W/want.txt" <<'WANT'
0|Forward|tally outer||
1|UserDefined|nvtx inside||
2|UserDefined|tally innermost||
3|Instant|nvtx mark||
0|Operator|aten::add|[[4], [4]]|
WANT
if ! diff -u "$W/want.txt" "$W/got.txt"; then
    echo "nvtx_linked: trace differs from the program's ranges" >&2
    exit 1
fi
echo "nvtx_linked: ok"

# TALLY_GPU=1: tally_start starts CUPTI for a linked program (no injection). Without a driver it
# says once why GPU activity is not recorded; with one, TALLY_CUPTI_DEBUG reports it enabled.
env -u NVTX_INJECTION64_PATH TALLY_GPU=1 TALLY_CUPTI_DEBUG=1 "${SAN_ENV[@]}" \
    "$BUILD/tests/prog_nvtx_linked" "$W/gpu" >"$W/gpu.out" 2>"$W/gpu.err"
grep -q "linked done" "$W/gpu.out"
if ! grep -Eq "CUPTI .*(activity kinds enabled|GPU activity is not recorded)" "$W/gpu.err"; then
    echo "nvtx_linked: TALLY_GPU=1 did not start CUPTI:" >&2; cat "$W/gpu.err" >&2; exit 1
fi
echo "nvtx_linked: TALLY_GPU=1 ok"
