#!/usr/bin/env bash
# export_stream: `tally export FILE.tally` streams the file to Chrome JSON without the trace
# model; its output must mean what the model-based export (tool_tally_export: tl_read_tally +
# tl_write_chrome) writes: the same events (names, categories, ts/dur to the ns, args, steps,
# unclosed flags), flows, thread/process names, device tracks and header, compared as sets with
# times made absolute. Files: the reader test's hand-built ones (GPU flows of every kind, ranges
# across threads, files cut short and never written in full), a `tally demo` trace and a file of
# 400 k ranges; .json and .json.gz. Then the memory bound: the stream's peak RSS on a file of
# 1.6 M ranges is within a few MB of its RSS on 100 k ranges, where the model's grows.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${BUILD:?build directory}"
command -v python3 >/dev/null || { echo "skipped: python3 absent"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "export_stream: $*" >&2; exit 1; }
MODEL="$BUILD/tests/tool_tally_export"
READER="$BUILD/tests/test_tally_reader"

mkdir "$work/in"
"$READER" --write-seeds "$work/in"
"$READER" --write-ranges "$work/in/ranges" 400000
"$TALLY" demo -o "$work/demo" --rmsnorm unfused --steps 2 --layers 1 >/dev/null 2>&1 ||
  fail "tally demo failed"
cp "$work"/demo/*.tally "$work/in/demo"

n=0
for f in "$work"/in/*; do
  b=$(basename "$f")
  ext=.json
  [ $((n % 2)) = 1 ] && ext=.json.gz
  n=$((n + 1))
  "$MODEL" "$f" "$work/$b.model$ext" || fail "$b: the model export failed"
  "$TALLY" export "$f" -o "$work/$b.stream$ext" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "$b: tally export failed"; }
  echo "$b $work/$b.model$ext $work/$b.stream$ext" >>"$work/pairs.txt"
done
# standard output too
"$TALLY" export "$work/in/gpu_flows" -o - >"$work/gpu_flows.stdout.json" || fail "-o - failed"
echo "gpu_flows(stdout) $work/gpu_flows.model.json $work/gpu_flows.stdout.json" >>"$work/pairs.txt"
[ -e "$work/gpu_flows.model.json" ] || fail "gpu_flows was not exported as .json"

python3 - "$work/pairs.txt" <<'PY' || fail "the two exports differ"
import gzip, json, sys
from collections import Counter
from decimal import Decimal

def load(p):
    op = gzip.open if p.endswith(".gz") else open
    with op(p, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)

def events(d):
    """The events as a multiset, times absolute (ns), so that the base may differ."""
    base = d["baseTimeNanoseconds"]
    out = Counter()
    for e in d["traceEvents"]:
        e = dict(e)
        if e.get("ph") != "M" and "ts" in e:
            e["ts"] = base + int(Decimal(e["ts"]) * 1000)
        if "dur" in e:
            e["dur"] = int(Decimal(e["dur"]) * 1000)
        out[json.dumps(e, sort_keys=True, default=str)] += 1
    return out

seen = {"flows": 0, "unclosed": 0, "steps": 0, "kernels": 0, "memcpy": 0}
for line in open(sys.argv[1]):
    name, pm, ps = line.split()
    m, s = load(pm), load(ps)
    for k in set(m) | set(s):
        if k not in ("traceEvents", "traceName"):
            assert m.get(k) == s.get(k), (name, k, m.get(k), s.get(k))
    em, es = events(m), events(s)
    assert em == es, (name, "only in the model export:", list((em - es).items())[:3],
                      "only in the stream:", list((es - em).items())[:3])
    for e in s["traceEvents"]:
        seen["flows"] += e.get("ph") == "f"
        seen["unclosed"] += e.get("args", {}).get("tally_unclosed", 0) if isinstance(e.get("args"), dict) else 0
        seen["steps"] += str(e.get("name", "")).startswith("ProfilerStep#")
        seen["kernels"] += e.get("cat") == "kernel"
        seen["memcpy"] += e.get("name") == "Memcpy HtoD (Pageable -> Device)"
    print(f"{name}: {sum(es.values())} events alike")
# the files cover what they should
assert all(v > 0 for v in seen.values()), seen
print("covered:", seen)
PY

# memory: peak RSS of each path on 100 k and 1.6 M ranges
"$READER" --write-ranges "$work/small" 100000
"$READER" --write-ranges "$work/big" 1600000
python3 - "$TALLY" "$MODEL" "$work" <<'PY' || fail "the stream's memory grows with the events"
import os, subprocess, sys
tally, model, work = sys.argv[1:4]

def peak_kb(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    assert status == 0, argv
    return ru.ru_maxrss

rss = {}
for size in ("small", "big"):
    rss["stream", size] = peak_kb([tally, "export", f"{work}/{size}", "-o", f"{work}/{size}.s.json"])
    rss["model", size] = peak_kb([model, f"{work}/{size}", f"{work}/{size}.m.json"])
    os.unlink(f"{work}/{size}.s.json")
    os.unlink(f"{work}/{size}.m.json")
print({f"{k[0]} {k[1]}": f"{v / 1024:.1f} MB" for k, v in rss.items()})
grow_stream = rss["stream", "big"] - rss["stream", "small"]
grow_model = rss["model", "big"] - rss["model", "small"]
assert grow_model > 50 * 1024, rss        # the model holds 1.5 M more events
assert grow_stream < 8 * 1024, rss        # the stream: its buffers only
PY
echo "export_stream: ok"
