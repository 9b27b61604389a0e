"""bench_torch.py — what recording PyTorch's operators adds to a training step: tally against
torch.profiler, side by side in one process.

A small transformer (2 encoder layers, d_model 64, 4 heads, batch 4 x 16 tokens, AdamW) trains
on the CPU; each repetition times STEPS steps in every mode, the modes in turn (interleaved, so
that the machine's load hits them alike), and the medians over the repetitions are compared:

  plain                 no profiler
  tally                 tally.profile(torch=True, record_shapes=True)
  tally, no shapes      tally.profile(torch=True)
  hooks only            tally's callbacks registered with input shapes, recording nothing: what
                        PyTorch's RecordFunction machinery alone costs (the floor of any
                        profiler built on it, torch.profiler included)
  torch.profiler        torch.profiler.profile(activities=[CPU], record_shapes=True)
  torch, no shapes      the same without record_shapes

Step time only: what each profiler does once the steps are over (torch.profiler builds its event
tree, tally writes the end of its file) is not in it.

    /usr/bin/python3 bench/bench_torch.py [--reps 7] [--steps 20]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.environ.get("TALLY_PYTHONPATH", ""))
import tally  # noqa: E402
import tally._torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16, 64)

    def step():
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()

    for _ in range(5):
        step()

    def timed():
        ts = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    out = tempfile.mkdtemp(prefix="tally-bench-torch-")
    modes = ["plain", "tally", "tally, no shapes", "hooks only", "torch.profiler",
             "torch, no shapes"]
    res = {m: [] for m in modes}
    for _ in range(a.reps):
        res["plain"].append(timed())
        for shapes, m in ((True, "tally"), (False, "tally, no shapes")):
            with tally.profile(output_dir=out, torch=True, record_shapes=shapes,
                               on_trace_ready=lambda w: None):
                res[m].append(timed())
        tally._torch.enable(record_shapes=True, dry_run=True)
        res["hooks only"].append(timed())
        tally._torch.disable()
        for shapes, m in ((True, "torch.profiler"), (False, "torch, no shapes")):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        record_shapes=shapes):
                res[m].append(timed())

    # operators a step, from tally's own trace
    with tally.profile(output_dir=out, torch=True) as p:
        step()
        p.step()
    ops = sum(r["calls"] for r in p.table("ops") if not r["name"].startswith("ProfilerStep"))

    med = {m: statistics.median(v) * 1e3 for m, v in res.items()}
    base = med["plain"]
    print("bench_torch: torch %s, %d reps x %d steps, medians; ~%d operators a step"
          % (torch.__version__, a.reps, a.steps, ops))
    print("  %-18s %10s %10s %12s" % ("mode", "step ms", "added ms", "added/op ns"))
    for m in modes:
        add = med[m] - base
        print("  %-18s %10.3f %10.3f %12.0f" % (m, med[m], add if m != "plain" else 0,
                                                 add * 1e6 / ops if m != "plain" else 0))
    t, p_ = med["tally"] - base, med["torch.profiler"] - base
    print("  tally adds %.2fx what torch.profiler adds (record_shapes=True; target <= 0.3)"
          % (t / p_ if p_ > 0 else float("nan")))
    h = med["hooks only"] - base
    print("  PyTorch's hooks alone add %.2fx what torch.profiler adds; tally's own recording "
          "%.0f ns an operator" % (h / p_ if p_ > 0 else float("nan"), (t - h) * 1e6 / ops))
    tn, pn = med["tally, no shapes"] - base, med["torch, no shapes"] - base
    print("  without shapes: %.2fx" % (tn / pn if pn > 0 else float("nan")))


if __name__ == "__main__":
    main()
