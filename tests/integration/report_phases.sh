#!/usr/bin/env bash
# report_phases.sh — `tally report` and `tally export` on a trace whose phase durations are
# known by construction (prog_report_phases.c), and their error paths.
#
# Checks: Model per-step rows between the bounds the program measured itself (inside and
# around each range) and adding up exactly to the step; Overview ratios of the phases and Other summing to 100; Perf throughput = 16 samples per
# step; the summary printed on stderr by the default trace-ready handler; json/csv parse; the
# export reads back with the same numbers; exit status 2 for usage errors and 1 for bad files.
set -euo pipefail

: "${TALLY:?}" "${BUILD:?}"
PROG="$BUILD/tests/prog_report_phases"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PROG" "$work" 2>"$work/stderr.txt"
# the program's own summary is the cheap one (from counters), with the command for the full report
grep -q "Perf Summary" "$work/stderr.txt" || { echo "no summary on stderr"; cat "$work/stderr.txt"; exit 1; }
grep -q "full report: tally report .*phases.tally" "$work/stderr.txt" ||
    { echo "no report command on stderr"; cat "$work/stderr.txt"; exit 1; }
trace=$(ls "$work"/phases*.tally | head -1)
[ -f "$trace" ] || { echo "no .tally file"; exit 1; }
# ... whose figures come from counters kept while recording: 4 steps, the reader cost (time in
# dataloader ranges, accounted by the writer) and the batch cost within the bounds the program
# measured, 16 samples a step
python3 - "$work/stderr.txt" "$work/expected.json" <<'PY'
import json, re, sys
err = open(sys.argv[1]).read()
exp = json.load(open(sys.argv[2]))
assert "Steps: 4" in err, err
row = {m.group(1): [float(x) for x in m.group(2, 3, 4)]
       for m in re.finditer(r"\|\s+(\w+)\s+\|\s+([\d.]+)\s+\|\s+([\d.]+)\s+\|\s+([\d.]+)\s+\|", err)}
def within(name, got_s, lo_us, hi_us, slack_us=30.0):
    got = got_s * 1e6
    assert lo_us - slack_us <= got <= hi_us + slack_us, (name, got, lo_us, hi_us)
n = len(exp)
within("reader avg", row["reader_cost"][0], sum(e["dataloader"][0] for e in exp) / n,
       sum(e["dataloader"][1] for e in exp) / n)
within("batch avg", row["batch_cost"][0], sum(e["step"][0] for e in exp) / n,
       sum(e["step"][1] for e in exp) / n, 200.0)
within("reader max", row["reader_cost"][1], max(e["dataloader"][0] for e in exp),
       max(e["dataloader"][1] for e in exp))
PY
# the program asked for JSON: a detached `tally export` writes it (whole, renamed into place)
for _ in $(seq 1 200); do [ -s "$work/phases.pt.trace.json" ] && break; sleep 0.05; done
[ -s "$work/phases.pt.trace.json" ] ||
  { echo "phases.pt.trace.json was not written"; ls -la "$work"; exit 1; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["traceEvents"]' "$work/phases.pt.trace.json"

"$TALLY" report "$trace" --views overview,model,perf,ranges --format json >"$work/r.json"
python3 - "$work/r.json" "$work/expected.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
exp = json.load(open(sys.argv[2]))  # per step: [inner, outer] durations measured by the program
# tally must report a time between what the program measured inside and around each range.
# Slack: the TSC-to-clock calibration and the clock reads themselves (a few us).
def within(name, got, lohi, slack=20.0):
    lo, hi = lohi
    assert lo - slack <= got <= hi + slack, (name, got, lo, hi)
steps = [row for row in r["model_steps"]["rows"] if row["step"] != "Average"]
full = [s for s in steps if s["step_us"] > 15000]
assert len(full) == 4, steps
keys = ("dataloader", "forward", "backward", "optimization")
for s, e in zip(full, exp):
    within("step", s["step_us"], e["step"])
    for k in keys:
        within(k, s[k + "_us"], e[k])
    # Other = the step not covered by a phase: bounded by the step's and the phases' bounds
    within("other", s["other_us"], (e["step"][0] - sum(e[k][1] for k in keys),
                                    e["step"][1] - sum(e[k][0] for k in keys)))
    parts = sum(s[k + "_us"] for k in keys) + s["other_us"]
    assert abs(parts - s["step_us"]) < 0.002, (parts, s["step_us"])  # adds up exactly
ov = {row["type"]: row for row in r["overview"]["rows"]}
total = sum(ov[k]["ratio_pct"] for k in ("Dataloader", "Forward", "Backward", "Optimization", "Other"))
assert abs(total - 100.0) < 0.01, total  # each ratio is printed to 4 decimals
m = {row["name"]: row for row in r["model"]["rows"]}
assert m["Forward"]["calls"] == 4, m["Forward"]  # the outermost only: the nested forward is none
assert ov["Forward"]["calls"] == 4, ov["Forward"]  # the Overview's phases are the Model's
assert abs(ov["Other"]["ratio_pct"] - m["Other"]["cpu_ratio_pct"]) < 1e-9, (ov["Other"], m["Other"])
ips = r["perf_ips"]["rows"][0]
assert ips["unit"].endswith("/s")
if ips["unit"] != "steps/s":
    assert ips["samples"] == 64, ips  # 4 steps of 16; the step closed by tally_stop is left out
    lo = 64 / (sum(e["step"][1] for e in exp) / 1e6)
    hi = 64 / (sum(e["step"][0] for e in exp) / 1e6)
    assert lo * 0.999 <= ips["avg"] <= hi * 1.001, (ips, lo, hi)
rng = {row["name"]: row for row in r["ranges"]["rows"]}
assert rng["attn"]["calls"] == 4, rng["attn"]
within("attn total", rng["attn"]["total_us"], (sum(e["attn"][0] for e in exp),
                                               sum(e["attn"][1] for e in exp)), 80.0)
PY

# csv: one header per table, plain numbers
"$TALLY" report "$trace" --views perf --format csv >"$work/r.csv"
# two tables (perf, perf_ips) in one csv: one header row, a view column first
grep -q '^view,name,steps,avg_us,max_us,min_us,total_us,ratio_pct,' "$work/r.csv"
[ "$(grep -c '^view,' "$work/r.csv")" = 1 ] && ! grep -q '^#' "$work/r.csv"

# text: the default report works and lines up (every table's rule is as wide as its header)
"$TALLY" report "$trace" >"$work/r.txt"
grep -q "Model Summary" "$work/r.txt"

# export and read back: same step times
"$TALLY" export "$trace" -o "$work/t.json.gz"
"$TALLY" report "$work/t.json.gz" --views model --format json >"$work/r2.json"
python3 - "$work/r.json" "$work/r2.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["model_steps"]["rows"]
b = json.load(open(sys.argv[2]))["model_steps"]["rows"]
assert [round(x["step_us"]) for x in a] == [round(x["step_us"]) for x in b], (a, b)
PY

# usage errors: exit 2; bad input: exit 1; one line on stderr
expect() {
    local want=$1; shift
    set +e; "$@" >/dev/null 2>"$work/err.txt"; local got=$?; set -e
    if [ "$got" != "$want" ]; then echo "exit $got, expected $want: $*"; cat "$work/err.txt"; exit 1; fi
    [ "$(wc -l <"$work/err.txt")" -ge 1 ] || { echo "no error message: $*"; exit 1; }
}
expect 2 "$TALLY" report "$trace" --views overview,nonsense
expect 2 "$TALLY" report "$trace" --views ranges --sort nonsense
expect 2 "$TALLY" report "$trace" --format xml
expect 2 "$TALLY" report "$trace" --unit minutes
expect 2 "$TALLY" report "$trace" --bogus
expect 2 "$TALLY" report
expect 1 "$TALLY" report "$work/does-not-exist.tally"
printf '{"traceEvents": [ {"ph": "X", "ts": 1, ' >"$work/bad.json"
expect 1 "$TALLY" report "$work/bad.json"
expect 2 "$TALLY" export - </dev/null
expect 1 "$TALLY" export "$work/bad.json" -o "$work/x.json"
grep -q -- "--views" <<<"$("$TALLY" report --help)"
grep -q -- "-o" <<<"$("$TALLY" export --help)"
echo "report_phases: ok"
