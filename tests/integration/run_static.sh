#!/usr/bin/env bash
# run_static.sh — `tally run` on a statically linked program that uses NVTX. Injection would
# crash it (NVTX dlopens libtally.so into a process that has no dynamic loader: SIGSEGV), so
# tally run looks at the program's ELF headers first and runs it unprofiled, with one line
# saying so: its output and exit status are the program's, found by path, on PATH, or as the
# interpreter of a "#!" script.
set -euo pipefail
. "$(dirname "$0")/nvtx_common.sh.inc"
fail() { echo "run_static: $*" >&2; exit 1; }
if ! have_nvtx; then
    echo "skipped: no NVTX headers (CUDA_INC)"
    exit 77
fi
cat > "$W/static_nvtx.c" <<'C'
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    nvtxRangePushA("work");
    printf("static program: %d argument(s), first '%s'\n", argc - 1, argc > 1 ? argv[1] : "");
    nvtxMarkA("done");
    nvtxRangePop();
    return argc > 1 ? 7 : 0;
}
C
if ! cc -std=c11 -static -I"$CUDA_INC" -o "$W/static_nvtx" "$W/static_nvtx.c" 2> "$W/cc.err"; then
    echo "skipped: cannot link a static program here: $(tail -1 "$W/cc.err")"
    exit 77
fi
if grep -q INTERP <<<"$(readelf -l "$W/static_nvtx")"; then
    echo "skipped: cc -static made a dynamically linked program"
    exit 77
fi
msg="is statically linked: tally cannot be injected into it; running it unprofiled"

check() { # $1 = expected status, $2 = expected output, rest = the command
    local want_rc=$1 want_out=$2
    shift 2
    set +e
    local out
    out=$("$@" 2> "$W/err")
    local rc=$?
    set -e
    [ "$rc" = "$want_rc" ] || fail "$*: status $rc, expected $want_rc; stderr: $(cat "$W/err")"
    [ "$out" = "$want_out" ] || fail "$*: output '$out', expected '$want_out'"
    [ "$(grep -c "$msg" "$W/err")" = 1 ] || fail "$*: expected one line saying so: $(cat "$W/err")"
    ! grep -qi "segmentation\|killed by signal" "$W/err" || fail "$*: $(cat "$W/err")"
}
check 7 "static program: 1 argument(s), first 'x'" "$TALLY" run -o "$W/o" -- "$W/static_nvtx" x
check 0 "static program: 0 argument(s), first ''" "$TALLY" run -o "$W/o" -- "$W/static_nvtx"
# found on PATH, as execvp finds it
mkdir -p "$W/bin"
cp "$W/static_nvtx" "$W/bin/static-nvtx-prog"
check 7 "static program: 1 argument(s), first 'y'" \
    env PATH="$W/bin:$PATH" "$TALLY" run -o "$W/o" -- static-nvtx-prog y
# a script whose interpreter is the static program
printf '#!%s\n' "$W/static_nvtx" > "$W/script"
chmod +x "$W/script"
check 7 "static program: 1 argument(s), first '$W/script'" "$TALLY" run -o "$W/o" -- "$W/script"
# a dynamically linked program is still injected (no such line)
"$TALLY" run -q -o "$W/o" -- true 2> "$W/err" || fail "tally run true failed: $(cat "$W/err")"
! grep -q "$msg" "$W/err" || fail "a dynamic program was called static"
echo "run_static: ok"
