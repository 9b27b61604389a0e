"""tally.load: any trace the command line reads, with the same rows and the same errors."""

import json
import pathlib

import pytest

import tally
from helpers import TORCH_MLP, cli


def cli_json(*args):
    return json.loads(cli(*args, "--format", "json", check=True).stdout)


def test_a_pytorch_trace_gives_the_rows_of_tally_ops():
    t = tally.load(TORCH_MLP)
    assert t.source == "torch_legacy" and t.events > 0  # torch 1.13 CPU: no Kineto
    assert t.table("ops") == cli_json("ops", TORCH_MLP)["ops"]["rows"]
    assert (t.table("ops", sort="cpu_time_total", top=5)
            == cli_json("ops", TORCH_MLP, "--sort", "cpu_time_total", "--top", "5")["ops"]["rows"])
    rows = t.table("ops")
    # known by construction (tests/data/torch_gen.py): 3 profiled steps of a 2-layer MLP
    c = {r["name"]: r["calls"] for r in rows}
    assert c["ProfilerStep*"] == 3 and c["aten::linear"] == 6
    assert set(rows[0]) == {"name", "self_cpu_pct", "self_cpu_us", "cpu_total_pct",
                            "cpu_total_us", "cpu_avg_us", "calls"}


def test_report_is_the_text_of_tally_report():
    t = tally.load(pathlib.Path(TORCH_MLP))
    assert t.report() == cli("report", TORCH_MLP, check=True).stdout
    assert (t.report(views="model,ops", top=3)
            == cli("report", TORCH_MLP, "--views", "model,ops", "--top", "3", check=True).stdout)


def test_every_view_and_table_key_is_reachable():
    t = tally.load(TORCH_MLP)
    doc = cli_json("report", TORCH_MLP)
    for key, tab in doc.items():
        if isinstance(tab, dict) and "rows" in tab:
            assert t.table(key) == tab["rows"], key


def cli_error(*args):
    p = cli(*args)
    assert p.returncode != 0
    line = p.stderr.strip().splitlines()[-1]
    verb = args[0]
    assert line.startswith(f"tally {verb}: ")
    return line[len(f"tally {verb}: "):]


def test_errors_carry_the_command_lines_message(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(tally.TallyError) as e:
        tally.load(missing)
    assert str(e.value) == cli_error("report", missing)

    notrace = tmp_path / "notes.txt"
    notrace.write_text("# not a trace\n")
    with pytest.raises(tally.TallyError) as e:
        tally.load(notrace)
    assert str(e.value) == cli_error("report", notrace)

    t = tally.load(TORCH_MLP)
    with pytest.raises(tally.TallyError) as e:
        t.table("kernels")
    assert str(e.value) == cli_error("report", TORCH_MLP, "--views", "kernels")
    with pytest.raises(tally.TallyError) as e:
        t.report(views="overview,bogus")
    assert str(e.value) == cli_error("report", TORCH_MLP, "--views", "overview,bogus")
    with pytest.raises(tally.TallyError) as e:
        t.table("ops", sort="bogus_key")
    assert str(e.value) == cli_error("ops", TORCH_MLP, "--sort", "bogus_key")
    with pytest.raises(tally.TallyError) as e:
        t.report(views="ops", sort="bogus_key")
    assert str(e.value) == cli_error("report", TORCH_MLP, "--views", "ops", "--sort", "bogus_key")
    with pytest.raises(tally.TallyError, match="not sortable"):
        t.table("model", sort="calls")
