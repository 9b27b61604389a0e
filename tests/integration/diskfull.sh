#!/usr/bin/env bash
# diskfull.sh — a full disk (ENOSPC, simulated by shim_enospc.so) and a file-size limit (ulimit
# -f: EFBIG, and SIGXFSZ for whoever writes past it) stop the recording cleanly: the program is
# not killed and goes on, tally_stop returns TALLY_EIO, one line names the file and the system
# error with the count of what was lost, and the trace reads back up to where writing stopped.
set -euo pipefail
: "${BUILD:?}" "${TALLY:?}"
PROG="$BUILD/tests/prog_diskfull"
SHIM="$BUILD/tests/libshim_enospc.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "diskfull: $*" >&2; exit 1; }

check() { # case dir errtext
    local name=$1 dir=$2 text=$3
    grep -q "tally_stop: TALLY_EIO; lost [1-9][0-9]*; the program goes on" "$dir/out.txt" ||
        fail "$name: $(cat "$dir/out.txt" "$dir/err.txt")"
    local lines
    lines=$(grep -c "^tally: writing .*full.tally failed: $text; [1-9][0-9]* records lost" "$dir/err.txt" || true)
    [ "$lines" = 1 ] || fail "$name: expected one line naming the file and '$text' on stderr: $(cat "$dir/err.txt")"
    "$TALLY" report "$dir/full.tally" --views ops --format csv >"$dir/ops.csv" 2>"$dir/report.err" ||
        fail "$name: the trace does not read back: $(cat "$dir/report.err")"
    local n
    n=$(awk -F, '$1 == "work" {print $NF}' "$dir/ops.csv")
    [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -lt 2000000 ] || fail "$name: $n work ranges read back"
    echo "diskfull: $name ok ($n of 2000000 ranges written before the error)"
}

# a full disk after 4 MB of trace (in a sanitizer build the shim, instrumented too, needs the
# sanitizer's runtime preloaded before it)
mkdir "$work/enospc"
[ -f "$SHIM" ] || fail "no $SHIM"
preload="$SHIM"
san=$(sed -n 's/^TALLY_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
case "$san" in
*address*) preload="$(cc -print-file-name=libasan.so):$SHIM" ;;
*thread*) preload="$(cc -print-file-name=libtsan.so):$SHIM" ;;
esac
env LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" TALLY_TEST_FULL_AFTER=4000000 \
    "$PROG" "$work/enospc" >"$work/enospc/out.txt" 2>"$work/enospc/err.txt" ||
    fail "ENOSPC: the program failed ($?): $(cat "$work/enospc/err.txt")"
check ENOSPC "$work/enospc" "No space left on device"

# a file-size limit of 4 MB (ulimit -f counts 1024-byte blocks)
mkdir "$work/efbig"
set +e
(ulimit -f 4000 && exec "$PROG" "$work/efbig") >"$work/efbig/out.txt" 2>"$work/efbig/err.txt"
st=$?
set -e
[ "$st" = 0 ] || fail "EFBIG: the program exited $st (153 = killed by SIGXFSZ): $(cat "$work/efbig/err.txt")"
check EFBIG "$work/efbig" "File too large"
echo "diskfull: ok"
