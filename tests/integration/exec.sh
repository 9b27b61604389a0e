#!/usr/bin/env bash
# exec.sh — a program that execs itself keeps the trace it wrote before the exec whole: the new
# image (same pid, so the same default name) writes a new file instead of truncating it.
set -euo pipefail
: "${BUILD:?}" "${TALLY:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "exec: $*" >&2; exit 1; }
calls() { "$TALLY" report "$1" --views ops --format csv 2>/dev/null | awk -F, 'NR > 1 && NF > 2 {print $1 "," $NF}' | sort; }

"$BUILD/tests/prog_exec" "$work" || fail "prog_exec failed"
files=$(cd "$work" && ls *.tally)
[ "$(echo "$files" | wc -l)" = 2 ] || fail "expected 2 traces, found: $files"
first=$(echo "$files" | grep -v -- '-1\.tally$') || fail "no first file: $files"
second=$(echo "$files" | grep -- '-1\.tally$') || fail "no second file named ...-1.tally: $files"
[ "${second%-1.tally}" = "${first%.tally}" ] || fail "the second file is not named after the first: $files"
grep -qx "first.work,3" <<<"$(calls "$work/$first")" || fail "$first: $(calls "$work/$first")"
grep -qx "second.work,2" <<<"$(calls "$work/$second")" || fail "$second: $(calls "$work/$second")"
grep -q second <<<"$(calls "$work/$first")" && fail "$first holds the second image's records"
echo "exec: ok"
