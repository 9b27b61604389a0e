#!/usr/bin/env bash
# nvtx_steps.sh — steps of an unmodified program from an NVTX range name: `tally run
# --step-range train_step --schedule wait=1,warmup=1,active=2,repeat=1` on 6 NVTX steps records
# exactly steps 2 and 3 (the marks say which iterations were recorded).
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
need_injection
if ! have_nvtx; then
    echo "skipped: no nvtx3 headers (CUDA_INC unset)"
    exit 77
fi
build_dump
cc -std=c11 -O1 -I"$CUDA_INC" -o "$W/app" "$SRC/tests/integration/nvtx_steps_app.c"
"${SAN_ENV[@]}" "$TALLY" run -o "$W/out" --no-gpu --write tally --step-range train_step \
    --schedule "wait=1,warmup=1,active=2,repeat=1" -- "$W/app" > "$W/run.out" 2> "$W/run.err" ||
    { cat "$W/run.err"; exit 1; }
grep -q "steps done" "$W/run.out"
trace=$(one_trace "$W/out")
"$NVTX_DUMP" "$trace" > "$W/got.txt"
cat > "$W/want.txt" <<'WANT'
main|0|ProfileStep|ProfilerStep#2||
main|1|UserDefined|train_step||
main|2|UserDefined|forward||
main|3|Instant|iter2||
main|0|ProfileStep|ProfilerStep#3||
main|1|UserDefined|train_step||
main|2|UserDefined|forward||
main|3|Instant|iter3||
WANT
sed -i 's/^tid[0-9]*|/main|/' "$W/got.txt" # the app does not name its thread
if ! diff -u "$W/want.txt" "$W/got.txt"; then
    echo "nvtx_steps: recorded steps differ from the schedule" >&2
    exit 1
fi

# A process with a rank from its launcher writes into rank<N>/.
RANK=3 "${SAN_ENV[@]}" "$TALLY" run -o "$W/ranked" --no-gpu --write tally -- "$W/app" \
    > /dev/null 2> "$W/rank.err" || { cat "$W/rank.err"; exit 1; }
[ "$(find "$W/ranked/rank3" -name '*.tally' | wc -l)" = 1 ] ||
    { echo "nvtx_steps: no trace in rank3/"; find "$W/ranked"; exit 1; }
echo "nvtx_steps: ok"
