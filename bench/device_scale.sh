#!/usr/bin/env bash
# device_scale.sh — issue 12's figures on a machine with many cores (the GPU machine: 16), in
# one call: MB/s, CPU per MB and peak RSS of `bench_json scale` at 1-16 threads beside Python's
# json.load; where a 16-thread read of 2 GB goes (TALLY_READ_STATS: parse, merge, the finish's
# phases, each view); a .json.gz of 1 GB; a 320 MB .tally read at each thread count (decoded in
# parts), and a GPU-shaped .tally (one thread and a collector) at 1, 2 and 16.
#
#   OUT=out BIN=build-static bash bench/device_scale.sh
#
# BIN: a build folder holding tally, bench/bench_json and bench/bench_tally_export (a static
# build made elsewhere travels: cmake -DCMAKE_EXE_LINKER_FLAGS=-static, ZLIB_LIBRARY and
# SQLite3_LIBRARY pointing at the .a files). Data go to $DATA (default /tmp/tally-bench-data),
# written there when missing. SIZES, THREADS, BIG, GZ, RANGES shrink it for a trial run. About 4 minutes on 16 cores; results in $OUT (6 files).
set -uo pipefail
OUT=${OUT:-$PWD/out}
BIN=${BIN:-build}
DATA=${DATA:-/tmp/tally-bench-data}
THREADS=${THREADS:-1,2,4,8,16}
SIZES=${SIZES:-10,100,1024,2048}
BIG=${BIG:-2048}
GZ=${GZ:-1024}
RANGES=${RANGES:-5000000}
mkdir -p "$OUT" "$DATA"
t_start=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - t_start)) s] $*"; }

stamp "machine"
{
    grep -m1 "model name" /proc/cpuinfo
    nproc
    grep MemTotal /proc/meminfo
    uptime
    nvidia-smi -L 2>/dev/null
} | tee "$OUT/machine.txt"

stamp "bench_json scale: sizes $SIZES MB; threads $THREADS; 3 rounds"
"$BIN/bench/bench_json" scale --dir "$DATA" --sizes "$SIZES" --threads "$THREADS" \
    --repeat 3 --python-max-gb 12 2>&1 | tee "$OUT/scale.txt"

stamp "where a read of 2 GB goes (TALLY_READ_STATS), 16 / 4 / 1 threads"
for j in 16 4 1; do
    echo "--- -j $j"
    s=$(date +%s%N)
    TALLY_READ_STATS=1 "$BIN/tally" report "$DATA/kineto_${BIG}mb.json" -j "$j" 2>&1 >/dev/null |
        grep -v "^tally: reading"
    echo "wall $((($(date +%s%N) - s) / 1000000)) ms"
done 2>&1 | tee "$OUT/stats.txt"
"$BIN/bench/bench_json" read "$DATA/kineto_${BIG}mb.json" --threads 16 --repeat 3 --no-progress \
    2>&1 | tee -a "$OUT/stats.txt"

stamp ".json.gz of the 1 GB trace (gzip -1), read at 16 threads and at 1"
if [ ! -f "$DATA/kineto_${GZ}mb.json.gz" ]; then
    gzip -1 -c "$DATA/kineto_${GZ}mb.json" >"$DATA/kineto_${GZ}mb.json.gz"
fi
{
    for j in 16 1; do
        echo "--- threads $j"
        "$BIN/bench/bench_json" read "$DATA/kineto_${GZ}mb.json.gz" --threads "$j" --repeat 3 \
            --no-progress
    done
    echo "--- gzip -dc alone"
    s=$(date +%s%N)
    gzip -dc "$DATA/kineto_${GZ}mb.json.gz" >/dev/null
    echo "wall $((($(date +%s%N) - s) / 1000000)) ms"
} 2>&1 | tee "$OUT/gz.txt"

stamp ".tally: 5 M ranges on 4 threads + a collector, read at each thread count (decoded in parts)"
{
    echo "--- TALLY_THREADS=1 (written here)"
    TALLY_THREADS=1 "$BIN/bench/bench_tally_export" --keep "$DATA/r5m.tally" --read-only --runs 3 \
        --ranges "$RANGES"
    for j in ${THREADS//,/ }; do
        [ "$j" = 1 ] && continue
        echo "--- TALLY_THREADS=$j"
        TALLY_THREADS=$j "$BIN/bench/bench_tally_export" --file "$DATA/r5m.tally" --runs 3
        TALLY_READ_STATS=1 "$BIN/tally" report "$DATA/r5m.tally" -j "$j" --views perf 2>&1 \
            >/dev/null | grep -E "decoded|finish"
    done
    if [ -x "$BIN/tests/test_tally_reader" ]; then
        echo "--- a GPU program's shape: 1 M ranges on one thread, 1 M launches in a collector"
        "$BIN/tests/test_tally_reader" --write-launches "$DATA/l1m.tally" 1000000
        for j in 1 2 16; do
            echo "--- TALLY_THREADS=$j"
            TALLY_THREADS=$j "$BIN/bench/bench_tally_export" --file "$DATA/l1m.tally" --runs 3
        done
    fi
} 2>&1 | tee "$OUT/tally.txt"
stamp "done"
