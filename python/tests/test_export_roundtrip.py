"""`tally export` loses nothing it read (docs/export.md): on every real PyTorch trace in
../shared/traces (skipped when absent), the events and the top-level members of export(x) equal
those of x, up to key order, event order and number formatting, and every view of
`tally report --format json` gives the same numbers on both (the trace's path aside). Also: the
name export gives its output without -o, which TensorBoard's plugin lists (*.pt.trace.json.gz).
"""

import gzip
import json
import os
import shutil

import pytest

from helpers import REPO, cli

TRACES = "/work/shared/traces"
NAMES = sorted(f for f in os.listdir(TRACES) if f.endswith(".json.gz")) if os.path.isdir(
    TRACES) else []


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return {"traceEvents": doc} if isinstance(doc, list) else doc


def canon(value):
    """One text per JSON value, whatever its key order; numbers as Python parses them."""
    return json.dumps(value, sort_keys=True)


def export(src, out):
    p = cli("export", src, "-o", out)
    assert p.returncode == 0, p.stderr
    return load(os.fspath(out))


def report(path):
    p = cli("report", "--format", "json", path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    doc["trace"].pop("path")  # the one thing that differs: where it was read from
    return doc


@pytest.mark.skipif(not NAMES, reason="no shared traces")
@pytest.mark.parametrize("name", NAMES)
def test_export_keeps_every_event_and_member(name, tmp_path):
    src = os.path.join(TRACES, name)
    x = load(src)
    y = export(src, tmp_path / "out.pt.trace.json.gz")
    ex = sorted(canon(e) for e in x["traceEvents"])
    ey = sorted(canon(e) for e in y["traceEvents"])
    assert len(ey) == len(ex)
    assert ey == ex
    meta_x = {k: v for k, v in x.items() if k != "traceEvents"}
    meta_y = {k: v for k, v in y.items() if k != "traceEvents"}
    assert canon(meta_y) == canon(meta_x)


@pytest.mark.skipif(not NAMES, reason="no shared traces")
@pytest.mark.parametrize("name", NAMES)
def test_every_view_reads_the_same_from_the_export(name, tmp_path):
    src = os.path.join(TRACES, name)
    out = tmp_path / "out.pt.trace.json.gz"
    export(src, out)
    a, b = report(src), report(os.fspath(out))
    assert a["trace"]["events"] > 0
    assert canon(b) == canon(a)


@pytest.mark.skipif(not NAMES, reason="no shared traces")
def test_kept_fields_tensorboard_needs(tmp_path):
    """The fields users found missing, looked up by name in one NCCL trace's export."""
    y = export(os.path.join(TRACES, "hta_nccl_data.json.gz"), tmp_path / "n.pt.trace.json.gz")
    evs = y["traceEvents"]
    comms = [e for e in evs if e.get("name") == "record_param_comms"]
    assert comms and all("Collective name" in e["args"] for e in comms)
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert kernels and all({"grid", "block", "registers per thread"} <= set(e["args"])
                           for e in kernels)
    assert any("External id" in e.get("args", {}) for e in evs if e.get("cat") == "cpu_op")
    assert {e["ph"] for e in evs if e.get("cat") in ("ac2g", "fwdbwd")} >= {"s", "f"}
    assert any(e.get("name") == "process_name" for e in evs)
    assert y["distributedInfo"]["world_size"] == 2 and "pg_config" in y["distributedInfo"]
    assert y["deviceProperties"] and "baseTimeNanoseconds" in y


def test_default_output_name(tmp_path):
    """Without -o: FILE's trace endings become .pt.trace.json.gz beside it; an input that has
    that name already is never written over."""
    src = os.path.join(REPO, "tests", "data", "torch_mlp.trace.json")
    local = tmp_path / "run.trace.json"
    shutil.copy(src, local)
    assert cli("export", local).returncode == 0
    first = tmp_path / "run.pt.trace.json.gz"
    assert first.exists()
    assert sorted(canon(e) for e in load(os.fspath(first))["traceEvents"]) == sorted(
        canon(e) for e in load(src)["traceEvents"])
    again = cli("export", first)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "run.export.pt.trace.json.gz").exists()
    assert load(os.fspath(first))  # the input is still whole


def test_stdin_needs_output():
    p = cli("export", "-", input="[]")
    assert p.returncode == 2 and "-o OUT" in p.stderr
