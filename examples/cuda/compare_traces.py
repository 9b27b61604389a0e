#!/usr/bin/env python3
"""compare_traces.py — compare the GPU kernels of two Chrome traces (tally's and PyTorch's).

  compare_traces.py TALLY_TRACE TORCH_TRACE [--steps N] [--json OUT]

Each trace is a Chrome trace (.json or .json.gz) or a .tsv written by
`tests/integration/nvtx_dump FILE.tally --kernels` (tally's native trace, read directly).

For each kernel name: count and total duration in each trace. A trace may hold a different
number of steps; --steps-a/--steps-b rescale counts and totals to per-step values when they
differ. Prints a table of the 25 largest kernels, then the verdicts: same kernel names, same
counts, per-name totals within 5% (for kernels that take at least 0.5% of the GPU time).
"""
import argparse
import gzip
import json
import sys
from collections import defaultdict


def load(path):
    if path.endswith(".tsv"):  # tests/integration/nvtx_dump FILE.tally --kernels: cat, name, ns
        events = []
        with open(path) as f:
            for line in f:
                cat, name, ns = line.rstrip("\n").split("\t")
                events.append({"ph": "X", "cat": cat, "name": name, "dur": int(ns) / 1000.0})
        return events
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return events


def stats(events, cat):
    count = defaultdict(int)
    total = defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() == cat:
            count[e["name"]] += 1
            total[e["name"]] += float(e.get("dur", 0.0))
    return count, total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a", help="tally's trace")
    p.add_argument("b", help="PyTorch's trace")
    p.add_argument("--steps-a", type=int, default=1)
    p.add_argument("--steps-b", type=int, default=1)
    p.add_argument("--json")
    args = p.parse_args()
    ea, eb = load(args.a), load(args.b)
    out = {}
    for cat in ("kernel", "gpu_memcpy", "gpu_memset", "cpu_op"):
        ca, ta = stats(ea, cat)
        cb, tb = stats(eb, cat)
        out[cat] = {"a_names": len(ca), "b_names": len(cb), "a_count": sum(ca.values()),
                    "b_count": sum(cb.values()), "a_us": sum(ta.values()), "b_us": sum(tb.values())}
    ca, ta = stats(ea, "kernel")
    cb, tb = stats(eb, "kernel")
    names = set(ca) | set(cb)
    only_a = sorted(n for n in names if n not in cb)
    only_b = sorted(n for n in names if n not in ca)
    sa, sb = float(args.steps_a), float(args.steps_b)
    gpu_b = sum(tb.values()) / sb or 1.0
    rows = []
    count_mismatch = []
    total_off = []
    for n in names:
        a_c, b_c = ca.get(n, 0) / sa, cb.get(n, 0) / sb
        a_t, b_t = ta.get(n, 0.0) / sa, tb.get(n, 0.0) / sb
        rows.append((b_t, n, a_c, b_c, a_t, b_t))
        if abs(a_c - b_c) > 1e-9:
            count_mismatch.append(n)
        if b_t / gpu_b >= 0.005 and b_t > 0 and abs(a_t - b_t) / b_t > 0.05:
            total_off.append((n, a_t, b_t))
    rows.sort(reverse=True)
    print("%-70s %8s %8s %11s %11s %7s" % ("kernel (per step)", "n tally", "n torch",
                                            "us tally", "us torch", "diff%"))
    for _, n, a_c, b_c, a_t, b_t in rows[:25]:
        diff = (a_t - b_t) / b_t * 100 if b_t else float("nan")
        print("%-70s %8.1f %8.1f %11.1f %11.1f %7.1f" % (n[:70], a_c, b_c, a_t, b_t, diff))
    print()
    for cat, d in out.items():
        print("%-10s tally: %5d names %7d events %12.1f us | torch: %5d names %7d events %12.1f us"
              % (cat, d["a_names"], d["a_count"], d["a_us"], d["b_names"], d["b_count"], d["b_us"]))
    print()
    print("kernel names only in tally: %d %s" % (len(only_a), only_a[:5]))
    print("kernel names only in torch: %d %s" % (len(only_b), only_b[:5]))
    print("kernels whose count differs: %d %s" % (len(count_mismatch), count_mismatch[:5]))
    print("kernels (>=0.5%% of GPU time) whose total differs by more than 5%%: %d" % len(total_off))
    for n, a_t, b_t in sorted(total_off, key=lambda r: -r[2])[:10]:
        print("   %-70s %10.1f %10.1f" % (n[:70], a_t, b_t))
    verdict = {
        "same_names": not only_a and not only_b,
        "same_counts": not count_mismatch,
        "totals_within_5pct": not total_off,
        "categories": out,
    }
    print("VERDICT same_names=%s same_counts=%s totals_within_5pct=%s"
          % (verdict["same_names"], verdict["same_counts"], verdict["totals_within_5pct"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(verdict, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
