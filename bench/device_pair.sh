#!/usr/bin/env bash
# device_pair.sh — before and after on the many-core machine: two builds read the same
# generated Kineto trace in alternating runs (`bench_json read FILE --threads T --oneline`: load
# and the default report, in a fresh process), then the new one says where its time goes
# (TALLY_READ_STATS).
#
#   OUT=out bash bench/device_pair.sh OLD_BIN NEW_BIN
#
# OLD_BIN, NEW_BIN: build folders holding tally and bench/bench_json (static builds travel).
# SIZE (MB, default 2048), THREADS (default "16 4 1"), ROUNDS (default 3), DATA (where the trace
# is written, default /tmp/tally-bench-data). About 2 minutes on 16 cores.
set -uo pipefail
if [ $# -ne 2 ]; then
    echo "usage: device_pair.sh OLD_BIN NEW_BIN" >&2
    exit 2
fi
OLD=$1
NEW=$2
OUT=${OUT:-$PWD/out}
DATA=${DATA:-/tmp/tally-bench-data}
SIZE=${SIZE:-2048}
THREADS=${THREADS:-16 4 1}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT" "$DATA"
F="$DATA/kineto_${SIZE}mb.json"
{
    grep -m1 "model name" /proc/cpuinfo
    nproc
    uptime
} | tee "$OUT/pair_machine.txt"
[ -f "$F" ] || "$NEW/bench/bench_json" gen "$F" --mb "$SIZE" >/dev/null 2>&1 || exit 1
cat "$F" >/dev/null
: >"$OUT/pair_runs.txt"
for t in $THREADS; do
    for r in $(seq "$ROUNDS"); do
        for b in old new; do
            bin=$OLD
            [ $b = new ] && bin=$NEW
            line=$("$bin/bench/bench_json" read "$F" --threads "$t" --oneline --no-progress)
            echo "$b $t $r $line" | tee -a "$OUT/pair_runs.txt"
        done
    done
done
uptime
# medians per build and thread count: wall and CPU (user + sys) of load + report
python3 - "$OUT/pair_runs.txt" "$(stat -c %s "$F")" <<'EOF' | tee "$OUT/pair_summary.txt"
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
mb = int(sys.argv[2]) / 1e6
print(f"{mb:.0f} MB trace, medians of the rounds (wall s, MB/s, CPU s); new / old")
print(f"{'threads':>8} {'old s':>7} {'new s':>7} {'old MB/s':>9} {'new MB/s':>9} {'old CPU':>8} {'new CPU':>8} {'new/old':>8}")
for t in dict.fromkeys(r[1] for r in runs):
    w = {b: statistics.median(float(r[4]) for r in runs if r[0] == b and r[1] == t) for b in ("old", "new")}
    c = {b: statistics.median(float(r[5]) + float(r[6]) for r in runs if r[0] == b and r[1] == t) for b in ("old", "new")}
    print(f"{t:>8} {w['old']:7.3f} {w['new']:7.3f} {mb / w['old']:9.0f} {mb / w['new']:9.0f} {c['old']:8.2f} {c['new']:8.2f} {w['new'] / w['old']:8.3f}")
EOF
for j in 16 1; do
    echo "--- new, -j $j"
    TALLY_READ_STATS=1 "$NEW/tally" report "$F" -j "$j" 2>&1 >/dev/null | tr '\r' '\n' |
        grep -v -e '^reading ' -e '^ *$'
done 2>&1 | tee "$OUT/pair_stats.txt"
