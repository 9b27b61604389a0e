#!/usr/bin/env bash
# job_report: `tally report DIR` reads a folder of ranks as one job.
#  1. Four ranks recorded by prog_ranks under RANK=0..3 into rank<N>/ folders, rank 2 made 20 %
#     slower by construction: rank 2 is the slowest in every step, 20 % (+-5) over the median,
#     named the straggler by the findings, and last to arrive at the collective of largest skew;
#     the same with -j 1 and -j 3 (the numbers do not depend on the threads).
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

for r in 0 1 2 3; do
  mkdir -p "$work/job/rank$r"
  RANK=$r PROG_SLOW_RANK=2 TALLY_OUTPUT_DIR="$work/job/rank$r" TALLY_WRITE=tally \
    "$BUILD/tests/prog_ranks" &
done
wait
"$TALLY" report "$work/job" --format json -o "$work/job.json" || fail "report of the folder failed"
for j in 1 3; do
  "$TALLY" report "$work/job" -j $j --format json -o "$work/job$j.json" || fail "-j $j failed"
  cmp -s "$work/job.json" "$work/job$j.json" || fail "-j $j gives other numbers"
done
"$TALLY" report "$work/job" >"$work/job.txt" || fail "text report failed"
grep -q "rank 2 is the straggler" "$work/job.txt" || fail "no straggler in: $(cat "$work/job.txt")"

python3 - "$work/job.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ranks = {x["rank"]: x for x in r["ranks"]["rows"]}
assert sorted(ranks) == [0, 1, 2, 3], ranks
assert all(x["steps"] == 6 for x in ranks.values()), ranks
st = r["stragglers"]["rows"]
assert len(st) == 6 and all(x["slowest_rank"] == 2 and x["ranks"] == 4 for x in st), st
for x in st:
    assert 15 <= x["over_median_pct"] <= 25, x
assert ranks[2]["slowest_steps"] == 6, ranks
f = r["job_findings"]["rows"]
assert f and "rank 2 is the straggler" in f[0]["finding"], f
pct = float(f[0]["finding"].split(": ")[1].split("%")[0])
assert 15 <= pct <= 25, f[0]
co = r["collectives"]["rows"]
assert co and co[0]["name"] == "allreduce" and co[0]["ranks"] == 4, co
assert co[0]["last_rank"] == 2, co[0]
rs = r["rank_steps"]["rows"]
assert len(rs) == 24, len(rs)
PY
[ $? = 0 ] || fail "the made-up job is read wrong"

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

# a rank from PMI_RANK (the recorder reads RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK)
mkdir -p "$work/pmi"
PMI_RANK=5 TALLY_OUTPUT_DIR="$work/pmi" TALLY_WRITE=tally "$BUILD/tests/prog_ranks" 2>/dev/null
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
