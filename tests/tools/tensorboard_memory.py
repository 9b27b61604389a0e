#!/usr/bin/env python3
"""Produce tests/data/tensorboard/memory.json: the Memory view of TensorBoard's PyTorch profiler
plugin (torch_tb_profiler) on the shared traces, the independent numbers tally's memory view is
tested against (python/tests/test_memory.py).

Not run by the tests: it needs the plugin's source and pandas. How the file was made:

    git -C kineto archive 94979607^ tb_plugin/torch_tb_profiler | tar -x -C /tmp/tbp
    apt-get install python3-pandas
    /usr/bin/python3 tests/tools/tensorboard_memory.py /tmp/tbp/tb_plugin ../shared/traces \
        > tests/data/tensorboard/memory.json

(94979607 is the kineto commit that removed the plugin; its parent holds version 0.4.3.) The
plugin is used as a library, through the same calls its web views make: RunProfileData.process
and analyze, RunGenerator, then RunProfile.get_memory_stats (the "Memory Statistics" table, in
bytes) and the snapshot's get_peak_memory (the "Peak Memory Usage" of the memory curve).
"""
import gzip
import json
import os
import sys

TRACES = [
    "hta_df_index_resolver.json.gz",
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50_nw4_worker0.1623212756351.pt.trace.json.gz",
]


def memory_view(path):
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
        data = json.load(f)
    p = RunProfileData.from_json("worker", None, data)
    p.process()
    p.analyze()
    run = RunGenerator("worker", None, p).generate_run_profile()
    stats = run.get_memory_stats(memory_metric="B")["rows"]
    peaks = {}
    for (dev_type, dev_id), v in run.memory_snapshot.get_peak_memory().items():
        peaks["CPU" if int(dev_type) == 0 else "GPU%d" % dev_id] = int(v)
    return {
        "peaks": peaks,
        "stats": {dev: [[r[0]] + [int(x) for x in r[1:]] for r in rows]
                  for dev, rows in stats.items()},
    }


def main():
    plugin, traces = sys.argv[1], sys.argv[2]
    sys.path.insert(0, plugin)
    out = {
        "_about": "Memory view of TensorBoard's PyTorch profiler plugin (torch_tb_profiler "
                  "0.4.3, pytorch/kineto at the parent of 94979607) on the shared traces, "
                  "produced by tests/tools/tensorboard_memory.py: per device the peak (max Total "
                  "Allocated) and the Memory Statistics rows [name, calls, size increase, self "
                  "size increase, allocation count, self allocation count, allocation size, self "
                  "allocation size], in bytes.",
        "traces": {name: memory_view(os.path.join(traces, name)) for name in TRACES},
    }
    json.dump(out, sys.stdout, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
