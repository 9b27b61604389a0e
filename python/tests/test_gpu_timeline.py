"""`tally report --views gpu --window all --linked-only` against TraceLens's GPU timeline,
computed here from the raw JSON of shared traces by TraceLens's own algorithm, re-implemented in
a few lines (TraceLens itself, AMD-AGI/TraceLens, is not installable here):

- a GPU event (cat kernel, gpu_memcpy, gpu_memset) counts when TraceLens puts it in its tree:
  a cuda_runtime / cuda_driver event's correlation id has an ac2g flow start and end, and the
  end's (pid, tid, id) names the GPU event (Trace2Tree.add_gpu_ops_to_tree); for
  cudaGraphLaunch every GPU event with its correlation id;
- communication: kernels and memsets whose name contains nccl, rccl or cross_device_reduce
  (any case); memcpy: gpu_memcpy; computation: the rest (memsets included);
- unions per class; exposed comm = comm - comp; exposed memcpy = memcpy - comp - comm;
  busy = union of all; total = last end - first start; idle = total - busy.
Every device of the trace is pooled (TraceLens's PyTorch analyser does not split by pid): the
pooled row is tally's "all devices" row when the trace has several devices, else its one row.
"""

import gzip
import json
import os
import re
from decimal import Decimal

import pytest
from helpers import cli

TRACES = "/work/shared/traces"
# The traces with ac2g flows (TraceLens links a kernel to its launch through them; on a trace
# without flows, such as hta_sampled_rank-0, it finds no GPU event at all and raises).
FILES = [
    "hta_nccl_data.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "hta_df_index_resolver.json.gz",
]
COMM = re.compile("nccl|rccl|cross_device_reduce", re.IGNORECASE)


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def subtract(a, b):
    """a minus b, both unions."""
    out, j = [], 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k, cur = j, s
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append([cur, b[k][0]])
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append([cur, e])
    return out


def length(iv):
    return sum(e - s for s, e in iv)


def tracelens_gpu_timeline(path):
    # timestamps as decimals, then integer ns: a double holds 1.7e15 us only to 0.25 us
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    flow_s, flow_f, by_key, by_corr, runtime = {}, {}, {}, {}, []
    for e in events:
        cat = e.get("cat")
        if cat in ("cuda_runtime", "cuda_driver"):
            runtime.append(e)
        if cat == "ac2g":
            (flow_s if e.get("ph") == "s" else flow_f if e.get("ph") == "f" else {})[e["id"]] = e
            continue
        args = e.get("args")
        if not isinstance(args, dict) or args.get("correlation") is None:
            continue
        if cat in gpu_cats:
            by_corr.setdefault(args["correlation"], []).append(e)
        if e.get("pid") is not None and e.get("tid") is not None:
            by_key[(e["pid"], e["tid"], args["correlation"])] = e
    linked = {}
    for r in runtime:
        corr = (r.get("args") or {}).get("correlation")
        if r["name"] in ("cudaGraphLaunch", "hipGraphLaunch"):
            outs = by_corr.get(corr, [])
        else:
            s, f = flow_s.get(corr), flow_f.get(corr)
            out = by_key.get((f["pid"], f["tid"], f["id"])) if s and f else None
            outs = [out] if out else []
        for g in outs:
            linked[id(g)] = g
    comp, comm, copy, every = [], [], [], []
    for g in linked.values():
        if g.get("cat") not in gpu_cats:
            continue
        ts = round(Decimal(g["ts"]) * 1000)
        iv = (ts, ts + round(Decimal(g.get("dur", 0)) * 1000))
        every.append(iv)
        if g["cat"] == "gpu_memcpy":
            copy.append(iv)
        elif COMM.search(g.get("name") or ""):
            comm.append(iv)
        else:
            comp.append(iv)
    comp, comm, copy, every = union(comp), union(comm), union(copy), union(every)
    total = every[-1][1] - every[0][0]
    busy = length(every)
    us = lambda ns: ns / 1000  # noqa: E731
    return {
        "ops": len([g for g in linked.values() if g.get("cat") in gpu_cats]),
        "computation_us": us(length(comp)),
        "communication_us": us(length(comm)),
        "memcpy_us": us(length(copy)),
        "exposed_comm_us": us(length(subtract(comm, comp))),
        "exposed_memcpy_us": us(length(subtract(subtract(copy, comp), comm))),
        "busy_us": us(busy),
        "idle_us": us(total - busy),
        "total_us": us(total),
    }


@pytest.mark.parametrize("name", FILES)
def test_gpu_view_gives_tracelens_numbers(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"{TRACES} is not here")
    want = tracelens_gpu_timeline(path)
    p = cli("report", path, "--views", "gpu", "--window", "all", "--linked-only",
            "--format", "json", check=True)
    rows = json.loads(p.stdout)["gpu"]["rows"]
    got = rows[-1]  # "all devices" with several, else the one device
    assert got["ops"] == want["ops"]
    for key, value in want.items():
        if key == "ops":
            continue
        # both sides are integer ns, printed in µs with 3 decimals
        assert got[key] == pytest.approx(value, abs=1e-6), key
    print(name, {k: round(v, 3) for k, v in want.items()})
