#!/usr/bin/env bash
# steps_agree.sh — one set of steps in every view (src/analysis/steps.h).
#
# 1. The README's loop (prog_readme_steps.c: 10 x tally_step(32), then tally_stop): model,
#    model_steps, perf, perf_ips, overview and breakdown all count 10 steps — the span that
#    tally_stop closes after the last tally_step is no step — and agree on the average step.
#    Each step busy-waits 2 ms in its phases, so no step is shorter than that.
# 2. `tally run --step-range train_step` on a program of 6 NVTX "train_step" ranges of 2 ms
#    after 300 ms of start-up (nvtx_steps_app.c): 6 steps everywhere, none shorter than 2 ms, at
#    most 500 steps/s, none holding the start-up (every step under 150 ms).
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"

check() { # check TRACE STEPS MIN_US SAMPLES_PER_STEP UNIT [MAX_US]
    "$TALLY" report "$1" --views model,perf,overview,breakdown --format json > "$W/r.json"
    python3 - "$W/r.json" "$2" "$3" "$4" "$5" "${6:-0}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n, min_us, per_step, unit = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
max_us = float(sys.argv[6])
model = {x["name"]: x for x in r["model"]["rows"]}
steps = [x for x in r["model_steps"]["rows"] if x["step"] != "Average"]
avg_row = [x for x in r["model_steps"]["rows"] if x["step"] == "Average"][0]
perf = {x["name"]: x for x in r["perf"]["rows"]}
ov = {x["type"]: x for x in r["overview"]["rows"]}
bd = [x for x in r["breakdown"]["rows"] if x["step"] != "Average"]
bd_avg = [x for x in r["breakdown"]["rows"] if x["step"] == "Average"][0]
counts = {"model": model["ProfileStep"]["calls"], "model_steps": len(steps),
          "perf": perf["batch_cost"]["steps"], "overview": ov["ProfileStep"]["calls"],
          "breakdown": len(bd)}
assert all(c == n for c in counts.values()), counts
total = sum(x["step_us"] for x in steps)
avgs = {"model": model["ProfileStep"]["cpu_avg_us"], "model_steps": avg_row["step_us"],
        "perf": perf["batch_cost"]["avg_us"], "overview": ov["ProfileStep"]["cpu_time_us"] / n,
        "breakdown": bd_avg["step_us"], "sum/n": total / n}
assert max(avgs.values()) - min(avgs.values()) < 0.01, avgs
assert perf["batch_cost"]["min_us"] >= min_us, perf["batch_cost"]
assert min(x["step_us"] for x in steps) >= min_us, steps
if max_us:
    assert max(x["step_us"] for x in steps) <= max_us, steps
ips = r["perf_ips"]["rows"][0]
assert ips["unit"] == unit, ips
assert ips["samples"] == n * per_step, ips
assert ips["max"] <= per_step / (min_us / 1e6), ips
print("steps:", n, "avg_us:", round(avgs["perf"], 3))
PY
}

# 1. The README's example.
PROG="$BUILD/tests/prog_readme_steps"
TALLY_OUTPUT_DIR="$W/readme" TALLY_NAME=readme "$PROG" 2> "$W/readme.err" ||
    { cat "$W/readme.err"; exit 1; }
grep -q "Steps: 10" "$W/readme.err" || { echo "summary: not 10 steps"; cat "$W/readme.err"; exit 1; }
check "$(one_trace "$W/readme")" 10 2000 32 samples/s

# 2. tally run --step-range on an unmodified NVTX program.
need_injection
if ! have_nvtx; then
    echo "skipped the --step-range part: no nvtx3 headers (CUDA_INC unset)"
    echo "steps_agree: ok"
    exit 0
fi
cc -std=c11 -O1 -I"$CUDA_INC" -o "$W/app" "$SRC/tests/integration/nvtx_steps_app.c"
"${SAN_ENV[@]}" "$TALLY" run -o "$W/range" --no-gpu --write tally --step-range train_step \
    -- "$W/app" 300 > "$W/run.out" 2> "$W/run.err" || { cat "$W/run.err"; exit 1; }
check "$(one_trace "$W/range")" 6 2000 1 steps/s 150000
echo "steps_agree: ok"
