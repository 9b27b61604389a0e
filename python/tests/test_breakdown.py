"""`tally report --views breakdown` against TensorBoard's PyTorch profiler plugin on the shared
traces: the same steps (the plugin keeps, extends and drops steps by its own rules) and, per
step and on average, the same Kernel, Memcpy, Memset, Communication, Runtime, DataLoader,
CPU Exec and Other times. The plugin's numbers come from running torch_tb_profiler 0.4.3 on the
same files (tests/tools/tensorboard_breakdown.py); they are in the trace's microseconds."""

import json
import os

import pytest

from helpers import REPO, cli

TRACES = os.path.join(os.path.dirname(REPO), "shared", "traces")
TENSORBOARD = os.path.join(REPO, "tests", "data", "tensorboard", "breakdown.json")

with open(TENSORBOARD) as f:
    TB = json.load(f)["traces"]

COLUMNS = {"Kernel": "kernel_us", "Memcpy": "memcpy_us", "Memset": "memset_us",
           "Communication": "communication_us", "Runtime": "runtime_us",
           "DataLoader": "dataloader_us", "CPU Exec": "cpu_exec_us", "Other": "other_us",
           "Total": "step_us"}


def shared_trace(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"the shared traces are not here: {path} is missing")
    return path


def breakdown(path):
    p = cli("report", "--views", "breakdown", "--format", "json", path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def close(got, want, total):
    # ns in tally, float us in the plugin: a few ns of rounding per interval edge
    return abs(got - want) <= 0.01 + 1e-7 * total


@pytest.mark.parametrize("name", sorted(TB))
def test_breakdown_equals_tensorboard(name):
    tb = TB[name]
    doc = breakdown(shared_trace(name))
    rows = doc["breakdown"]["rows"]
    steps = [r for r in rows if r["step"] != "Average"]
    avg = [r for r in rows if r["step"] == "Average"][0]
    assert [s["step"].split("#")[-1] for s in steps] == tb["step_names"]
    for got, want in zip(steps + [avg], tb["per_step"] + [tb["average"]]):
        for role, key in COLUMNS.items():
            g = got.get(key, 0.0)  # no Communication column without communication
            assert close(g, want[role], want["Total"]), (got["step"], role, g, want[role])
    # each step adds up: every moment in exactly one category
    for s in steps:
        parts = sum(s.get(k, 0.0) for r, k in COLUMNS.items() if r != "Total")
        assert abs(parts - s["step_us"]) < 0.01, s
    shares = {r["category"]: r["ratio_pct"] for r in doc["breakdown_avg"]["rows"]}
    assert abs(sum(shares.values()) - 100.0) < 0.01, shares


def host_step_durs_us(path):
    """The trace's ProfilerStep# ranges on the host, by name, read here from the file."""
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return {e["name"]: e["dur"] for e in events
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
            and e.get("cat") != "gpu_user_annotation"}


UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


@pytest.mark.parametrize("name", sorted(TB))
def test_step_time_unlike_the_host_steps_is_said(name):
    """Where the plugin's steps (reaching to the end of their device work) are not the host's,
    the breakdown says so and gives the host steps' mean, as the perf and model views show it."""
    import re
    path = shared_trace(name)
    doc = breakdown(path)
    rows = doc["breakdown"]["rows"]
    avg = [r for r in rows if r["step"] == "Average"][0]["step_us"]
    durs = host_step_durs_us(path)
    kept = [durs[r["step"]] for r in rows if r["step"] != "Average"]  # the steps it kept
    host = sum(kept) / len(kept)
    dropped = [n for n in doc["breakdown"]["notes"] if "trailing step(s) left out" in n]
    assert bool(dropped) == (len(kept) < len(durs)), doc["breakdown"]["notes"]
    if dropped:  # the count the other views have is said
        assert dropped[0].endswith(f"the other views count all {len(durs)}."), dropped
    notes = [n for n in doc["breakdown"]["notes"] if n.startswith("Step Time is the plugin's")]
    if abs(avg - host) < 0.001:
        assert not notes, notes
        return
    assert len(notes) == 1, doc["breakdown"]["notes"]
    m = re.search(r"average ([0-9.]+)(ns|us|ms|s)\.$", notes[0])
    assert m, notes[0]
    said = float(m.group(1)) * UNIT_US[m.group(2)]
    # printed with three decimals of its unit
    assert abs(said - host) <= 0.0005 * UNIT_US[m.group(2)] + 0.001, (said, host)
