#!/usr/bin/env bash
# export_tally_lossless: `tally export X.tally` keeps everything the file holds, so that
# `tally report X.tally --format json` and `tally report export(X) --format json` give the same
# tables but the trace's path: the memory views (addresses, allocator totals, block names and
# categories, labels and blocks live at the start), perf_ips (step sample counts and their
# unit), the warnings' loss counts, the findings. Traces: both of `tally demo`'s (PyTorch-style
# allocator events with totals, tally_step(n) in tokens), a recorded program with every kind of
# loss and memory record (prog_export_losses), every hand-built file of the reader's test (GPU
# flows, async and open ranges, cut files, chunks never written); each through the streaming
# export (.json and .json.gz, in turn) and through the model's writer (the file from standard
# input). The call sites must be in the export as args.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${BUILD:?build directory}"
command -v python3 >/dev/null || { echo "skipped: python3 absent"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "export_tally_lossless: $*" >&2; exit 1; }

mkdir "$work/in" "$work/demo" "$work/prog"
# a smaller model than the demo's own: the same kinds of records, 7x less work (the default one
# ran 80 s under ASan)
"$TALLY" demo -o "$work/demo" --layers 2 --dim 128 --ffn 352 --seq 64 --steps 4 >/dev/null 2>&1 ||
  fail "tally demo failed"
cp "$work"/demo/*.tally "$work/in/"
"$BUILD/tests/prog_export_losses" "$work/prog" || fail "prog_export_losses failed"
cp "$work"/prog/*.tally "$work/in/losses.tally"
mkdir "$work/seeds"
"$BUILD/tests/test_tally_reader" --write-seeds "$work/seeds"
# every hand-built file: async ranges (tally_async), a step and a range of equal span, two
# calls with one correlation id, a thread without events, unnamed copies, cut files
for s in "$work"/seeds/*; do cp "$s" "$work/in/$(basename "$s").tally"; done

compare() { # name report-of-original report-of-export
  python3 - "$@" <<'PY'
import json, sys
name, a, b = sys.argv[1:4]
ra, rb = json.load(open(a)), json.load(open(b))
for r in (ra, rb):
    r["trace"].pop("path")
if ra != rb:
    for k in ra:
        if ra.get(k) != rb.get(k):
            sys.exit(f"{name}: table {k} differs:\n{json.dumps(ra.get(k))[:800]}\n"
                     f"{json.dumps(rb.get(k))[:800]}")
    sys.exit(f"{name}: tables differ: {sorted(set(ra) ^ set(rb))}")
PY
}

n=0
bad=0
for f in "$work"/in/*.tally; do
  b=$(basename "$f" .tally)
  "$TALLY" report "$f" --format json -o "$work/$b.want.json" 2>/dev/null ||
    fail "$b: tally report of the .tally file failed"
  ext=.json
  [ $((n % 2)) = 1 ] && ext=.json.gz
  n=$((n + 1))
  "$TALLY" export "$f" -o "$work/$b.stream$ext" 2>/dev/null || fail "$b: tally export failed"
  "$TALLY" export - -o "$work/$b.model.json" <"$f" 2>/dev/null || fail "$b: export of stdin failed"
  for kind in stream model; do
    x=$work/$b.$kind$ext
    [ $kind = model ] && x=$work/$b.model.json
    "$TALLY" report "$x" --format json -o "$work/$b.$kind.got.json" 2>/dev/null ||
      fail "$b: tally report of the $kind export failed"
    compare "$b ($kind export)" "$work/$b.want.json" "$work/$b.$kind.got.json" || bad=1
  done
done

[ $bad = 0 ] || fail "reports differ"

# What the views of these traces do show must be there to compare: memory with names, labels
# and live blocks, sample counts in tokens, the losses.
python3 - "$work" <<'PY' || fail "the traces do not hold what the test is about"
import json, sys
w = sys.argv[1]
r = json.load(open(f"{w}/demo-unfused.want.json"))
assert r["perf_ips"]["rows"][0]["unit"] == "tokens/s", r["perf_ips"]["rows"][0]
assert r["memory"]["rows"][0]["peak_allocated_bytes"], r["memory"]["rows"]
import gzip, os
p = f"{w}/losses.stream.json"
e = json.load(open(p) if os.path.exists(p) else gzip.open(p + ".gz", "rt"))
mem = [x for x in e["traceEvents"] if x.get("name") == "[memory]"]
flags = {x["args"].get("tally mem flags", 0) for x in mem}
assert 1 in flags and 2 in flags, flags  # a label and a block live at the start
assert {"layer.0.weight", "batch.tokens", "act"} <= {x["args"].get("tally mem name") for x in mem}
assert all("Addr" in x["args"] for x in mem)
t = e["tally"]
assert t["samples_unit"] == "tokens" and t["host"] and t["program"], t
assert t["bad_pops"] == 1 and t["mem_unmatched_frees"] == 1 and t["mem_reused"] == 1, t
steps = [x for x in e["traceEvents"] if x.get("name", "").startswith("ProfilerStep#")]
# the three tally_step(n) and the step tally_stop closed, which counts none
assert sorted(x["args"]["tally samples"] for x in steps) == [0, 128, 256, 384], steps
fwd = [x for x in e["traceEvents"] if x.get("name") == "forward"]
assert fwd and fwd[0]["args"]["tally file"].endswith("prog_export_losses.c"), fwd[0]
assert fwd[0]["args"]["tally line"] > 0 and fwd[0]["args"]["tally function"] == "main"
open_ = [x for x in e["traceEvents"] if x.get("name") == "left_open"]
assert open_ and open_[0]["args"].get("tally_unclosed") == 1, open_
PY
echo "export_tally_lossless: $n traces, both exports report the same tables"
