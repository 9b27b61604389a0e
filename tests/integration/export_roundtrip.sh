#!/usr/bin/env bash
# export_roundtrip: `tally export` on the trace PyTorch wrote for a CUDA MLP
# (tests/data/torch_cuda_mlp.trace.json.gz) writes JSON that strict parsers accept, keeps every
# kernel, copy and operator with its name, duration and relative start to the nanosecond, links
# each kernel to its launch with an ac2g flow, and reads back into the same `tally ops` table;
# the same holds after a second export to .json.gz. Usage errors exit with 2.
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
"$TALLY" export "$trace" >/dev/null 2>&1; [ $? = 2 ] || fail "missing -o should exit 2"
"$TALLY" export --bogus x -o y >/dev/null 2>&1; [ $? = 2 ] || fail "unknown option should exit 2"
"$TALLY" export "$work/none.json" -o "$work/x.json" 2>/dev/null; [ $? = 1 ] || fail "missing input should exit 1"
set -e
grep -q "usage: tally export" <<<"$("$TALLY" export --help)" || fail "--help"

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
    assert d["schemaVersion"] == 1 and d["displayTimeUnit"] == "ms"
    assert isinstance(d["baseTimeNanoseconds"], int)
    # every kernel with a correlation id has an ac2g flow end at its start on its device/stream
    fin = {(e["id"], e["pid"], e["tid"], ns(e["ts"])) for e in d["traceEvents"]
           if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    starts = {e["id"] for e in d["traceEvents"] if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    kern = [e for e in d["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
    assert kern
    for k in kern:
        c = k["args"]["correlation"]
        assert (c, k["pid"], k["tid"], ns(k["ts"])) in fin, (name, k["name"])
        assert c in starts
    meta = [e for e in d["traceEvents"] if e.get("ph") == "M"]
    assert any(e["name"] == "process_name" and e["args"]["name"].startswith("GPU ") for e in meta)
    assert any(e["name"] == "thread_name" and e["args"]["name"].startswith("stream ") for e in meta)
print("python check ok")
PY
echo "export_roundtrip: ok"
