#!/bin/sh
# same_reports.sh OLD_TALLY NEW_TALLY FILE... — check that two builds of tally print the same
# reports: `tally report FILE` (text) and `tally report FILE --format json` of each FILE must be
# byte-identical. For changes that must not change what tally prints (the reader, the model's
# finish pass, the views' internals). Prints one line per file and exits 1 on any difference,
# keeping both outputs in $TMPDIR for a diff.
set -u
if [ $# -lt 3 ]; then
    echo "usage: same_reports.sh OLD_TALLY NEW_TALLY FILE..." >&2
    exit 2
fi
old=$1
new=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/same_reports.XXXXXX") || exit 1
status=0
for f in "$@"; do
    b=$(basename "$f")
    for fmt in text json; do
        # stderr apart: the progress line of a long read differs from run to run; an error
        # message still counts (--no-progress is not in older builds)
        "$old" report "$f" --format "$fmt" >"$dir/$b.$fmt.old" 2>"$dir/$b.$fmt.old.err"
        "$new" report "$f" --format "$fmt" >"$dir/$b.$fmt.new" 2>"$dir/$b.$fmt.new.err"
        tr '\r' '\n' <"$dir/$b.$fmt.old.err" | grep -v -e '^reading ' -e '^ *$' >>"$dir/$b.$fmt.old"
        tr '\r' '\n' <"$dir/$b.$fmt.new.err" | grep -v -e '^reading ' -e '^ *$' >>"$dir/$b.$fmt.new"
        rm -f "$dir/$b.$fmt.old.err" "$dir/$b.$fmt.new.err"
        if cmp -s "$dir/$b.$fmt.old" "$dir/$b.$fmt.new"; then
            rm -f "$dir/$b.$fmt.old" "$dir/$b.$fmt.new"
            echo "same   $fmt $f ($(wc -c <"$f") bytes)"
        else
            echo "DIFFER $fmt $f: diff $dir/$b.$fmt.old $dir/$b.$fmt.new"
            status=1
        fi
    done
done
[ $status = 0 ] && rmdir "$dir"
exit $status
