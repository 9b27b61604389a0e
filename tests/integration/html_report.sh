#!/usr/bin/env bash
# html_report: `tally report --html` and `tally demo` write a page that a real browser
# (Debian's chromium, headless) draws without a script error: every chart has drawn elements
# (the page records, per chart, whether its SVG holds any), the expected sections are there,
# and a screenshot is taken (left in $BUILD/html_report/ to look at). Checked on the demo's
# page, on a made-up job of 4 ranks (tally report DIR --html), and on a shared multi-stream GPU
# trace and the shared pair of ranks as a job (skipped when ../shared/traces is absent). Also:
# --html with -o is a usage error, an unwritable path one line and exit status 1.
# Skipped (77) when chromium is not installed (scripts/setup.sh installs it).
set -euo pipefail
: "${TALLY:?path of the tally binary}"
BUILD=${BUILD:-$(dirname "$TALLY")}
command -v chromium >/dev/null || { echo "html_report: chromium not installed: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shots="$BUILD/html_report"
mkdir -p "$shots"
fail() { echo "html_report: $*" >&2; exit 1; }

# load NAME PAGE SECTIONS...: dump the DOM after the page ran; check errors, charts, sections
load() {
  local name=$1 page=$2; shift 2
  local dom="$work/$name.dom"
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --virtual-time-budget=10000 --dump-dom "file://$page" \
    >"$dom" 2>"$work/$name.err" || { tail -5 "$work/$name.err" >&2; fail "$name: chromium failed"; }
  local status
  status=$(grep -o '<div id="tally-status"[^>]*>' "$dom") || fail "$name: the page never finished (no #tally-status)"
  echo "$status" | grep -q 'data-done="1"' || fail "$name: not done: $status"
  if grep -o 'data-errors="[^"]*"' "$dom" | head -1 | grep -q .; then
    fail "$name: script errors: $(grep -o 'data-errors="[^"]*"' "$dom" | head -1)"
  fi
  local charts
  charts=$(echo "$status" | sed -n 's/.*data-charts="\([^"]*\)".*/\1/p')
  [ -n "$charts" ] || fail "$name: no chart drawn"
  echo "$charts" | tr ',' '\n' | grep -v ':ok$' | grep -q . && fail "$name: blank charts: $charts"
  local sections
  sections=$(echo "$status" | sed -n 's/.*data-sections="\([^"]*\)".*/\1/p')
  for s in "$@"; do
    echo ",$sections," | grep -q ",$s," || fail "$name: no section '$s' (has: $sections)"
  done
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --virtual-time-budget=10000 --window-size=1400,3000 \
    --screenshot="$shots/$name.png" "file://$page" >/dev/null 2>&1 || fail "$name: no screenshot"
  [ -s "$shots/$name.png" ] || fail "$name: empty screenshot"
  echo "html_report: $name: charts $charts"
}

# the demo (a tiny model): its page beside the traces, path printed
tiny=(--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --seq 32 --batch 2 --vocab 256
      --text-bytes 256)
"$TALLY" demo --steps 3 "${tiny[@]}" -o "$work/out" >"$work/demo.txt" 2>"$work/demo.err" ||
  { cat "$work/demo.err" >&2; fail "tally demo failed"; }
for v in unfused fused; do
  [ -s "$work/out/demo-$v.html" ] || fail "no demo-$v.html"
  grep -q "report $work/out/demo-$v.html" "$work/demo.err" || fail "demo-$v.html not printed"
done
size=$(stat -c %s "$work/out/demo-fused.html")
[ "$size" -lt 3000000 ] || fail "demo page is $size bytes (>= 3 MB)"
grep -q 'src="http\|href="http' "$work/out/demo-fused.html" && fail "the page loads from the network"
load demo "$work/out/demo-fused.html" findings breakdown timeline operators memory

# options: --html with the report's options; usage and write errors
"$TALLY" report "$work/out/demo-fused.tally" --views model,ops --top 5 --html "$work/v.html" ||
  fail "--html with --views failed"
load views "$work/v.html" breakdown operators
rc=0; "$TALLY" report "$work/out/demo-fused.tally" --html "$work/a.html" -o "$work/b" 2>"$work/e" || rc=$?
[ "$rc" = 2 ] || fail "--html with -o: exit $rc, expected 2"
rc=0; "$TALLY" report "$work/out/demo-fused.tally" --html /nonexistent/dir/x.html 2>"$work/e" || rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$work/e")" = 1 ] || fail "unwritable path: exit $rc, $(cat "$work/e")"

# a job (tally report DIR --html): a made-up job of 4 ranks, Kineto-style traces written here:
# rank r's steps 100 ms (rank 2: 120 ms, 20 % slower) plus a little jitter, kernels launched in
# forward and backward, an all_reduce kernel at 70 % of the step. The page is titled "Job: 4 ranks",
# leads with the job's findings (the straggler links to the ranks), draws the heat map, the
# per-rank bars, the stragglers and the collectives, and its tables sort.
python3 - "$work/job4" <<'PY'
import json, os, sys
base = 1_700_000_000_000_000  # us
for r in range(4):
    d = os.path.join(sys.argv[1], f"rank{r}")
    os.makedirs(d)
    ev, t, corr = [], base, 1
    def launch(ts, name, dur, stream):
        global corr
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": ts, "dur": 20, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                   "ts": ts + 200, "dur": dur,
                   "args": {"device": 0, "stream": stream, "correlation": corr}})
        corr += 1
    for n in range(8):
        step = (120_000 if r == 2 else 100_000) + ((r * 7 + n * 3) % 5) * 700
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{10 + n}",
                   "pid": 1, "tid": 1, "ts": t, "dur": step})
        fw = step * 4 // 10
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Net", "pid": 1,
                   "tid": 1, "ts": t + 100, "dur": fw})
        for k in range(4):
            launch(t + 200 + k * fw // 4, "sm80_xmma_gemm_f16f16_f32", fw // 5, 7)
        bw = t + 200 + fw
        ev.append({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": bw,
                   "name": "autograd::engine::evaluate_function: MmBackward0",
                   "dur": step * 35 // 100})
        for k in range(3):
            launch(bw + 100 + k * step // 10, "sm80_xmma_gemm_f16f16_f32_bwd",
                   step // 8 if k == 2 else step // 12, 7)
        a = t + step * 7 // 10
        ev.append({"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1,
                   "ts": a, "dur": 100})
        launch(a + 10, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, "
               "ncclWork*)", step // 10, 20)
        ev.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step",
                   "pid": 1, "tid": 1, "ts": t + step * 91 // 100, "dur": step // 20})
        t += step
    json.dump({"distributedInfo": {"rank": r, "world_size": 4}, "traceEvents": ev},
              open(os.path.join(d, f"host_{r}.123.pt.trace.json"), "w"))
PY
"$TALLY" report "$work/job4" --html "$work/job4.html" 2>"$work/job4.err" ||
  { cat "$work/job4.err" >&2; fail "report --html of a folder of 4 ranks failed"; }
# the charts of a job: heat map, per-rank bars (steps; computation / communication), stragglers,
# collectives
job_charts="rank-heatmap rank-steps rank-comm stragglers collectives"
job_check() { # NAME RANKS: title, findings first, every job chart, tables
  local name=$1 n=$2 dom="$work/$1.dom" status
  grep -q "<h1>Job: $n ranks" "$dom" || fail "$name: title is not 'Job: $n ranks': $(grep -o '<h1>[^<]*' "$dom")"
  status=$(grep -o '<div id="tally-status"[^>]*>' "$dom")
  for c in $job_charts; do
    echo "$status" | grep -q "[\",]$c:ok" || fail "$name: no chart $c: $status"
  done
  echo "$status" | grep -q 'data-sections="findings,' || fail "$name: the findings do not lead: $status"
  for t in ranks rank_steps stragglers collectives; do
    echo "$status" | grep -q "data-tables=\"[^\"]*\b$t\b" || fail "$name: no table $t: $status"
  done
}
load job4 "$work/job4.html" findings ranks stragglers collectives
job_check job4 4
grep -q 'rank 2 is the straggler' "$work/job4.dom" || fail "job4: the straggler is not rank 2"
grep -q 'href="#ranks">→ evidence: ranks' "$work/job4.dom" ||
  fail "job4: the straggler does not link to the ranks"
grep -q 'href="#collectives">→ evidence: collectives' "$work/job4.dom" ||
  fail "job4: the collective skew does not link to the collectives"

# a shared multi-stream GPU trace: device lanes, GPU idle, gaps; phases from PyTorch's own
# ranges (the Model view's rules); then the shared pair of ranks as a job
trace="${SHARED:-${SRC:-.}/../shared}/traces/hta_sampled_rank-0.json.gz"
if [ ! -f "$trace" ]; then
  echo "html_report: $trace absent: the GPU trace and shared job parts are skipped"
  exit 77
fi
"$TALLY" report "$trace" --html "$work/gpu.html" || fail "report --html of $trace failed"
load gpu "$work/gpu.html" findings breakdown timeline operators gpu-idle
grep -q '"kind": "stream"' "$work/gpu.html" || fail "gpu: no stream lane in the timeline"
grep -q '"Backward"\]' "$work/gpu.html" && grep -q '"Optimization"\]' "$work/gpu.html" ||
  fail "gpu: no PyTorch phases (Backward, Optimization) in the timeline"
mkdir -p "$work/pair"
ln -s "$trace" "${trace%-0.json.gz}-1.json.gz" "$work/pair/"
"$TALLY" report "$work/pair" --html "$work/pair.html" 2>"$work/pair.err" ||
  { cat "$work/pair.err" >&2; fail "report --html of the shared pair failed"; }
load pair "$work/pair.html" findings ranks stragglers collectives
job_check pair 2
echo "html_report: ok"
