#!/usr/bin/env bash
# check_tally_export.sh BENCH — run by ctest: bench_tally_export on a small generated file prints
# each of its figures once, labelled (the decoder, the model read, the pages, the model and the
# streaming export to .json and .json.gz), and exits 0. A figure added to the program without its
# label once made it loop over labels past the end of its table.
set -euo pipefail
bench=$(realpath "${1:?path of bench_tally_export}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
out=$(TMPDIR="$work" "$bench" --ranges 20000 --runs 1)
fail() { echo "check_tally_export: $*" >&2; echo "$out" >&2; exit 1; }
for label in '^decode ' '^read ' '^pages ' '^model .* \.json   :' '^model .* \.json\.gz:' \
    '^stream .* \.json   :' '^stream .* \.json\.gz:'; do
    n=$(grep -c -E "$label" <<<"$out" || true)
    [ "$n" = 1 ] || fail "expected one line matching '$label', found $n"
done
[ "$(wc -l <<<"$out")" = 10 ] || fail "expected 10 lines of output"
echo "check_tally_export: every figure printed once"
