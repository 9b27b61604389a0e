#!/usr/bin/env bash
# html_report_shared: the pages of html_report.sh on the shared traces (skipped, 77, when
# ../shared/traces is absent, or chromium is): a multi-stream GPU trace (device lanes, GPU idle,
# gaps; phases from PyTorch's own ranges, the Model view's rules), then the shared pair of ranks
# as a job.
set -euo pipefail
name_of_test=html_report_shared
. "$(dirname "$0")/html_common.sh.inc"

trace="${SHARED:-${SRC:-.}/../shared}/traces/hta_sampled_rank-0.json.gz"
if [ ! -f "$trace" ]; then
  echo "html_report_shared: $trace absent: skipped"
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
echo "html_report_shared: ok"
