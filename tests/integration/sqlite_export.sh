#!/usr/bin/env bash
# sqlite_export: `tally export FILE -o OUT.sqlite` writes a database whose views give the
# numbers of the reports: kernel_summary those of `tally report --views kernel`, ops_summary
# those of `tally ops` (all but the rows of [memory] records, which it leaves out), on every
# trace of ../shared/traces (when there), on a `tally demo` trace, and on a hand-built trace
# whose numbers are known; --format sqlite and a .db name choose it too; a path that cannot be
# written is one line and exit 1, and leaves nothing; an existing file is replaced.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "sqlite_export: $*" >&2; exit 1; }
py=/usr/bin/python3
[ -x "$py" ] || { echo "sqlite_export: no $py"; exit 77; }

# compare FILE: export it and check both views against the reports' JSON
compare() {
  local in=$1 db=$work/cmp.sqlite
  rm -f "$db"
  "$TALLY" export "$in" -o "$db" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; fail "$in: export failed"; }
  "$TALLY" report "$in" --views kernel --format json >"$work/kernel.json" 2>/dev/null
  "$TALLY" ops "$in" --format json >"$work/ops.json" 2>/dev/null
  "$py" - "$db" "$work/kernel.json" "$work/ops.json" "$in" <<'PY' || fail "$in: the views differ from the reports"
import json, sqlite3, sys
db, kj, oj, name = sys.argv[1:]
c = sqlite3.connect(db)
bad = []
def us(ns):
    return None if ns is None else round(ns / 1000.0, 3)
def near(a, b, tol):
    return (a is None and b in (None, 0)) or (a is not None and b is not None and abs(a - b) <= tol)
# kernel view: one row per name
want = {r["name"]: r for r in json.load(open(kj))["kernel"]["rows"]}
got = {r[0]: r for r in c.execute(
    "SELECT name, calls, total_ns, avg_ns, max_ns, min_ns, ratio_pct FROM kernel_summary")}
if set(want) != set(got):
    bad.append("kernel names: %d in the report, %d in the view" % (len(want), len(got)))
for k in set(want) & set(got):
    w, g = want[k], got[k]
    if (g[1] != w["calls"] or us(g[2]) != w["total_us"] or us(g[3]) != w["avg_us"] or
            us(g[4]) != w["max_us"] or us(g[5]) != w["min_us"] or
            not near(g[6], w.get("ratio_pct"), 0.01)):
        bad.append("kernel %r: %r != %r" % (k, g, w))
# ops: rows as multisets of (name, calls, times); [memory] rows are not in the view
ops = json.load(open(oj))["ops"]["rows"]
def key(name, calls, a, b, c_, d):
    return (name, calls, a, b, c_, d)
w = sorted(key(r["name"], r["calls"], r["self_cpu_us"], r["cpu_total_us"],
               r.get("self_cuda_us", 0), r.get("cuda_total_us", 0))
           for r in ops if r["name"] not in ("[memory]", "[OutOfMemory]"))
has_cuda = any("self_cuda_us" in r for r in ops)
g = sorted(key(r[0], r[1], us(r[2]), us(r[3]), us(r[4]) if has_cuda else 0,
               us(r[5]) if has_cuda else 0) for r in c.execute(
    "SELECT name, calls, self_cpu_ns, cpu_total_ns, self_cuda_ns, cuda_total_ns FROM ops_summary"))
if w != g:
    ws, gs = set(w), set(g)
    bad.append("ops: %d rows in the report, %d in the view; e.g. report %r, view %r" %
               (len(w), len(g), sorted(ws - gs)[:3], sorted(gs - ws)[:3]))
# percentages of the rank's totals
pct = {}
for r in c.execute("SELECT name, calls, self_cpu_ns, self_cpu_pct, cpu_total_pct FROM ops_summary"):
    pct[(r[0], r[1], us(r[2]))] = r[3:]
for r in ops:
    if r["name"] in ("[memory]", "[OutOfMemory]") or r.get("self_cpu_pct") is None:
        continue
    row = pct.get((r["name"], r["calls"], r["self_cpu_us"]))
    if (row is None or not near(row[0], r["self_cpu_pct"], 0.01) or
            not near(row[1], r["cpu_total_pct"], 0.01)):
        bad.append("ops %r: pct %r != %r" % (r["name"], row, r["self_cpu_pct"]))
        break
for b in bad[:10]:
    print("%s: %s" % (name, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# 1. a hand-built Kineto trace: a step holding aten::mm (300 us) that launches one kernel (50 us)
# through cudaLaunchKernel (10 us) and a copy of 4096 bytes (20 us)
cat >"$work/hand.json" <<'J'
{"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 300, "args": {"Input Dims": [[2, 3], [3, 4]]}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 150, "dur": 10, "args": {"correlation": 5}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 200, "dur": 10, "args": {"correlation": 6}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 200, "dur": 50, "args": {"correlation": 5, "device": 0, "stream": 7, "grid": [4, 2, 1], "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024, "est. achieved occupancy %": 50}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 300, "dur": 20, "args": {"correlation": 6, "device": 0, "stream": 7, "bytes": 4096}}
]}
J
"$TALLY" export "$work/hand.json" -o "$work/hand.sqlite" || fail "hand.json: export failed"
"$py" - "$work/hand.sqlite" <<'PY' || fail "hand.json: wrong numbers"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
def one(sql):
    return c.execute(sql).fetchone()
checks = [
    (one("SELECT value FROM meta WHERE key = 'rank'"), (3,)),
    (one("SELECT value FROM meta WHERE key = 'world_size'"), (4,)),
    (one("SELECT value FROM meta WHERE key = 'source'"), ("kineto",)),
    (one("SELECT rank, name, calls, total_ns, ratio_pct FROM kernel_summary"),
     (3, "gemm", 1, 50000, 100.0)),
    (one("SELECT grid, block, registers, shared_memory, occupancy, device, stream FROM kernels"),
     ("[4,2,1]", "[128,1,1]", 32, 1024, 50.0, 0, 7)),
    (one("SELECT r.name = s.id FROM kernels k JOIN ranges r ON r.id = k.launch"
         " JOIN strings s ON s.value = 'cudaLaunchKernel'"), (1,)),
    (one("SELECT kind, bytes, pageable FROM memcpy"), ("HtoD", 4096, 1)),
    (one("SELECT self_cpu_ns, cpu_total_ns, self_cuda_ns, cuda_total_ns, calls FROM ops_summary"
         " WHERE name = 'aten::mm'"), (280000, 300000, 70000, 70000, 1)),
    (one("SELECT self_cpu_ns, cuda_total_ns FROM ops_summary WHERE name = 'ProfilerStep*'"),
     (700000, 70000)),
    (one("SELECT number, duration_ns FROM step_times"), (7, 1000000)),
    (one("SELECT json_extract(args, '$.\"Input Dims\"') FROM ranges r JOIN strings s"
         " ON s.id = r.name WHERE s.value = 'aten::mm'"), ("[[2,3],[3,4]]",)),
    (one("SELECT count(*) FROM ranges r JOIN ranges p ON p.id = r.parent"), (3,)),
]
bad = [(g, w) for g, w in checks if g != w]
for g, w in bad:
    print("got %r, expected %r" % (g, w), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
compare "$work/hand.json"

# 2. the format is chosen by --format and by a .db name; an existing file is replaced
echo "not a database" >"$work/old.db"
"$TALLY" export "$work/hand.json" -o "$work/old.db" || fail "export to .db failed"
"$py" -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('SELECT * FROM kernels')" \
  "$work/old.db" || fail "the .db was not replaced by a database"
"$TALLY" export "$work/hand.json" --format sqlite -o "$work/x.out" || fail "--format sqlite failed"
head -c 15 "$work/x.out" | grep -q "SQLite format 3" || fail "--format sqlite wrote no database"
"$TALLY" export --help | grep -q sqlite || fail "--help does not say sqlite"

# 3. a path that cannot be written: one line, exit 1, nothing left behind
set +e
"$TALLY" export "$work/hand.json" -o "$work/no/such/dir/x.sqlite" 2>"$work/err.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "unwritable path: exit $rc, expected 1"
[ "$(wc -l <"$work/err.txt")" = 1 ] || { cat "$work/err.txt" >&2; fail "unwritable path: not one line"; }
grep -q "x.sqlite" "$work/err.txt" || fail "the error does not name the file"
set +e
"$TALLY" export "$work/hand.json" -o - --format sqlite 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "sqlite to stdout: exit $rc, expected 2"
ls "$work" | grep -q tmp- && fail "a temporary file was left behind"

# 4. a tally demo trace (tiny model)
"$TALLY" demo --steps 3 --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --seq 32 --batch 2 \
  --vocab 256 --text-bytes 256 -o "$work/demo" --top 0 >/dev/null 2>&1 || fail "tally demo failed"
for f in "$work"/demo/*.tally; do compare "$f"; done

# 5. the real traces
shared=${SHARED:-$(dirname "$0")/../../../shared}
if [ ! -d "$shared/traces" ]; then
  echo "sqlite_export: no $shared/traces: the real traces were not compared"
  exit 77
fi
for f in "$shared"/traces/*.json.gz; do compare "$f"; done
echo "sqlite_export: ok"
