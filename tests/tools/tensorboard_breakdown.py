#!/usr/bin/env python3
"""Produce tests/data/tensorboard/breakdown.json: the step-time breakdown of TensorBoard's
PyTorch profiler plugin (torch_tb_profiler 0.4.3) on the shared traces, the independent numbers
tally's breakdown view is tested against (python/tests/test_breakdown.py).

Not run by the tests: it needs the plugin's source and pandas. How the file was made (see
tests/tools/tensorboard_memory.py for getting the plugin):

    /usr/bin/python3 tests/tools/tensorboard_breakdown.py /tmp/tbp/tb_plugin ../shared/traces \
        > tests/data/tensorboard/breakdown.json

The plugin is used as a library: RunProfileData(...).process() runs its EventParser (steps,
their extension to the device work they launched, the category ranges) and OverallParser
(each step's costs by priority, and their average); the values are its steps_costs and
avg_costs, in microseconds as the trace writes them, and the kept steps' spans and names.
"""
import decimal
import gzip
import json
import os
import sys

TRACES = [
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50_nw4_worker0.1623212756351.pt.trace.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "hta_nccl_data.json.gz",
    "hta_df_index_resolver.json.gz",
    "hta_sampled_rank-0.json.gz",
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "hta_cpu_only_rank-34.pt.trace.json.gz",
]

ROLES = ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec",
         "Other", "Total"]


def floats(x):
    """Every Decimal in a parsed JSON value as a float."""
    if isinstance(x, decimal.Decimal):
        return float(x)
    if isinstance(x, dict):
        return {k: floats(v) for k, v in x.items()}
    if isinstance(x, list):
        return [floats(v) for v in x]
    return x


def breakdown(path):
    from torch_tb_profiler.profiler.data import RunProfileData

    with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
        data = json.load(f, parse_float=decimal.Decimal)
    # The plugin computes in float us. Timestamps since the epoch in us with ns fractions
    # (1.7e9 s = 1.7e15 us) keep only a quarter of a us in a double, which makes the plugin's
    # sums drift by microseconds; every definition here is invariant under a shift of time, so
    # each trace is shifted (exactly, in decimal) to start near 0, where a double holds its ns.
    base = min(int(e["ts"]) for e in data["traceEvents"] if "ts" in e and e.get("ph") == "X")
    for e in data["traceEvents"]:
        if "ts" in e and isinstance(e["ts"], (int, decimal.Decimal)):
            e["ts"] = e["ts"] - base
    data = floats(data)
    p = RunProfileData("worker", None, data)
    p.process()
    return {
        "step_names": list(p.steps_names),
        "per_step": [dict(zip(ROLES, c.costs)) for c in p.steps_costs],
        "average": dict(zip(ROLES, p.avg_costs.costs)),
    }


def main():
    plugin, traces = sys.argv[1], sys.argv[2]
    sys.path.insert(0, plugin)
    out = {"traces": {}}
    out.update({
        "_about": "Step-time breakdown of TensorBoard's PyTorch profiler plugin (torch_tb_profiler "
                  "0.4.3, pytorch/kineto at the parent of 94979607) on the shared traces, "
                  "produced by tests/tools/tensorboard_breakdown.py: per trace the kept steps' "
                  "names, each step's costs by category and their average (Total = the step's "
                  "extended duration), in microseconds.",
    })
    for name in TRACES:
        path = os.path.join(traces, name)
        if os.path.exists(path):
            out["traces"][name] = breakdown(path)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
