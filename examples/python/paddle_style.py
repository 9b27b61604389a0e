#!/usr/bin/env python3
"""paddle_style.py — tally with Paddle Profiler's names, as the Paddle seed uses them.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/paddle_style.py

Paddle                                              tally
  profiler.Profiler(scheduler=(2, 5), ...)            tally.profile(scheduler=(2, 5), ...)
  profiler.make_scheduler(closed=1, ready=1,          tally.schedule(closed=1, ready=1,
                          record=2, repeat=2)                        record=2, repeat=2)
  on_trace_ready=callback(prof)                       on_trace_ready=callback(window)
  p.step(num_samples=BATCH)                           p.step(num_samples=BATCH)
  p.summary(sorted_by=..., op_detail=True)            p.report(views=..., sort=...)
  Profiler(timer_only=True): the benchmark summary    tally.profile(timer_only=True)

The workload needs nothing but Python: a reader that takes 2 ms per batch and a train step of
6 ms (forward 2, backward 3, optimizer 1), so that what is printed is known in advance: a reader
ratio of 25 % and 2,000 samples/s at 16 samples per 8 ms step.
"""

import os
import sys
import tempfile
import time

import tally

BATCH = 16


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def reader():
    while True:
        with tally.range("read batch", "dataloader"):
            spin(0.002)
        yield BATCH


def train_step():
    with tally.range("forward", "forward"):
        spin(0.002)
    with tally.range("backward", "backward"):
        spin(0.003)
    with tally.range("optimizer", "optimizer"):
        spin(0.001)


def trace_ready(window):
    """What Paddle's callback does with export_chrome_tracing + prof.summary(): here, the
    window's file is already written; print a part of its report."""
    print(f"-- window {window.index}: steps {window.steps.start}-{window.steps.stop - 1} "
          f"in {os.path.basename(window.path)}")
    print(window.report(views="model"))


def run(p, steps):
    data = reader()
    p.start()
    for _ in range(steps):
        n = next(data)
        train_step()
        p.step(num_samples=n)
    p.stop()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="paddle_style-")

    # 1. scheduler=(2, 5): Paddle's half-open range, steps 2, 3 and 4 are recorded
    print("== scheduler=(2, 5)")
    p = tally.profile(scheduler=(2, 5), output_dir=out, on_trace_ready=trace_ready)
    run(p, 8)
    print(p.report(views="perf,overview"))

    # 2. make_scheduler's names: closed, ready, record, repeat -> steps 2-3 and 6-7
    print("== tally.schedule(closed=1, ready=1, record=2, repeat=2)")
    p = tally.profile(schedule=tally.schedule(closed=1, ready=1, record=2, repeat=2),
                      output_dir=out, on_trace_ready=trace_ready)
    run(p, 10)
    print("windows:", [list(w.steps) for w in p.windows])

    # 3. timer_only=True: no trace, only the benchmark summary (reader_cost, batch_cost, ips),
    # printed on stderr at stop() as Paddle prints it
    print("== timer_only=True")
    sys.stdout.flush()
    run(tally.profile(timer_only=True), 10)
    print(f"traces in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
