#!/usr/bin/env bash
# cli_options.sh — the one option parser behind every verb (src/cli/options.c), seen from the
# command line: each verb's --help is generated from its table (every option in the usage line
# has its line of help, and every option the help lists is accepted); a misspelt option gets
# the nearest one suggested; --opt=value and --opt value give the same output; a bad value is
# one line and exit status 2; the trace's loss warnings come out the same way in every verb;
# `tally run` checks its options and the program's TALLY_* settings before it starts the
# program, which a bad one never does.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
fail() { echo "cli_options: $*" >&2; exit 1; }
trace="$SRC/tests/data/torch_mlp.trace.json"

# The command must be a usage error: exit status 2 and one line on stderr that starts with
# "tally" and, when a pattern is given with -m, matches it.
expect_usage() {
  local pattern="^tally"
  if [ "$1" = -m ]; then pattern=$2; shift 2; fi
  set +e
  "$@" >/dev/null 2>"$W/err" </dev/null
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$*: exit status $rc, expected 2 ($(cat "$W/err"))"
  [ "$(wc -l <"$W/err")" = 1 ] || fail "$*: expected one line, got: $(cat "$W/err")"
  grep -q "^tally" "$W/err" || fail "$*: the line does not name tally: $(cat "$W/err")"
  grep -q -- "$pattern" "$W/err" || fail "$*: no '$pattern' in: $(cat "$W/err")"
}

# --- help from the table --------------------------------------------------------------------
for verb in report ops gaps diff export run demo; do
  "$TALLY" "$verb" --help >"$W/help" || fail "$verb --help failed"
  # every verb that prints tables takes --wide
  case $verb in report | ops | gaps | diff | demo)
    grep -qE "^ +--wide( |$)" "$W/help" || fail "$verb --help: no --wide" ;;
  esac
  head -1 "$W/help" | grep -q "^usage: tally $verb" || fail "$verb --help: no usage line"
  # the usage lines: up to the first empty line
  usage=$(awk 'NF == 0 {exit} {print}' "$W/help")
  options=$(sed -n '/^options:$/,/^$/p' "$W/help")
  [ -n "$options" ] || fail "$verb --help has no options section"
  for name in $(printf '%s\n' "$usage" | grep -oE '\[--[a-z-]+' | sed 's/^\[--//'); do
    grep -qE "^  (-[a-z], )? *--$name( |$)" <<<"$options" ||
      fail "$verb --help: --$name is in the usage line but has no line of help"
  done
  for letter in $(printf '%s\n' "$usage" | grep -oE '\[-[a-z]( |\])' | cut -c3); do
    grep -qE "^  -$letter, --" <<<"$options" ||
      fail "$verb --help: -$letter is in the usage line but has no line of help"
  done
  # every option the help lists is one the verb takes (tally run once listed --gpu); an unknown
  # option after it makes every probe a usage error, so that none runs the verb's work (tally
  # demo --wide ran the whole demo: 80 s under ASan)
  for name in $(printf '%s\n' "$options" | grep -oE '^  (-[a-z], )? *--[a-z-]+' | sed 's/.*--//'); do
    [ "$name" = help ] && continue
    set +e
    "$TALLY" "$verb" "--$name=x" --no-such-option-zz >/dev/null 2>"$W/err" </dev/null
    rc=$?
    set -e
    [ "$rc" = 2 ] || fail "$verb --$name=x --no-such-option-zz: exit status $rc, expected 2"
    ! grep -q "unknown option '--$name" "$W/err" || fail "$verb --help lists --$name, which $verb refuses"
  done
  "$TALLY" help "$verb" | cmp -s - "$W/help" || fail "'tally help $verb' differs from --help"
done
! grep -q -- "--gpu" <<<"$("$TALLY" run --help)" || fail "tally run --help lists --gpu"

# --- did you mean ---------------------------------------------------------------------------
expect_usage -m "did you mean '--sort'?" "$TALLY" report "$trace" --sotr total_us
expect_usage -m "did you mean '--group-by-shape'?" "$TALLY" ops "$trace" --group-by-shap
expect_usage -m "did you mean '--threshold-us'?" "$TALLY" gaps "$trace" --treshold-us=5
expect_usage -m "did you mean '--metric'?" "$TALLY" diff "$trace" "$trace" --metirc calls
expect_usage -m "did you mean '--output'?" "$TALLY" export "$trace" --outptu x.json
expect_usage -m "did you mean '--schedule'?" "$TALLY" run --schedul 3:5 -- true
expect_usage -m "did you mean '--steps'?" "$TALLY" demo --setps 2
expect_usage -m "did you mean '--help'?" "$TALLY" ops --hepl
expect_usage -m "did you mean 'report'?" "$TALLY" reprot "$trace"

# --- --opt=value is --opt value -------------------------------------------------------------
"$TALLY" ops "$trace" --top 3 --sort count --format csv >"$W/a.csv"
"$TALLY" ops "$trace" --top=3 --sort=count --format=csv >"$W/b.csv"
"$TALLY" ops --format csv --sort count --top=3 -- "$trace" >"$W/c.csv"
"$TALLY" ops "$trace" --top 3 --sort count --format csv -o "$W/d.csv"
"$TALLY" ops "$trace" --top 3 --sort count --format csv --output="$W/e.csv"
for f in b c d e; do
  cmp -s "$W/a.csv" "$W/$f.csv" || fail "ops output $f differs from --opt value"
done
[ "$(grep -c . "$W/a.csv")" -ge 4 ] || fail "ops --top 3 printed too little"
"$TALLY" gaps "$trace" --threshold-us 5 --format json >"$W/g1.json"
"$TALLY" gaps "$trace" --threshold-us=5.0 --format=json >"$W/g2.json"
cmp -s "$W/g1.json" "$W/g2.json" || fail "gaps --threshold-us=5.0 differs from 5"

# csv has no notes: why a table is empty goes to stderr, one line (text keeps it in the output)
"$TALLY" memory "$trace" --format csv >"$W/m.csv" 2>"$W/m.err" || fail "memory csv failed"
[ "$(wc -l <"$W/m.csv")" = 1 ] || fail "memory csv of a trace without memory: not a header only"
[ "$(wc -l <"$W/m.err")" = 1 ] && grep -q "^tally memory: No memory events in this trace" "$W/m.err" ||
  fail "memory csv: no line on stderr: $(cat "$W/m.err")"
"$TALLY" ops "$trace" --group-by-shape --format csv >/dev/null 2>"$W/s.err"
grep -q "^tally ops: This trace has no input shapes" "$W/s.err" || fail "ops --group-by-shape csv: $(cat "$W/s.err")"
"$TALLY" memory "$trace" >/dev/null 2>"$W/t.err"
[ ! -s "$W/t.err" ] || fail "memory text: something on stderr: $(cat "$W/t.err")"

# an output that cannot be made is named as given, not by the temporary name it is written under
for out in "$W/no/such/dir/x.json.gz" "$W/no/such/dir/x.json"; do
  set +e
  "$TALLY" export "$trace" -o "$out" 2>"$W/e.err"
  rc=$?
  set -e
  [ "$rc" = 1 ] && grep -q "^tally export: $out: cannot create" "$W/e.err" ||
    fail "export to $out: $(cat "$W/e.err")"
done

# --top N caps the findings too (findings.md): the CUDA trace has three, --top 1 keeps the first
gpu_trace="$SRC/tests/data/torch_cuda_mlp.trace.json.gz"
"$TALLY" report "$gpu_trace" --views findings --format csv >"$W/f_all.csv"
"$TALLY" report "$gpu_trace" --views findings --top 1 --format csv >"$W/f_1.csv"
[ "$(grep -c . "$W/f_all.csv")" -ge 3 ] || fail "findings: fewer than two rows without --top"
[ "$(grep -c . "$W/f_1.csv")" = 2 ] || fail "findings --top 1: not one row: $(cat "$W/f_1.csv")"
[ "$(sed -n 2p "$W/f_1.csv")" = "$(sed -n 2p "$W/f_all.csv")" ] || fail "findings --top 1: not the first"

# --- bad values: one line, status 2 -----------------------------------------------------------
expect_usage "$TALLY" report "$trace" --top x
expect_usage "$TALLY" ops "$trace" --top -1
expect_usage "$TALLY" gaps "$trace" --top 99999999999
expect_usage "$TALLY" diff "$trace" "$trace" --top=many
expect_usage "$TALLY" demo --top x
expect_usage "$TALLY" report "$trace" --unit minutes
expect_usage "$TALLY" ops "$trace" --format=xml
expect_usage "$TALLY" gaps "$trace" --threshold-us 0
expect_usage "$TALLY" gaps "$trace" --kernel-wait-us=abc
expect_usage "$TALLY" report "$trace" --asc=yes
expect_usage "$TALLY" report "$trace" --sort
# a sort key no selected view takes: the sortable views named, memcpy and ops among them
expect_usage -m "sortable: operator, kernel, memcpy, ranges, memory, ops, gaps" \
  "$TALLY" report "$trace" --views overview --sort self
expect_usage -m "no selected view has that column" "$TALLY" report "$trace" --views ranges --sort bogus
expect_usage -m "given twice" "$TALLY" report "$trace" "$trace"
expect_usage -m "standard input) given twice: it is read once" "$TALLY" diff - -
# a device the memory records are not of: one line naming the ones they are of
expect_usage -m "no memory records of GPU 1; of: GPU 0" \
  "$TALLY" memory "$SRC/tests/data/torch_cuda_mlp.trace.json.gz" --device gpu1
"$TALLY" memory "$SRC/tests/data/torch_cuda_mlp.trace.json.gz" --device gpu0 >/dev/null ||
  fail "memory --device gpu0 failed"
# the header counts in words: "1 thread", not "1 threads"
"$TALLY" report "$trace" --views perf | head -1 | grep -q ", 1 thread, 0 streams, span" ||
  fail "header: $("$TALLY" report "$trace" --views perf | head -1)"
expect_usage "$TALLY" diff "$trace"
expect_usage "$TALLY" export - </dev/null
expect_usage "$TALLY" run --write bogus -- true
expect_usage "$TALLY" demo --rmsnorm nope
expect_usage "$TALLY" ops "$trace" --sort no_such_key
expect_usage -m "expects a count >= 0, got 'x'" "$TALLY" report "$trace" --top x

# --- loss warnings, the same way in every verb ------------------------------------------------
# a range that never closes: text carries the warning in the output, json in "messages", csv on
# stderr
cat >"$W/open.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
 {"ph": "B", "cat": "user_annotation", "name": "never_closed", "pid": 1, "tid": 1, "ts": 500}
]}
JSON
o="$W/open.json"
for cmd in "report $o" "ops $o" "gaps $o" "diff $o $o"; do
  # shellcheck disable=SC2086
  "$TALLY" $cmd >"$W/w.txt" 2>"$W/w.err" || fail "tally $cmd failed"
  grep -q "warning: 1 range" "$W/w.txt" || fail "tally $cmd: no warning in the text output"
  # shellcheck disable=SC2086
  "$TALLY" $cmd --format json >"$W/w.json"
  grep -q '"messages": \[.*warning: 1 range' "$W/w.json" || fail "tally $cmd: no warning in json"
  # shellcheck disable=SC2086
  "$TALLY" $cmd --format csv >"$W/w.csv" 2>"$W/w.err"
  grep -q "warning: 1 range" "$W/w.err" || fail "tally $cmd: csv: no warning on stderr"
  ! grep -q "warning" "$W/w.csv" || fail "tally $cmd: csv: a warning inside the csv"
done

# --- tally run checks before it starts the program --------------------------------------------
not_started() { # a usage error (expect_usage's arguments) that never ran the program (touch)
  rm -f "$W/started"
  expect_usage "$@"
  [ ! -e "$W/started" ] || fail "$*: the program was started"
}
prog=(touch "$W/started")
not_started -m 'TALLY_SCHEDULE="bogus": expected' \
  env TALLY_SCHEDULE=bogus "$TALLY" run -o "$W/o" -- "${prog[@]}"
not_started -m "unknown setting TALLY_FOO" env TALLY_FOO=1 "$TALLY" run -o "$W/o" -- "${prog[@]}"
not_started -m "did you mean TALLY_SCHEDULE?" \
  env TALLY_SCHEDUEL=3:5 "$TALLY" run -o "$W/o" -- "${prog[@]}"
not_started -m "^tally run: --schedule 'bogus': expected" \
  "$TALLY" run -o "$W/o" --schedule bogus -- "${prog[@]}"
not_started "$TALLY" run -o "$W/o" --name a/b -- "${prog[@]}"
not_started env TALLY_GPU=yes "$TALLY" run -o "$W/o" -- "${prog[@]}"
not_started env TALLY_MEMORY_CAP=lots "$TALLY" run -o "$W/o" -- "${prog[@]}"
not_started "$TALLY" run -o "$W/o" --gpu -- "${prog[@]}"
# and with good settings the program does run
rm -f "$W/started"
TALLY_SCHEDULE=1:3 "$TALLY" run -q -o "$W/o" --schedule 2:4 -- "${prog[@]}" 2>/dev/null ||
  fail "tally run with good settings failed"
[ -e "$W/started" ] || fail "tally run with good settings did not start the program"
echo "cli_options: ok"
