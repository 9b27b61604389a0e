#!/usr/bin/env bash
# fork.sh — a child made by fork records into its own file and holds none of its parent's
# records, whatever the file name setting says; a child that only execs (or makes no tally call)
# creates no file. prog_fork uses the fixed name "same".
set -euo pipefail
: "${BUILD:?}" "${TALLY:?}"
PROG="$BUILD/tests/prog_fork"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "fork: $*" >&2; exit 1; }

# the calls (name,calls) of a trace, from the ops table
calls() { "$TALLY" report "$1" --views ops --format csv 2>/dev/null | awk -F, 'NR > 1 && NF > 2 {print $1 "," $NF}' | sort; }

mkdir "$work/rec"
child=$("$PROG" "$work/rec" record) || fail "prog_fork record failed"
ls "$work/rec"/*.tally >/dev/null
[ -f "$work/rec/same.tally" ] || fail "no parent file same.tally: $(ls "$work/rec")"
[ -f "$work/rec/same-$child.tally" ] || fail "no child file same-$child.tally: $(ls "$work/rec")"
[ "$(ls "$work/rec" | wc -l)" = 2 ] || fail "expected 2 files: $(ls "$work/rec")"
calls "$work/rec/same.tally" >"$work/parent.txt"
calls "$work/rec/same-$child.tally" >"$work/child.txt"
grep -qx "parent.before,1" "$work/parent.txt" || fail "parent file: $(cat "$work/parent.txt")"
grep -qx "parent.after,1" "$work/parent.txt" || fail "parent file: $(cat "$work/parent.txt")"
grep -q "child" "$work/parent.txt" && fail "the parent's file holds the child's records"
grep -qx "child.work,5" "$work/child.txt" || fail "child file: $(cat "$work/child.txt")"
grep -q "parent" "$work/child.txt" && fail "the child's file holds the parent's records: $(cat "$work/child.txt")"
# the pop of the range the parent left open is not an error in the child
grep -q "pops without" <<<"$("$TALLY" report "$work/rec/same-$child.tally" 2>&1)" &&
    fail "the child's pop of the inherited range counted as an error"

for mode in exec quiet; do
    mkdir "$work/$mode"
    "$PROG" "$work/$mode" "$mode" >/dev/null || fail "prog_fork $mode failed"
    [ "$(ls "$work/$mode")" = "same.tally" ] || fail "$mode: expected only same.tally: $(ls "$work/$mode")"
done
echo "fork: ok"
