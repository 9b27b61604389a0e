#!/usr/bin/env bash
# nvtx_linked.sh — a program linked with tally that uses NVTX, without `tally run`: tally's
# ranges and the NVTX ranges in one trace, nested exactly as they ran.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
if ! have_nvtx; then
    echo "skipped: no nvtx3 headers (CUDA_INC unset)"
    exit 0
fi
if ! grep -q "tally__collect_start" "$SRC"/src/record/*.c; then
    echo "skipped: the recorder does not call tally__collect_start from tally_start yet"
    exit 0
fi
build_dump
env -u NVTX_INJECTION64_PATH "$BUILD/tests/prog_nvtx_linked" "$W/out" > "$W/out.txt"
grep -q "linked done" "$W/out.txt"
trace=$(one_trace "$W/out")
"$W/nvtx_dump" "$trace" | sed 's/^[^|]*|//' > "$W/got.txt"
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
