#!/usr/bin/env bash
# ops_cli: `tally ops` on the trace PyTorch 1.13 wrote (tests/data/torch_mlp.trace.json) prints
# the rows PyTorch's own key_averages().table() printed for it (tests/data/torch_mlp.tables.txt):
# the same names with the same call counts, the same footer, and usage errors exit with 2.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${SRC:?source directory}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "ops_cli: $*" >&2; exit 1; }
trace="$SRC/tests/data/torch_mlp.trace.json"
tables="$SRC/tests/data/torch_mlp.tables.txt"

# name -> calls from PyTorch's table sorted by count (the name is right-aligned in 55 columns,
# the count is the last field)
awk '/^=== count$/ {on=1; next} /^===/ {on=0}
     on && NF && !/^---/ && !/Name +Self CPU/ && !/time total:/ {
       name=substr($0, 1, 55); sub(/^ +/, "", name); print name "\t" $NF }' "$tables" |
  sort >"$work/torch.tsv"
[ "$(wc -l <"$work/torch.tsv")" -ge 40 ] || fail "could not read PyTorch's table"

"$TALLY" ops "$trace" --sort count --format csv >"$work/ops.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally ops failed"; }
# csv: the header, then rows; name is the first field, calls the field named "calls"
awk -F, '!h {for (i = 1; i <= NF; i++) if ($i == "calls") c = i; h = 1; next}
         NF {n = $1; gsub(/"/, "", n); if (length(n) >= 52) n = substr(n, 1, 52) "...";
             print n "\t" $c}' "$work/ops.csv" | sort >"$work/ours.tsv"
diff "$work/torch.tsv" "$work/ours.tsv" >"$work/diff.txt" ||
  { cat "$work/diff.txt" >&2; fail "rows or counts differ from PyTorch's table"; }

"$TALLY" ops "$trace" --top 3 >"$work/ops.txt" || fail "text output failed"
grep -q "^Self CPU time total: 2.869ms$" "$work/ops.txt" || { cat "$work/ops.txt" >&2; fail "footer"; }
[ "$(grep -c 'ProfilerStep\*' "$work/ops.txt")" = 1 ] || fail "steps not aggregated"

"$TALLY" ops "$trace" --format json --sort self_cpu_time_total --top 2 >"$work/ops.json" ||
  fail "json output failed"
grep -q '"self_cpu_us"' "$work/ops.json" || fail "json has no self_cpu_us"

set +e
"$TALLY" ops "$trace" --sort no_such_key >/dev/null 2>"$work/err.txt"; rc=$?
set -e
[ "$rc" = 2 ] || fail "bad --sort exited $rc, expected 2"
grep -q "no_such_key" "$work/err.txt" || fail "bad --sort message: $(cat "$work/err.txt")"
set +e
"$TALLY" ops "$work/missing.json" >/dev/null 2>"$work/err.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "missing file exited $rc, expected 1"
grep -q "group-by-shape" <<<"$("$TALLY" ops --help)" || fail "--help"
echo "ops_cli: ok ($(wc -l <"$work/ours.tsv") rows match PyTorch's table)"
