#!/usr/bin/env bash
# lib_symbols.sh — libtally, the library a program links or gets injected, is the recorder and the
# collectors only: it exports the public API and the two injection entry points, defines and
# needs nothing of the trace model, readers, views or renderers (tl_*), and does not need zlib.
set -euo pipefail
: "${LIBTALLY:?}" "${BUILD:?}"
fail() { echo "lib_symbols: $*" >&2; exit 1; }
command -v nm >/dev/null || fail "nm not found"
static="$(dirname "$LIBTALLY")/libtally.a"
[ -f "$static" ] || fail "no static library beside $LIBTALLY"

# (a sanitizer build adds its own __asan/__odr_asan/__ubsan symbols: not ours)
exported=$(nm -D --defined-only "$LIBTALLY" | awk '{print $3}' | grep -Ev '^(__odr_asan|__asan|__ubsan|__sanitizer|__tsan)' || true)
[ -n "$exported" ] || fail "libtally.so exports nothing"
bad=$(echo "$exported" | grep -Ev '^(tally_[a-z_0-9]+|tally__recording|InitializeInjection|InitializeInjectionNvtx2)$' || true)
[ -z "$bad" ] || fail "libtally.so exports symbols beyond the API: $bad"
grep -qx tally_push <<<"$exported" || fail "tally_push is not exported"
grep -qx InitializeInjectionNvtx2 <<<"$exported" || fail "the NVTX entry point is not exported"

for lib in "$LIBTALLY" "$static"; do
    opt=""; [ "$lib" = "$LIBTALLY" ] && opt="-D"
    model=$(nm $opt "$lib" 2>/dev/null | awk '$NF ~ /^tl_/ {print $NF}' | sort -u)
    [ -z "$model" ] || fail "$(basename "$lib") holds trace-model code: $(echo $model | head -c 300)"
    z=$(nm -u $opt "$lib" 2>/dev/null | awk '{print $NF}' | grep -E '^(gz|deflate|inflate|crc32)' || true)
    [ -z "$z" ] || fail "$(basename "$lib") uses zlib: $z"
done
if grep NEEDED <<<"$(readelf -d "$LIBTALLY")" | grep -q libz; then fail "libtally.so needs libz"; fi
n=$(echo "$exported" | wc -l)
echo "lib_symbols: ok ($n exported symbols, no trace model, no zlib)"
