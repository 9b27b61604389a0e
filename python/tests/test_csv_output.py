"""CSV output is plain CSV that scripts read unaided: every view of `tally report`, and the
tables of `tally ops`, `gaps` and `diff`, read by pandas.read_csv and by Python's csv module
with no option, on real PyTorch traces (../shared/traces; skipped when absent).

What is checked, per output: one header row (no comment or title line), the same header from
both readers, every row as long as the header, the rows and names equal to those of the JSON
output of the same command (names whole, '#' inside them kept), and values known from the
trace itself (its README's event counts)."""

import csv
import io
import json
import os
import re

import pytest

from helpers import REPO, cli

pd = pytest.importorskip("pandas")

TRACES = os.path.join(REPO, "..", "shared", "traces")
GPU = os.path.join(TRACES, "hta_ns_resolution_rank-0.pt.trace.json.gz")
MEM = os.path.join(TRACES, "hta_df_index_resolver.json.gz")
CPU = os.path.join(TRACES, "hta_cpu_only_rank-34.pt.trace.json.gz")

pytestmark = pytest.mark.skipif(not os.path.exists(GPU), reason="no shared traces")


def run(*args):
    p = cli(*args)
    assert p.returncode == 0, f"tally {args} exited {p.returncode}: {p.stderr}"
    return p.stdout


def views():
    """The view names `tally report --help` lists."""
    text = run("report", "--help")
    block = text.split("views (printed in this order):", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  (\w+) ", block, re.M)]


def json_tables(doc):
    """The tables of a JSON output, in order: (key, table); metadata and messages left out."""
    return [(k, v) for k, v in doc.items() if isinstance(v, dict) and "rows" in v]


def read_both(text):
    """The csv text read by pandas and by csv.reader; checks what both must agree on."""
    assert text, "empty csv"
    assert not text.startswith("#") and "\n#" not in text, "a comment line in the csv"
    df = pd.read_csv(io.StringIO(text))
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert list(df.columns) == header
    assert len(set(header)) == len(header), f"duplicate columns {header}"
    assert len(df) == len(body)
    assert all(len(r) == len(header) for r in body), "a row longer or shorter than the header"
    return df, header, body


def check_against_json(args, csv_text):
    """CSV rows and names are those of the JSON output of the same command."""
    df, header, body = read_both(csv_text)
    doc = json.loads(run(*args, "--format", "json"))
    tables = json_tables(doc)
    want_rows = [(key, r) for key, t in tables for r in t["rows"]]
    assert len(body) == len(want_rows)
    multi = len(tables) > 1
    assert (header[0] == "view") == multi
    for (key, jr), row in zip(want_rows, body):
        rec = dict(zip(header, row))
        if multi:
            assert rec["view"] == key
        for k, v in jr.items():
            if isinstance(v, str):
                assert rec[k] == v, f"{key}.{k}: csv {rec[k]!r}, json {v!r}"
            elif v is None:
                assert rec[k] == ""
            else:
                assert float(rec[k]) == pytest.approx(float(v), abs=1e-3), f"{key}.{k}"
    return df


@pytest.mark.parametrize("view", views())
def test_every_view_reads_back(view):
    trace = MEM if view == "memory" else GPU
    if not os.path.exists(trace):
        pytest.skip("trace absent")
    args = ("report", trace, "--views", view)
    df = check_against_json(args, run(*args, "--format", "csv"))
    assert len(df) > 0, f"view {view}: no rows"


def test_report_all_views_one_table():
    """All views in one csv: one header, a 'view' column naming each row's table."""
    df, header, _ = read_both(run("report", GPU, "--format", "csv"))
    assert header[0] == "view" and header[1] == "name"
    # the README of the shared traces: kernel=4350, each launched by one cudaLaunchKernel
    launches = df[(df["view"] == "ops") & (df["name"] == "cudaLaunchKernel")]
    assert len(launches) == 1 and int(launches["calls"].iloc[0]) == 4350
    gpu0 = df[(df["view"] == "device") & df["name"].str.startswith("GPU 0")]
    assert len(gpu0) == 1 and 0 < int(gpu0["kernels"].iloc[0]) <= 4350
    # a view's own columns: the rows of one view, the empty columns dropped
    ops = df[df["view"] == "ops"].dropna(axis=1, how="all")
    assert "self_cpu_us" in ops.columns and "kernels" not in ops.columns


def test_ops_names_with_hash_and_whole():
    args = ("ops", GPU)
    df = check_against_json(args, run(*args, "--format", "csv"))
    assert list(df.columns)[0] == "name"
    # PyTorch's annotation names hold '#': a comment character to a careless reader
    step = df[df["name"] == "Optimizer.step#SGD.step"]
    assert len(step) >= 1 and (step["calls"] == 5).all()  # ProfilerStep#101..#105
    assert df["name"].str.len().max() > 60  # never cut in csv
    kernels = df[df["cpu_total_us"] == 0]["calls"].sum()
    assert kernels >= 4350


def test_gaps_and_diff_read_back():
    for args in (("gaps", GPU), ("diff", GPU, GPU), ("ops", GPU, "--group-by-shape")):
        check_against_json(args, run(*args, "--format", "csv"))


@pytest.mark.skipif(not os.path.exists(CPU), reason="no CPU-only trace")
def test_diff_gpu_and_cpu_traces_either_order():
    for a, b in ((GPU, CPU), (CPU, GPU)):
        df, header, _ = read_both(run("diff", a, b, "--format", "csv"))
        assert header[0] == "view"
        assert set(df["view"]) >= {"step_time", "ops_diff"}


def test_json_carries_trace_metadata():
    doc = json.loads(run("ops", GPU, "--format", "json", "--top", "1"))
    meta = doc["trace"]
    assert meta["path"] == GPU and meta["source"] == "kineto"
    assert meta["rank"] == 0 and meta["world_size"] == 1 and meta["steps"] == 5
    assert meta["devices"] and meta["devices"][0]["name"].startswith("Tesla V100")
    doc = json.loads(run("diff", GPU, GPU, "--format", "json", "--top", "1"))
    assert [m["path"] for m in doc["traces"]] == [GPU, GPU]
