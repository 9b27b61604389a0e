#!/usr/bin/env bash
# demo_smoke: `tally demo` on a tiny model runs the workload under the profiler, leaves the
# trace files, and prints a report whose Model view has every phase with a non-zero time, whose
# ranges view has the workload's ranges, and whose operator view (where the build has one) has
# the RMSNorm operator with its five unfused passes.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tiny=(--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --seq 32 --batch 2 --vocab 256
      --text-bytes 256)

fail() { echo "demo_smoke: $*" >&2; exit 1; }

"$TALLY" demo --steps 3 "${tiny[@]}" -o "$work/out" --top 0 \
  >"$work/report.txt" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; fail "tally demo failed"; }

[ -s "$work/out/demo-unfused.tally" ] || fail "no .tally file in $work/out"
[ -s "$work/out/demo-unfused.json.gz" ] || fail "no .json.gz file in $work/out"
gzip -t "$work/out/demo-unfused.json.gz" || fail "the .json.gz is not gzip"
grep -q "demo-unfused.tally" "$work/err.txt" || fail "trace path not printed on stderr"
grep -q "demo-unfused.json.gz" "$work/err.txt" || fail "json path not printed on stderr"

# Model view: each phase row present with a non-zero time (a duration field greater than 0).
for phase in Dataloader Forward Backward Optimization Other; do
  line=$(grep -m1 -E "^[[:space:]]*$phase[[:space:]]" "$work/report.txt") ||
    { cat "$work/report.txt" >&2; fail "no $phase row"; }
  echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+(ns|us|ms|s)$/) {
                          v = $i; sub(/[a-z]+$/, "", v); if (v + 0 > 0) ok = 1 } }
                      END { exit !ok }' ||
    fail "$phase row has no non-zero time: $line"
done
# The recorded steps are the three after the skipped warm-up, numbered from 1.
for s in 1 2 3; do
  grep -q "ProfilerStep#$s" "$work/report.txt" || fail "no ProfilerStep#$s in the per-step table"
done
grep -q "ProfilerStep#0" "$work/report.txt" && fail "the warm-up step was recorded"
# User ranges of the workload.
for name in decoder_layer attention_block mlp_block decoder_layer_backward read_text tokenize \
            zero_grad; do
  grep -qE "(^|[[:space:]])$name([[:space:]]|$)" "$work/report.txt" ||
    { cat "$work/report.txt" >&2; fail "no '$name' row in the ranges view"; }
done
# Operator ranges (TALLY_OPERATOR) are shown by the operator view (or the ops table), where the
# build has one.
if grep -qE '^[[:space:]]+(operator|ops)[[:space:]]' <<<"$("$TALLY" report --help)"; then
  for name in rmsnorm rmsnorm.pow rmsnorm.mean rmsnorm.add_eps rmsnorm.rsqrt rmsnorm.mul matmul \
              attention rope swiglu lm_head matmul.worker adamw; do
    grep -qE "(^|[[:space:]])$name([[:space:]]|$)" "$work/report.txt" ||
      { cat "$work/report.txt" >&2; fail "no '$name' row in the operator view"; }
  done
else
  echo "demo_smoke: this build has no operator view; operator rows not checked" >&2
fi

# The same trace reads back through `tally report`.
"$TALLY" report "$work/out/demo-unfused.tally" --views model >/dev/null ||
  fail "tally report cannot read the demo's trace"

# --format json is one JSON document on stdout.
"$TALLY" demo --steps 2 "${tiny[@]}" --rmsnorm fused -o "$work/out" --format json \
  >"$work/report.json" 2>/dev/null || fail "tally demo --format json failed"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/report.json" ||
  fail "--format json output is not JSON"
[ -s "$work/out/demo-fused.tally" ] || fail "no demo-fused.tally"

# Usage errors: one line, exit 2.
set +e
"$TALLY" demo --dim 30 --heads 4 >/dev/null 2>"$work/usage.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "bad size: exit $rc, expected 2"
[ "$(wc -l <"$work/usage.txt")" -eq 1 ] || fail "bad size: expected a one-line error"
grep -q -- "--rmsnorm" <<<"$("$TALLY" demo --help)" || fail "--help does not list --rmsnorm"
echo "demo_smoke: ok"
