#!/usr/bin/env bash
# record_kill.sh — a program recording on two threads is killed (kill -9, then SIGTERM in a second
# run); its .tally file must read up to its last complete buffer, with events in it, through the
# reader (test_tally_reader --count) and through `tally report`.
set -euo pipefail

: "${BUILD:?}" "${TALLY:?}"
PROG="$BUILD/tests/prog_record_kill"
READ="$BUILD/tests/test_tally_reader"
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

run_and_kill() { # signal
    local sig=$1 d="$work/$1"
    mkdir -p "$d"
    "$PROG" "$d" & pid=$!
    for _ in $(seq 1 100); do [ -f "$d/ready" ] && break; sleep 0.05; done
    [ -f "$d/ready" ] || { echo "program never got ready"; exit 1; }
    sleep 0.2
    kill "-$sig" "$pid"
    set +e; { wait "$pid"; } 2>/dev/null; local st=$?; set -e
    pid=
    [ "$st" -ge 128 ] || { echo "SIG$sig: exit status $st, expected death by signal"; exit 1; }
    local f="$d/kill.tally"
    [ -s "$f" ] || { echo "SIG$sig: no trace file"; exit 1; }
    local n
    n=$("$READ" --count "$f")
    [ "$n" -gt 1000 ] || { echo "SIG$sig: only $n events read back from $f"; exit 1; }
    # a file cut in the middle of a chunk still reads (up to the chunk before)
    local size cut
    size=$(stat -c %s "$f")
    cut=$((size - 1000))
    head -c "$cut" "$f" >"$d/cut.tally"
    "$READ" --count "$d/cut.tally" >/dev/null
    "$TALLY" report "$f" >"$d/report.txt" 2>"$d/report.err" || {
        echo "SIG$sig: tally report failed"; cat "$d/report.err"; exit 1; }
    echo "SIG$sig: $n events"
}

run_and_kill KILL
run_and_kill TERM
echo "record_kill: ok"
