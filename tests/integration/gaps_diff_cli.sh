#!/usr/bin/env bash
# gaps_diff_cli: `tally gaps` and `tally diff` on small Kineto-style traces whose answers are
# known by construction (the layout of tests/unit/test_view_gaps.c), plus their usage errors.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "gaps_diff_cli: $*" >&2; exit 1; }

# One step [0, 20 ms); "build_batched_past" [1, 9 ms). Kernels on stream 7 (start, dur, launch):
#   K1 1000 us 1000 us @500; K2 7000 us 1000 us @6900 (gap 5 ms, host wait);
#   K3 8010 us 5 us @7500 (gap 10 us, kernel wait); K4 8115 us 1000 us @7600 (gap 100 us, other).
trace() { # $1 = file, $2 = name of the user range
  cat >"$1" <<JSON
{"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 20000},
 {"ph": "X", "cat": "user_annotation", "name": "$2", "pid": 1, "tid": 1, "ts": 1000, "dur": 8000},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 500, "dur": 10, "args": {"correlation": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6900, "dur": 10, "args": {"correlation": 2}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 7500, "dur": 10, "args": {"correlation": 3}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 7600, "dur": 10, "args": {"correlation": 4}},
 {"ph": "X", "cat": "kernel", "name": "K1", "pid": 0, "tid": 7, "ts": 1000, "dur": 1000, "args": {"correlation": 1, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "K2", "pid": 0, "tid": 7, "ts": 7000, "dur": 1000, "args": {"correlation": 2, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "K3", "pid": 0, "tid": 7, "ts": 8010, "dur": 5, "args": {"correlation": 3, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "K4", "pid": 0, "tid": 7, "ts": 8115, "dur": 1000, "args": {"correlation": 4, "device": 0, "stream": 7}}
]}
JSON
}
trace "$work/a.json" build_batched_past
trace "$work/b.json" fused_past

# --- gaps -------------------------------------------------------------------------------------
"$TALLY" gaps "$work/a.json" --format csv >"$work/gaps.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally gaps failed"; }
# value of field $2 in the first row of table $1 (the "view" column) of the one csv table
field() {
  awk -F, -v t="$1" -v k="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == t { print $(col[k]); exit }' "$work/gaps.csv"
}
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }'; }
near "$(field gpu_idle idle_us)" 5110 || fail "idle_us $(field gpu_idle idle_us) != 5110"
near "$(field gpu_idle host_wait_us)" 5000 || fail "host wait != 5000 us"
near "$(field gpu_idle kernel_wait_us)" 10 || fail "kernel wait != 10 us"
near "$(field gpu_idle other_wait_us)" 100 || fail "other != 100 us"
near "$(field gpu_gaps length_us)" 5000 || fail "largest gap != 5000 us"
[ "$(field gpu_gaps host_ranges)" = build_batched_past ] ||
  fail "host range of the largest gap: '$(field gpu_gaps host_ranges)'"
near "$(field kernel_launches launch_delay_max_us)" 515 || fail "max launch delay != 515 us"
[ "$(field kernel_launches short_kernels)" = 1 ] || fail "short kernels != 1"

# the kernel-wait threshold is in real microseconds
"$TALLY" gaps "$work/a.json" --kernel-wait-us 200 --format csv >"$work/gaps.csv"
near "$(field gpu_idle kernel_wait_us)" 110 || fail "--kernel-wait-us 200: kernel wait != 110 us"

# json parses, text lines up
"$TALLY" gaps "$work/a.json" --format json >"$work/gaps.json"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["gpu_idle"]["rows"][0]["stream"] == 7' \
    "$work/gaps.json" || fail "json output"
fi
"$TALLY" gaps "$work/a.json" >"$work/gaps.txt"
grep -q "Largest GPU Gaps" "$work/gaps.txt" || fail "no text table"

# usage errors: 2; unreadable file: 1
set +e
"$TALLY" gaps >/dev/null 2>&1; [ $? -eq 2 ] || fail "no file: exit status not 2"
"$TALLY" gaps "$work/a.json" --threshold-us -3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad threshold: not 2"
"$TALLY" gaps "$work/a.json" --sort nope >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad sort: not 2"
"$TALLY" gaps "$work/missing.json" >/dev/null 2>"$work/err.txt"; [ $? -eq 1 ] || fail "missing file: not 1"
[ "$(wc -l <"$work/err.txt")" -eq 1 ] || fail "missing file: not one line on stderr"
grep -q "kernel-wait-us" <<<"$("$TALLY" gaps --help)" || fail "--help"
# a stream or device the trace does not have: one line naming it and the streams there are
for asked in "--stream 8" "--device 1" "--device 1 --stream 7"; do
  "$TALLY" gaps "$work/a.json" $asked >"$work/out.txt" 2>"$work/err.txt"
  [ $? -eq 2 ] || fail "gaps $asked: exit status not 2"
  [ "$(wc -l <"$work/err.txt")" -eq 1 ] && grep -q "its streams: GPU 0 stream 7$" "$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "gaps $asked: not one line naming the trace's streams"; }
  [ ! -s "$work/out.txt" ] || fail "gaps $asked: printed tables"
done
"$TALLY" gaps "$work/a.json" --device 0 --stream 7 --format csv >"$work/one.csv" 2>&1 ||
  fail "gaps of the stream there is failed"
# the launch statistics of the stream asked for are named by it, not "all"
grep -q "^kernel_launches,.*,dev 0 stream 7,4,4," "$work/one.csv" || { cat "$work/one.csv" >&2; fail "launch row of --stream 7"; }
"$TALLY" diff "$work/a.json" >/dev/null 2>&1; [ $? -eq 2 ] || fail "diff with one file: not 2"
"$TALLY" diff "$work/a.json" "$work/b.json" --views bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "diff bad view: not 2"
set -e

# --- diff -------------------------------------------------------------------------------------
"$TALLY" diff "$work/a.json" "$work/b.json" --views ranges --format csv >"$work/diff.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally diff failed"; }
# "view,name,change" of every row of a diff csv
changes() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
           { print $col["view"] "," $col["name"] "," $col["change"] }' "$1"
}
changes "$work/diff.csv" >"$work/changes.txt"
grep -qx "ranges_diff,build_batched_past,vanished" "$work/changes.txt" || { cat "$work/diff.csv" >&2; fail "no vanished row"; }
grep -qx "ranges_diff,fused_past,new" "$work/changes.txt" || fail "no new row"
grep -q "^step_time,Avg step," "$work/changes.txt" || fail "no step time row"
# the same trace against itself: every row "same"
"$TALLY" diff "$work/a.json" "$work/a.json" --views ranges --format csv >"$work/same.csv"
changes "$work/same.csv" >"$work/changes.txt"
! grep -qE ",(up|down|new|vanished|faster|slower)$" "$work/changes.txt" || fail "a trace differs from itself"
echo "gaps_diff_cli: ok"
