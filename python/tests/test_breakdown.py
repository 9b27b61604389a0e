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
