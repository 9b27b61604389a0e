#!/usr/bin/env bash
# job_report: `tally report DIR` reads a folder of ranks as one job.
#  1. Four ranks recorded by prog_ranks under RANK=0..3 (the recorder puts each into a rank<N>/
#     folder), starting their steps at one time, rank 2 made 20 % slower: the four ranks are
#     found with 6 steps each, rank 2's median step is well over the others' (the times are
#     measured, on a machine that may be busy), and -j 1 and -j 3 give the same numbers.
#     1b. The same job written exactly as Kineto traces in InternLM's rank{}_dp{}_tp{}_pp{}
#     folders: rank 2 is named the straggler, 20.0 % over the median, and the last to arrive at
#     every all_reduce, with the skews the construction gives.
#     1c. Map and merge: the same job's ranks reported per "node" as JSON, then the node outputs
#     reported together, give the tables of all ranks read at once. 1d: the job exported to one
#     SQLite database (`tally export DIR -o job.sqlite`) holds the same steps per rank.
#  2. The two ranks of hta_sampled_rank-{0,1} (../shared/traces, skipped when absent): every
#     rank's step times and communication equal what `tally report FILE` says of that file
#     alone, and each step's slowest rank and margin follow from those.
#  3. Errors: a folder without traces, a file that is not a trace.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${BUILD:?build directory}"
command -v python3 >/dev/null || { echo "skipped: python3 absent"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "job_report: $*" >&2; exit 1; }

start=$(($(date +%s%N) + 500000000)) # the ranks begin together, half a second from now
for r in 0 1 2 3; do
  RANK=$r PROG_SLOW_RANK=2 PROG_START_AT=$start TALLY_OUTPUT_DIR="$work/job" TALLY_WRITE=tally \
    "$BUILD/tests/prog_ranks" 2>/dev/null &
done
wait
"$TALLY" report "$work/job" --format json -o "$work/job.json" || fail "report of the folder failed"
for j in 1 3; do
  "$TALLY" report "$work/job" -j $j --format json -o "$work/job$j.json" || fail "-j $j failed"
  cmp -s "$work/job.json" "$work/job$j.json" || fail "-j $j gives other numbers"
done
"$TALLY" report "$work/job" >"$work/job.txt" || fail "text report failed"
# "job/" names its files as "job" does (not "job//rank0/...")
"$TALLY" report "$work/job/" --format json -o "$work/job_slash.json" || fail "report of job/ failed"
cmp -s "$work/job.json" "$work/job_slash.json" || fail "job/ and job give other reports"

python3 - "$work/job.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ranks = {x["rank"]: x for x in r["ranks"]["rows"]}
assert sorted(ranks) == [0, 1, 2, 3], ranks
assert all(x["steps"] == 6 for x in ranks.values()), ranks
st = r["stragglers"]["rows"]
assert len(st) == 6 and all(x["ranks"] == 4 for x in st), st
rs = r["rank_steps"]["rows"]
assert len(rs) == 24, len(rs)
# Times here are measured (sleeps, on a machine that may be busy, where a sleeper wakes late):
# only the gross fact is checked; the generated job below checks the numbers exactly.
med = lambda v: sorted(v)[len(v) // 2]
slow = med([x["step_us"] for x in rs if x["rank"] == 2])
rest = med([x["step_us"] for x in rs if x["rank"] != 2])
assert slow > 1.08 * rest, (slow, rest)
PY
[ $? = 0 ] || fail "the made-up job is read wrong"

# 1b. The same job made exactly: Kineto-style traces written here, rank r's steps 100 ms (rank
#     2: 120 ms, 20 % slower), each ending in an nccl:all_reduce range at 80 % of the step.
python3 - "$work/exact" <<'PY'
import json, os, sys
base = 1_700_000_000_000_000  # us
for r in range(4):
    d = os.path.join(sys.argv[1], f"rank{r}_dp{r}_tp0_pp0")
    os.makedirs(d)
    step = 120_000 if r == 2 else 100_000
    ev, t = [], base
    for n in range(5):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{10 + n}",
                   "pid": 1, "tid": 1, "ts": t, "dur": step})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1,
                   "ts": t + step * 8 // 10, "dur": step // 10})
        t += step
    json.dump({"distributedInfo": {"rank": r, "world_size": 4}, "traceEvents": ev},
              open(os.path.join(d, f"host_{r}.123.pt.trace.json"), "w"))
PY
"$TALLY" report "$work/exact" --format json -o "$work/exact.json" || fail "report of the exact job failed"
"$TALLY" report "$work/exact" >"$work/exact.txt" || fail "text report of the exact job failed"
grep -q "rank 2 is the straggler: 20.0% over the median step" "$work/exact.txt" ||
  fail "no straggler in: $(cat "$work/exact.txt")"
python3 - "$work/exact.json" <<'PY' || fail "the exact job is read wrong"
import json, sys
r = json.load(open(sys.argv[1]))
ranks = {x["rank"]: x for x in r["ranks"]["rows"]}
assert sorted(ranks) == [0, 1, 2, 3] and all(x["steps"] == 5 for x in ranks.values()), ranks
assert ranks[2]["step_avg_us"] == 120000 and ranks[0]["step_avg_us"] == 100000, ranks
assert ranks[2]["slowest_steps"] == 5, ranks
st = r["stragglers"]["rows"]
assert sorted(x["step"] for x in st) == [10, 11, 12, 13, 14], st
for x in st:
    assert (x["slowest_rank"], x["slowest_us"], x["median_us"]) == (2, 120000, 100000), x
    assert abs(x["over_median_pct"] - 20.0) < 1e-9, x
f = r["job_findings"]["rows"]
assert f[0]["finding"] == "rank 2 is the straggler: 20.0% over the median step", f
assert f[0]["at_stake_us"] == 5 * 20000, f[0]  # the others wait 20 ms a step
co = r["collectives"]["rows"]
# the k-th all_reduce: rank 2 starts at k*120 + 96 ms, the others at k*100 + 80
assert [(x["call"], x["start_skew_us"], x["last_rank"]) for x in co] == \
    [(k, (k - 1) * 20000 + 16000, 2) for k in (5, 4, 3, 2, 1)], co
assert f[1]["finding"] == "ranks wait for rank 2 at nccl:all_reduce (call 5)", f
PY

# 1c. Past one machine: each "node" reports its own ranks as JSON (the map step), and one
#     report of those outputs (the merge) equals the report of all ranks read at once, every
#     table byte for byte; a damaged node output is one line naming the file and the offset.
mkdir -p "$work/nodes/n0" "$work/nodes/n1" "$work/maps"
mv "$work/exact/rank0_"* "$work/exact/rank1_"* "$work/nodes/n0/"
mv "$work/exact/rank2_"* "$work/exact/rank3_"* "$work/nodes/n1/"
for n in 0 1; do
  "$TALLY" report "$work/nodes/n$n" --format json -o "$work/maps/node$n.json" || fail "map $n failed"
done
"$TALLY" report "$work/maps/node0.json" "$work/maps/node1.json" --format json \
  -o "$work/merged.json" || fail "the merge failed"
"$TALLY" report "$work/nodes" --format json -o "$work/all.json" || fail "report of all failed"
cmp -s "$work/merged.json" "$work/all.json" || fail "the merge differs from reading all ranks"
"$TALLY" report "$work/maps" --format csv -o "$work/merged.csv" || fail "merge of a folder failed"
"$TALLY" report "$work/nodes" --format csv -o "$work/all.csv" || fail "csv of all failed"
cmp -s "$work/merged.csv" "$work/all.csv" || fail "the csv of the merge differs"
head -c 300 "$work/maps/node0.json" >"$work/cut.json"
if "$TALLY" report "$work/cut.json" "$work/maps/node1.json" 2>"$work/err"; then
  fail "a cut node output is no error"
fi
[ "$(wc -l <"$work/err")" = 1 ] && grep -q "cut.json: offset [0-9]*: expected" "$work/err" ||
  fail "cut node output: $(cat "$work/err")"

# 1d. The same job into one database: `tally export DIR -o job.sqlite`, a rank column in every
#     table; its steps per rank are the job report's.
"$TALLY" export "$work/nodes" -o "$work/job.sqlite" 2>/dev/null || fail "export of the job failed"
python3 - "$work/job.sqlite" "$work/all.json" <<'PY' || fail "the job's database is wrong"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rep = json.load(open(sys.argv[2]))
got = sorted(db.execute("SELECT rank, number, duration FROM steps").fetchall())
want = sorted((x["rank"], x["step"], round(x["step_us"] * 1000)) for x in rep["rank_steps"]["rows"])
assert got == want, (got, want)
assert db.execute("SELECT DISTINCT rank FROM ranges ORDER BY rank").fetchall() == \
    [(0,), (1,), (2,), (3,)]
PY
if "$TALLY" export "$work/nodes" 2>"$work/err"; then fail "a folder without -o OUT.sqlite"; fi
grep -q "give -o JOB.sqlite" "$work/err" || fail "export of a folder: $(cat "$work/err")"

# 2. the shared two ranks
traces=${SHARED:-$(dirname "$0")/../../../shared}/traces
if [ -f "$traces/hta_sampled_rank-0.json.gz" ]; then
  mkdir -p "$work/hta"
  for r in 0 1; do
    cp "$traces/hta_sampled_rank-$r.json.gz" "$work/hta/"
    "$TALLY" report "$traces/hta_sampled_rank-$r.json.gz" --views perf,distributed --format json \
      -o "$work/one$r.json" || fail "report of rank $r alone failed"
  done
  "$TALLY" report "$work/hta" --format json -o "$work/hta.json" || fail "report of hta ranks failed"
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
job = json.load(open(f"{w}/hta.json"))
steps = {}
for r in (0, 1):
    one = json.load(open(f"{w}/one{r}.json"))
    assert one["trace"]["rank"] == r
    row = next(x for x in job["ranks"]["rows"] if x["rank"] == r)
    dist = {x["name"]: x for x in one["distributed"]["rows"]}
    assert row["communication_us"] == dist["Communication (GPU)"]["time_us"], (row, dist)
    assert row["computation_us"] == dist["Computation (GPU)"]["time_us"], (row, dist)
    perf = {x["name"] if "name" in x else x.get("metric"): x for x in one["perf"]["rows"]}
    for x in job["rank_steps"]["rows"]:
        if x["rank"] == r:
            steps.setdefault(x["step"], {})[r] = x["step_us"]
    assert row["steps"] == one["trace"]["steps"] == 2, row
assert sorted(steps) == [551, 552], steps
for x in job["stragglers"]["rows"]:
    d = steps[x["step"]]
    slow = max(d, key=d.get)
    med = sorted(d.values())[0]  # the lower middle of two
    assert x["slowest_rank"] == slow and x["slowest_us"] == d[slow], (x, d)
    assert abs(x["over_median_pct"] - 100 * (d[slow] - med) / med) < 1e-3, (x, d)
PY
  [ $? = 0 ] || fail "the shared ranks are read wrong"
else
  echo "job_report: ../shared/traces absent: the shared ranks' part skipped"
fi

# a rank from PMI_RANK (the recorder reads RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK);
# its files go to a rank5/ folder of the output directory
mkdir -p "$work/pmi"
PMI_RANK=5 TALLY_OUTPUT_DIR="$work/pmi" TALLY_WRITE=tally "$BUILD/tests/prog_ranks" 2>/dev/null
ls "$work/pmi/rank5/"*.tally >/dev/null 2>&1 || fail "no rank5/ folder: $(ls -R "$work/pmi")"
"$TALLY" report "$work/pmi" --format csv -o "$work/pmi.csv" || fail "report of the PMI rank failed"
python3 - "$work/pmi.csv" <<'PY' || fail "PMI_RANK is not the trace's rank"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["view"] == "ranks"]
assert [r["rank"] for r in rows] == ["5"], rows
PY

# 3. errors: one line, non-zero
mkdir -p "$work/empty" "$work/bad"
if "$TALLY" report "$work/empty" 2>"$work/err"; then fail "an empty folder is no error"; fi
grep -q "no trace in this folder" "$work/err" || fail "empty folder: $(cat "$work/err")"
echo '{"not": "a trace"}' >"$work/bad/x.json"
cp "$work/job/rank0/"*.tally "$work/bad/"
if "$TALLY" report "$work/bad" 2>"$work/err"; then fail "a folder with a bad file is no error"; fi
[ "$(wc -l <"$work/err")" = 1 ] && grep -q "x.json" "$work/err" || fail "bad file: $(cat "$work/err")"
echo "job_report: ok"
