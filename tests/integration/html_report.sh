#!/usr/bin/env bash
# html_report: `tally report --html` and `tally demo` write a page that a real browser
# (Debian's chromium, headless) draws without a script error: every chart has drawn elements
# (the page records, per chart, whether its SVG holds any), the expected sections are there,
# and a screenshot is taken (left in $BUILD/html_report/ to look at). Checked on the demo's
# page and on a made-up job of 4 ranks (tally report DIR --html); html_report_shared.sh does the
# same on the shared traces. Also: --html with -o is a usage error, an unwritable path one line
# and exit status 1. Skipped (77) when chromium is not installed (scripts/setup.sh installs it).
set -euo pipefail
name_of_test=html_report
. "$(dirname "$0")/html_common.sh.inc"

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
load job4 "$work/job4.html" findings ranks stragglers collectives
job_check job4 4
grep -q 'rank 2 is the straggler' "$work/job4.dom" || fail "job4: the straggler is not rank 2"
grep -q 'href="#ranks">→ evidence: ranks' "$work/job4.dom" ||
  fail "job4: the straggler does not link to the ranks"
grep -q 'href="#collectives">→ evidence: collectives' "$work/job4.dom" ||
  fail "job4: the collective skew does not link to the collectives"

echo "html_report: ok"
