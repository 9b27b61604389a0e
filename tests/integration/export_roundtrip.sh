#!/usr/bin/env bash
# export_roundtrip: `tally export` on the trace PyTorch wrote for a CUDA MLP
# (tests/data/torch_cuda_mlp.trace.json.gz) writes JSON that strict parsers accept, keeps every
# kernel, copy and operator with its name, duration and relative start to the nanosecond, and
# every event and top-level member as it was (args, flows, metadata: docs/export.md), and reads
# back into the same `tally ops` table;
# the same holds after a second export to .json.gz. Without -o it writes FILE.pt.trace.json.gz
# beside FILE. Usage errors exit with 2.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${SRC:?source directory}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "export_roundtrip: $*" >&2; exit 1; }
trace="$SRC/tests/data/torch_cuda_mlp.trace.json.gz"

"$TALLY" export "$trace" -o "$work/a.json" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "export to .json failed"; }
"$TALLY" export "$work/a.json" -o "$work/b.json.gz" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "export to .json.gz failed"; }
gzip -t "$work/b.json.gz" || fail "b.json.gz is not valid gzip"
head -c 2 "$work/a.json" | grep -q '^{' || fail "a.json does not start with {"

# the ops table (names, counts, self/total CPU and CUDA times) is the same from all three files
"$TALLY" ops "$trace" --format csv >"$work/ops0.csv"
"$TALLY" ops "$work/a.json" --format csv >"$work/ops1.csv"
"$TALLY" ops "$work/b.json.gz" --format csv >"$work/ops2.csv"
cmp -s "$work/ops0.csv" "$work/ops1.csv" || { diff "$work/ops0.csv" "$work/ops1.csv" >&2 || true; fail "ops differ after export"; }
cmp -s "$work/ops0.csv" "$work/ops2.csv" || fail "ops differ after the second export (.gz)"

# stdout export is the same bytes as the file (apart from traceName)
"$TALLY" export "$trace" -o - | grep -v '^"traceName"' >"$work/c.json"
grep -v '^"traceName"' "$work/a.json" | cmp -s - "$work/c.json" || fail "-o - differs from the file"

set +e
"$TALLY" export - </dev/null >/dev/null 2>&1; [ $? = 2 ] || fail "standard input without -o should exit 2"
"$TALLY" export --bogus x -o y >/dev/null 2>&1; [ $? = 2 ] || fail "unknown option should exit 2"
"$TALLY" export "$work/none.json" -o "$work/x.json" 2>/dev/null; [ $? = 1 ] || fail "missing input should exit 1"
set -e
grep -q "usage: tally export" <<<"$("$TALLY" export --help)" || fail "--help"

# without -o: beside the input, named as PyTorch names its traces (TensorBoard lists only those)
cp "$trace" "$work/mlp.trace.json.gz"
"$TALLY" export "$work/mlp.trace.json.gz" || fail "export without -o failed"
gzip -t "$work/mlp.pt.trace.json.gz" || fail "no mlp.pt.trace.json.gz beside the input"

# a pipe (or a device such as /dev/null) is written in place, never renamed over
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/from_fifo.json" &
reader=$!
"$TALLY" export "$trace" -o "$work/fifo" || fail "export to a fifo failed"
wait "$reader"
[ -p "$work/fifo" ] || fail "the fifo was replaced by a file"
cmp -s "$work/from_fifo.json" "$work/a.json" || [ -s "$work/from_fifo.json" ] || fail "nothing came through the fifo"

command -v python3 >/dev/null || { echo "skipped: python3 absent (the strict JSON check needs it)"; exit 77; }
python3 - "$trace" "$work/a.json" "$work/b.json.gz" <<'PY' || fail "python check failed"
import gzip, json, sys
from collections import Counter
from decimal import Decimal

def load(p):
    op = gzip.open if p.endswith(".gz") else open
    with op(p, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)

def ns(x):
    return int(Decimal(x) * 1000)

def spans(d, cats):
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]
    base = min(ns(e["ts"]) for e in ev)
    return Counter((e["cat"], e["name"], ns(e["ts"]) - base, ns(e["dur"])) for e in ev)

orig, a, b = (load(p) for p in sys.argv[1:4])
cats = {"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime"}
so = spans(orig, cats)
assert len(so) > 50, len(so)
for name, d in (("a.json", a), ("b.json.gz", b)):
    s = spans(d, cats)
    assert s == so, (name, list((so - s).items())[:3], list((s - so).items())[:3])
    # nothing read is lost: the same events (flows, metadata, args) and top-level members
    canon = lambda e: json.dumps(e, sort_keys=True, default=str)
    assert sorted(map(canon, d["traceEvents"])) == sorted(map(canon, orig["traceEvents"])), name
    assert canon({k: v for k, v in d.items() if k != "traceEvents"}) == canon(
        {k: v for k, v in orig.items() if k != "traceEvents"}), name
    kern = [e for e in d["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
    assert kern and all("grid" in k["args"] and "correlation" in k["args"] for k in kern)
print("python check ok")
PY
echo "export_roundtrip: ok"
