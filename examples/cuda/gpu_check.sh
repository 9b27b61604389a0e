#!/usr/bin/env bash
# gpu_check.sh — tally's GPU checks in one call, on a machine with an NVIDIA GPU, nvcc and
# PyTorch (the device machine). Run from the repository root:
#
#   OUT=/some/dir bash examples/cuda/gpu_check.sh
#
# 1. builds tally and the CUDA example in a fresh build folder;
# 2. runs the RMSNorm example under `tally run` (steps from the NVTX range "step") and reports;
# 3. runs examples/cuda/train_small.py under emit_nvtx under `tally run`, and again under
#    torch.profiler, and compares the kernels (names, counts, per-name totals) of both traces;
# 4. measures the step time of plain / tally run / tally run + emit_nvtx / torch.profiler in
#    one sitting (interleaved repetitions);
# 5. leaves its results in $OUT (at most 8 files): gpu_check.log, overhead.txt, compare.txt,
#    compare.json, rmsnorm_report.txt, torch_reports.txt and two small traces.
# Budget: under 8 minutes on an H100 machine with 16 cores.
# GPU_CHECK_SKIP_BUILD=1 uses an existing build in $GPU_CHECK_BUILD; TALLY_BIN names the tally.
# GPU_CHECK_REPS (default 3) and GPU_CHECK_OSTEPS (default 60) size the overhead part, for a
# short device lease.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${GPU_CHECK_BUILD:-/tmp/tally-gpucheck-build}
W=${GPU_CHECK_WORK:-/tmp/tally-gpucheck}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
rm -rf "$W" && mkdir -p "$W"
t_start=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - t_start)) s] $*"; }

stamp "machine"
nvidia-smi -L || true
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
nvcc --version | tail -1 || true
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
nproc

stamp "build"
if [ -z "${GPU_CHECK_SKIP_BUILD:-}" ]; then
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DTALLY_BENCH=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
    > "$W/cmake.log" 2>&1 || { cat "$W/cmake.log"; echo "cmake failed"; exit 1; }
cmake --build "$B" -j"$(nproc)" --target tally libtally tally_static tally-rmsnorm > "$W/build.log" 2>&1 ||
    { tail -50 "$W/build.log"; echo "build failed"; exit 1; }
fi
TALLY=${TALLY_BIN:-$B/tally}
ls -la "$TALLY" "$B"/libtally.so* "$B/tally-rmsnorm"
cc -std=gnu11 -O1 -I"$ROOT/include" -I"$ROOT/src" -o "$W/dump" "$ROOT/tests/integration/nvtx_dump.c" \
    "$B/libtally_static.a" -lz -lm -lpthread -ldl || echo "nvtx_dump not built"

trace_of() { find "$1" -name '*.tally' | sort | head -1; }
json_of() { find "$1" -name '*.pt.trace.json.gz' | sort | head -1; }

stamp "RMSNorm example under tally run"
TALLY_CUPTI_DEBUG=1 "$TALLY" run -o "$W/rmsnorm" --step-range step -- "$B/tally-rmsnorm" --iters 20
echo "exit status: $?"
rt=$(trace_of "$W/rmsnorm")
echo "# device events in the .tally trace (count, category, name, has corr, linked to its launch)"
"$W/dump" "$rt" --device | sort | uniq -c | sort -rn | head -30
{
    echo "# tally report $rt"
    "$TALLY" report "$rt"
    echo
    echo "# tally ops $rt"
    "$TALLY" ops "$rt"
    echo
    echo "# tally gaps $rt"
    "$TALLY" gaps "$rt"
} > "$OUT/rmsnorm_report.txt" 2>&1
head -80 "$OUT/rmsnorm_report.txt"
rj=$(json_of "$W/rmsnorm")
[ -n "$rj" ] && [ "$(stat -c %s "$rj")" -lt 16000000 ] && cp "$rj" "$OUT/rmsnorm.pt.trace.json.gz"

stamp "train_small.py: emit_nvtx under tally run, and torch.profiler"
STEPS=12
"$TALLY" run -o "$W/torch_tally" -- $PY "$ROOT/examples/cuda/train_small.py" --mode nvtx \
    --steps $STEPS --warmup 4
echo "exit status: $?"
$PY "$ROOT/examples/cuda/train_small.py" --mode torchprof --steps $STEPS --warmup 4 \
    --trace-dir "$W/torch_prof"
echo "exit status: $?"
tt=$(trace_of "$W/torch_tally")
tj=$(json_of "$W/torch_tally")
pj=$(find "$W/torch_prof" -name '*.json*' | sort | head -1)
echo "tally trace: $tt / $tj"
echo "torch trace: $pj"
# tally's side read from its native .tally trace (and from its Chrome trace when written)
"$W/dump" "$tt" --kernels > "$W/tally_kernels.tsv"
{
    echo "## tally (.tally trace) vs torch.profiler"
    $PY "$ROOT/examples/cuda/compare_traces.py" "$W/tally_kernels.tsv" "$pj" --json "$OUT/compare.json"
    if [ -n "$tj" ]; then
        echo
        echo "## tally (.pt.trace.json.gz) vs torch.profiler"
        $PY "$ROOT/examples/cuda/compare_traces.py" "$tj" "$pj"
    fi
} > "$OUT/compare.txt" 2>&1
cat "$OUT/compare.txt"
{
    echo "# tally report (tally run + emit_nvtx)"
    "$TALLY" report "$tt"
    echo
    echo "# tally ops (tally run + emit_nvtx)"
    "$TALLY" ops "$tt" --top 30
    echo
    echo "# tally ops --group-by-shape (tally run + emit_nvtx)"
    "$TALLY" ops "$tt" --top 20 --group-by-shape
    echo
    echo "# tally report (torch.profiler trace)"
    "$TALLY" report "$pj"
    echo
    echo "# tally ops (torch.profiler trace)"
    "$TALLY" ops "$pj" --top 30
} > "$OUT/torch_reports.txt" 2>&1
head -60 "$OUT/torch_reports.txt"
[ -n "$tj" ] && [ "$(stat -c %s "$tj")" -lt 16000000 ] && cp "$tj" "$OUT/torch_tally.pt.trace.json.gz"

REPS=${GPU_CHECK_REPS:-3}
OSTEPS=${GPU_CHECK_OSTEPS:-60}
OWARM=$((OSTEPS / 4))
stamp "overhead: step time, interleaved, $REPS repetitions of $OSTEPS steps"
run_mode() { # label, command...
    local label=$1
    shift
    local line
    line=$("$@" 2>/dev/null | grep '^STEP_MS' | tail -1)
    echo "$label ${line#STEP_MS }" >> "$W/overhead.raw"
    echo "$label ${line#STEP_MS }"
}
: > "$W/overhead.raw"
for rep in $(seq "$REPS"); do
    run_mode plain $PY "$ROOT/examples/cuda/train_small.py" --steps $OSTEPS --warmup $OWARM
    run_mode tally_run "$TALLY" run -q -o "$W/ovh_tally" -- \
        $PY "$ROOT/examples/cuda/train_small.py" --steps $OSTEPS --warmup $OWARM
    run_mode torch_profiler $PY "$ROOT/examples/cuda/train_small.py" --mode torchprof \
        --steps $OSTEPS --warmup $OWARM --trace-dir "$W/ovh_prof"
    run_mode tally_run_emit_nvtx "$TALLY" run -q -o "$W/ovh_tally_nvtx" -- \
        $PY "$ROOT/examples/cuda/train_small.py" --mode nvtx --steps $OSTEPS --warmup $OWARM
    run_mode emit_nvtx_no_tool $PY "$ROOT/examples/cuda/train_small.py" --mode nvtx \
        --steps $OSTEPS --warmup $OWARM
done
$PY - "$W/overhead.raw" > "$OUT/overhead.txt" <<'EOF'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 3:
        rows.setdefault(parts[0], []).append(float(parts[2]))  # median step ms of each run
if "plain" not in rows:
    print("no plain runs"); sys.exit(0)
base = statistics.median(rows["plain"])
print("%-22s %10s %10s   runs (median step ms of each)" % ("mode", "step ms", "vs plain"))
for k, v in rows.items():
    m = statistics.median(v)
    print("%-22s %10.3f %+9.2f%%   %s" % (k, m, (m / base - 1) * 100, " ".join("%.3f" % x for x in v)))
EOF
cat "$OUT/overhead.txt"
stamp "done"
