#!/usr/bin/env bash
# record_crash.sh — a program that records 3 ranges every 3 ms on its main thread (and bursts on
# a worker thread) dies after 2 s: killed with SIGKILL, by a segfault, by abort. Its trace must
# hold >= 95 % of the main-thread ranges it completed up to 100 ms before it died (the flush
# interval is 50 ms). tool_crash_loss is bench/bench_crash_loss.c; it prints what it counted.
set -euo pipefail
: "${BUILD:?}"
"$BUILD/tests/tool_crash_loss" --check --repeat 1 --seconds 2 --signal all
