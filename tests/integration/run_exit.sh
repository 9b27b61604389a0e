#!/usr/bin/env bash
# run_exit.sh — `tally run` as a launcher: the program's stdout untouched, its exit status
# passed through (128+signal when killed), SIGTERM forwarded, a missing program -> 127, usage
# errors -> 2; without a CUDA driver a one-line message and the program runs normally.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"

out=$("$TALLY" run -o "$W/o" -- echo hello 2> "$W/err1")
[ "$out" = "hello" ] || { echo "stdout changed: '$out'"; exit 1; }

set +e
"$TALLY" run -o "$W/o" -- sh -c 'exit 7' 2> "$W/err2"
rc=$?
[ $rc = 7 ] || { echo "exit status $rc, expected 7"; cat "$W/err2"; exit 1; }

"$TALLY" run -o "$W/o" -- sh -c 'kill -KILL $$' 2> "$W/err3"
rc=$?
[ $rc = 137 ] || { echo "killed program: status $rc, expected 137"; exit 1; }
grep -q "killed by signal 9" "$W/err3" || { echo "no 'killed' line"; cat "$W/err3"; exit 1; }

"$TALLY" run -o "$W/o" -- "$W/does-not-exist" 2> "$W/err4"
rc=$?
[ $rc = 127 ] || { echo "missing program: status $rc, expected 127"; exit 1; }
grep -q "cannot run" "$W/err4" || { cat "$W/err4"; exit 1; }

"$TALLY" run 2> "$W/err5"
[ $? = 2 ] || { echo "no program: expected status 2"; exit 1; }
"$TALLY" run --bogus -- true 2> "$W/err6"
[ $? = 2 ] || { echo "bad option: expected status 2"; exit 1; }
[ "$(wc -l < "$W/err6")" = 1 ] || { echo "bad option: expected one line"; cat "$W/err6"; exit 1; }
"$TALLY" run --help > "$W/help" || { echo "--help failed"; exit 1; }
grep -q "^usage: tally run" "$W/help"

# SIGTERM to tally reaches the program; tally returns 128+15 promptly.
start=$(date +%s)
"$TALLY" run -o "$W/o" -- sleep 30 2> "$W/err7" &
pid=$!
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
set -e
[ $rc = 143 ] || { echo "SIGTERM: status $rc, expected 143"; cat "$W/err7"; exit 1; }
[ $(($(date +%s) - start)) -lt 10 ] || { echo "SIGTERM not forwarded in time"; exit 1; }

# No driver: one clear line, the program runs normally.
if ! grep -q 'libcuda\.so\.1' <<<"$(ldconfig -p 2>/dev/null)"; then
    grep -q "no CUDA driver" "$W/err2" || { echo "no driver message missing"; cat "$W/err2"; exit 1; }
    [ "$(grep -c "no CUDA driver" "$W/err2")" = 1 ]
fi
# The traces run reports are the program's: a .tally already in the folder (copied there a
# moment before, an earlier run's) is left alone; one the program writes is reported.
mkdir -p "$W/src" "$W/old"
TALLY_OUTPUT_DIR="$W/src" TALLY_WRITE=tally "$BUILD/tests/prog_ranks" 2>/dev/null
made=$(ls "$W/src"/*.tally | head -1)
cp "$made" "$W/old/old.tally"
"$TALLY" run -o "$W/old" -- true 2> "$W/err8" || { echo "run of true failed"; cat "$W/err8"; exit 1; }
grep -q "no trace was written" "$W/err8" || { echo "an old trace taken for the program's"; cat "$W/err8"; exit 1; }
! grep -q "old" "$W/err8" || { echo "old.tally reported"; cat "$W/err8"; exit 1; }
[ ! -e "$W/old/old.pt.trace.json.gz" ] || { echo "old.tally converted"; exit 1; }
"$TALLY" run -o "$W/old" -q -- cp "$made" "$W/old/new.tally" 2> "$W/err9" ||
    { echo "run of cp failed"; cat "$W/err9"; exit 1; }
[ -e "$W/old/new.pt.trace.json.gz" ] || { echo "the program's trace not converted"; cat "$W/err9"; exit 1; }
[ ! -e "$W/old/old.pt.trace.json.gz" ] || { echo "old.tally converted with the new one"; exit 1; }
# several windows are listed in their names' order (w1, w9, w10), whatever the folder's
mkdir -p "$W/order"
"$TALLY" run -o "$W/order" -- sh -c "for w in 10 1 9; do cp '$made' '$W/order/w'\$w.tally; done" \
    2> "$W/err10" || { echo "run of the copies failed"; cat "$W/err10"; exit 1; }
got=$(sed -n 's|^tally run: wrote .*/\(w[0-9]*\)\.tally$|\1|p' "$W/err10" | tr '\n' ' ')
[ "$got" = "w1 w9 w10 " ] || { echo "windows listed as '$got'"; cat "$W/err10"; exit 1; }
echo "run_exit: ok"
