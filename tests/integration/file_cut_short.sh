#!/usr/bin/env bash
# file_cut_short.sh — a trace that another program cuts short while tally reads it (a training
# run rewriting its trace file) is one line on stderr and exit status 1, not a crash (SIGBUS on
# the mapped pages past the new end) nor a parse error: a .tally file (mapped whole), cut by
# shim_cut.so just before tally maps it, a JSON file read in parallel windows and the same file
# read in one pass, cut just before tally reads past 1 MB. The same files, whole, read cleanly.
set -euo pipefail
: "${BUILD:?}" "${TALLY:?}"
SHIM="$BUILD/tests/libshim_cut.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "file_cut_short: $*" >&2; exit 1; }
[ -f "$SHIM" ] || fail "no $SHIM"

preload="$SHIM"
san=$(sed -n 's/^TALLY_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
case "$san" in
*address*) preload="$(cc -print-file-name=libasan.so):$SHIM" ;;
*thread*) preload="$(cc -print-file-name=libtsan.so):$SHIM" ;;
esac

# the inputs: the .tally trace of the README's loop (prog_readme_steps), and a JSON trace of
# 3.6 MB read in windows of 64 kB
TALLY_OUTPUT_DIR="$work/rec" TALLY_NAME=rec "$BUILD/tests/prog_readme_steps" 2>"$work/rec.err" ||
    fail "prog_readme_steps: $(cat "$work/rec.err")"
cp "$work"/rec/rec*.tally "$work/t.cutme.tally"
awk 'BEGIN {
    print "{\"traceEvents\": ["
    for (i = 0; i < 40000; i++)
        printf "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 1},\n", i % 50, 2 * i
    print "{\"ph\": \"X\", \"name\": \"last\", \"pid\": 1, \"tid\": 1, \"ts\": 80000, \"dur\": 1}\n]}"
}' >"$work/t.cutme.json"

run_cut() { # name file cut_to [threads]: cut the file as it is mapped; expect the one line and
    local name=$1 file=$2 to=$3 threads=${4:-2} # status 1
    cp "$file" "$work/x.cutme.${file##*.}"
    set +e
    env LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0:handle_sigbus=0" \
        TSAN_OPTIONS="${TSAN_OPTIONS:-}:handle_sigbus=0" \
        TALLY_TEST_CUT_NAME=".cutme.${file##*.}" TALLY_TEST_CUT_TO="$to" TALLY_READ_PART=65536 \
        "$TALLY" report "$work/x.cutme.${file##*.}" -j "$threads" >"$work/$name.out" 2>"$work/$name.err"
    local st=$?
    set -e
    [ "$st" = 1 ] || fail "$name: exit status $st, expected 1 (135 = killed by SIGBUS): $(cat "$work/$name.err")"
    local lines
    lines=$(grep -c "^tally report: $work/x.cutme.${file##*.}: the file was cut short while it was read" "$work/$name.err" || true)
    [ "$lines" = 1 ] || fail "$name: expected the one line on stderr, got: $(cat "$work/$name.err")"
    [ "$(wc -l <"$work/$name.err")" = 1 ] || fail "$name: more than one line on stderr: $(cat "$work/$name.err")"
    echo "file_cut_short: $name ok: $(cat "$work/$name.err")"
}

# whole, they read
"$TALLY" report "$work/t.cutme.tally" --views perf >/dev/null || fail "the .tally file does not read"
TALLY_READ_PART=65536 "$TALLY" report "$work/t.cutme.json" -j 2 --views ops >"$work/whole.txt" ||
    fail "the JSON file does not read"
grep -q "op49" "$work/whole.txt" || fail "the JSON file read without op49: $(cat "$work/whole.txt")"

# the .tally file is cut to nothing (as a program rewriting it does first): every page faults
run_cut tally "$work/t.cutme.tally" 0
# the JSON is cut at 1 MB: its windows past the first 16 start beyond the end
run_cut json "$work/t.cutme.json" 1000000
# one thread: the one pass reads past 1 MB
run_cut json_one_pass "$work/t.cutme.json" 1000000 1
echo "file_cut_short: ok"
