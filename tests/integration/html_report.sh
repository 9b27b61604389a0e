#!/usr/bin/env bash
# html_report: `tally report --html` and `tally demo` write a page that a real browser
# (Debian's chromium, headless) draws without a script error: every chart has drawn elements
# (the page records, per chart, whether its SVG holds any), the expected sections are there,
# and a screenshot is taken (left in $BUILD/html_report/ to look at). Checked on the demo's
# page and on a shared multi-stream GPU trace (skipped when ../shared/traces is absent). Also:
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

# a shared multi-stream GPU trace: device lanes, GPU idle, gaps
trace="${SHARED:-${SRC:-.}/../shared}/traces/hta_sampled_rank-0.json.gz"
if [ ! -f "$trace" ]; then
  echo "html_report: $trace absent: the GPU trace part is skipped"
  exit 77
fi
"$TALLY" report "$trace" --html "$work/gpu.html" || fail "report --html of $trace failed"
load gpu "$work/gpu.html" findings breakdown timeline operators gpu-idle
grep -q '"kind": "stream"' "$work/gpu.html" || fail "gpu: no stream lane in the timeline"
echo "html_report: ok"
