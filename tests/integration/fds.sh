#!/usr/bin/env bash
# fds.sh — a program that closes its standard streams and reopens them while recording: the
# trace file never takes fd 0-2 (it is >= 3 and close-on-exec), the program's output goes where
# the program sent it, and the trace reads back whole.
set -euo pipefail
: "${BUILD:?}" "${TALLY:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "fds: $*" >&2; exit 1; }
"$BUILD/tests/prog_fds" "$work" || fail "prog_fds failed: $(tail -1 "$work/out2.txt" 2>/dev/null)"
grep -q "fds: stdin=0 stdout=1 trace_fd=[3-9].* cloexec=1 ok" "$work/out2.txt" || fail "$(tail -1 "$work/out2.txt")"
[ "$(grep -c "of the program's own output" "$work/out2.txt")" = 2000 ] || fail "the program's output is not whole"
calls=$("$TALLY" report "$work/fds.tally" --views ops --format csv | awk -F, '$1 == "print" {print $NF}')
[ "$calls" = 2000 ] || fail "expected 2000 print ranges in the trace, found '$calls'"
echo "fds: ok"
