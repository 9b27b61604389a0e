#!/usr/bin/env bash
# diff_demo_fusion.sh — `tally diff` on the demo's unfused -> fused RMSNorm traces reads the
# fusion as a speed-up: rmsnorm's children vanish into its own body, so its self time goes up
# while its total goes down; the ops diff decides on the total and says "faster". Also: the
# per-step breakdown (--views model) is compared, and the csv is one plain table.
set -euo pipefail

: "${TALLY:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "diff_demo_fusion: $*" >&2; exit 1; }

# a smaller model than the demo's own (7x less work: the default one ran 80 s under ASan); the
# fused rmsnorm is still ~4x faster than the unfused one
"$TALLY" demo -o "$work" --layers 2 --dim 128 --ffn 352 --seq 64 --steps 4 >"$work/demo.txt" 2>&1 ||
  { cat "$work/demo.txt" >&2; fail "tally demo failed"; }
a="$work/demo-unfused.tally" b="$work/demo-fused.tally"
[ -f "$a" ] && [ -f "$b" ] || fail "the demo wrote no unfused/fused traces: $(ls "$work")"

"$TALLY" diff "$a" "$b" --views ops --top 0 --format csv >"$work/ops.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally diff --views ops failed"; }
# field k of the row named $2 of view $1 (header names the fields)
field() {
  awk -F, -v v="$1" -v n="$2" -v k="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["view"] == v && $col["name"] == n { print $col[k]; exit }' "$4"
}
change=$(field ops_diff rmsnorm change "$work/ops.csv")
[ "$change" = faster ] || { cat "$work/ops.csv" >&2; fail "rmsnorm reads '$change', expected faster"; }
before=$(field ops_diff rmsnorm cpu_total_before_us "$work/ops.csv")
after=$(field ops_diff rmsnorm cpu_total_after_us "$work/ops.csv")
awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a) }' || fail "rmsnorm total $before -> $after"
# the fused kernel's children are gone
[ "$(field ops_diff rmsnorm.mul change "$work/ops.csv")" = vanished ] || fail "rmsnorm.mul not vanished"

"$TALLY" diff "$a" "$b" --views model --format csv >"$work/model.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally diff --views model failed"; }
[ -n "$(field model_steps_diff Forward before_us "$work/model.csv")" ] ||
  { cat "$work/model.csv" >&2; fail "no Forward row in the per-step breakdown"; }
"$TALLY" diff "$a" "$b" --views model >"$work/model.txt"
grep -q "Model per Step Diff" "$work/model.txt" || fail "no per-step table in text"
# TensorBoard's breakdown, compared the same way: the demo is CPU work, so CPU Exec holds the step
"$TALLY" diff "$a" "$b" --views breakdown --format csv >"$work/bd.csv" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "tally diff --views breakdown failed"; }
bd_step=$(field breakdown_diff "Step Time" before_us "$work/bd.csv")
bd_cpu=$(field breakdown_diff "CPU Exec" before_us "$work/bd.csv")
awk -v s="$bd_step" -v c="$bd_cpu" 'BEGIN { exit !(c > 0 && c <= s) }' ||
  { cat "$work/bd.csv" >&2; fail "breakdown: CPU Exec $bd_cpu of a $bd_step step"; }
echo "diff_demo_fusion: ok (rmsnorm $before us -> $after us)"
