#!/usr/bin/env python3
"""bench_python.py — what `with tally.range("x"): pass` costs from Python.

Prints the cost of one `with tally.range("x"): pass`, as a program writes it (a module attribute
lookup, the call, the with statement), in ns per range:
  recording       inside an active window (a push and a pop recorded)
  window closed   in a running session between windows (the schedule's wait steps)
  no session      before any tally.profile
  decorator       a call of a function decorated with @tally.range("x"), recording, minus the
                  call of the same function undecorated
Each figure is the median over interleaved repetitions of (time of N ranges - time of the same
loop with `pass` alone) / N: the recording and closed repetitions alternate step by step under a
schedule (wait=1, active=1), so that drifts of the machine reach both alike.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py [--n 200000] [--reps 15]

Targets (issue 8): <= 500 ns recording, <= 150 ns outside the active window.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import tally


def loop_empty(n):
    t = time.perf_counter_ns()
    for _ in range(n):  # noqa: B007
        pass
    return time.perf_counter_ns() - t


def loop_range(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        with tally.range("x"):
            pass
    return time.perf_counter_ns() - t


def plain(a):
    return a


@tally.range("x")
def decorated(a):
    return a


def loop_call(fn, n):
    t = time.perf_counter_ns()
    for _ in range(n):
        fn(1)
    return time.perf_counter_ns() - t


def per_range(t_with, t_base, n):
    return (t_with - t_base) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200000, help="ranges per repetition")
    ap.add_argument("--reps", type=int, default=15, help="repetitions of each kind")
    args = ap.parse_args()
    n = args.n

    res = {"recording": [], "window closed": [], "no session": [], "decorator": []}
    for _ in range(args.reps):  # before any session
        res["no session"].append(per_range(loop_range(n), loop_empty(n), n))

    out = tempfile.mkdtemp(prefix="bench_python-")
    # steps alternate: 0 closed (wait), 1 recorded (active), 2 closed, ...
    sched = tally.schedule(wait=1, active=1)
    with tally.profile(schedule=sched, output_dir=out, torch=False,
                       on_trace_ready=lambda w: os.unlink(w.path)) as p:
        for _ in range(args.reps):
            for kind in ("window closed", "recording"):
                base = loop_empty(n)
                res[kind].append(per_range(loop_range(n), base, n))
                if kind == "recording":
                    d = loop_call(decorated, n)
                    res["decorator"].append(per_range(d, loop_call(plain, n), n))
                p.step()
        stats = p.stats()
    os.rmdir(out)

    print(f"tally {tally.__version__}, Python {sys.version.split()[0]} ({sys.executable}), "
          f"{n} ranges x {args.reps} repetitions, medians (min-max)")
    for kind, v in res.items():
        print(f"  {kind:14s} {statistics.median(v):7.1f} ns per range  "
              f"({min(v):.1f}-{max(v):.1f})")
    print(f"  records {stats['records']}, dropped {stats['dropped']}")


if __name__ == "__main__":
    main()
