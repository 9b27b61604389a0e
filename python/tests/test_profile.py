"""tally.profile and tally.schedule: sessions, schedules in torch's and Paddle's forms, windows,
on_trace_ready, timer_only, file names, the report and the tables."""

import os
import re
import socket
import sys
import types

import pytest

import tally
from helpers import calls, cli, quiet_profile


def run_steps(p, n):
    for i in range(n):
        with tally.range(f"work{i}"):
            pass
        p.step()


def file_steps(path):
    """The step numbers whose ProfilerStep#N is in the file."""
    rows = tally.load(path).table("model_steps")
    return [int(r["step"].split("#")[1]) for r in rows if r["step"].startswith("ProfilerStep#")]


# (schedule, steps run, the steps recorded in each window), computed by hand from torch's rule:
# skip_first steps off, then cycles of wait off, warmup off (armed), active recorded.
SCHEDULES = [
    (tally.schedule(wait=1, warmup=1, active=2, repeat=1), 8, [[2, 3]]),
    (tally.schedule(wait=1, warmup=1, active=3, repeat=2), 12, [[2, 3, 4], [7, 8, 9]]),
    (tally.schedule(skip_first=3, wait=1, warmup=1, active=2, repeat=2), 14, [[5, 6], [9, 10]]),
    (tally.schedule(closed=1, ready=1, record=3, repeat=3), 16,
     [[2, 3, 4], [7, 8, 9], [12, 13, 14]]),
    # Paddle's documentation: skip_first=3, closed=2, ready=1, record=3 records 6-8, 12-14, 18-20
    (tally.schedule(skip_first=3, closed=2, ready=1, record=3), 21,
     [[6, 7, 8], [12, 13, 14], [18, 19, 20]]),
    (tally.schedule(active=2), 5, [[0, 1], [2, 3]]),  # repeat=0: forever; step 4 opens a third
    ((2, 5), 8, [[2, 3, 4]]),  # Paddle's scheduler=(2, 5): steps 2..4
    ((0, 3), 6, [[0, 1, 2]]),
    ([4, 5], 7, [[4]]),
]


@pytest.mark.parametrize("sched,nsteps,expected", SCHEDULES, ids=[repr(s[0]) for s in SCHEDULES])
def test_schedule_records_the_hand_computed_steps(tmp_path, sched, nsteps, expected):
    got = []
    with quiet_profile(tmp_path, schedule=sched, on_trace_ready=got.append) as p:
        run_steps(p, nsteps)
    full = [w for w in got if len(w.steps)]
    if isinstance(sched, tally.Schedule) and sched.active == 2 and sched.repeat == 0:
        # the window opened by the last step is closed by stop() with that step in it
        assert [list(w.steps) for w in got] == expected + [[4]]
        full = got[:-1]
    else:
        assert [list(w.steps) for w in got] == expected
    assert got == p.windows
    assert len({w.path for w in got}) == len(got)
    for w, want in zip(full, expected):
        assert os.path.dirname(w.path) == str(tmp_path)
        assert file_steps(w.path) == want
        names = {n for n in calls(w.load()) if n.startswith("work")}
        assert names == {f"work{i}" for i in want}
        if len(got) > 1:
            assert w.path.endswith(f"-w{w.index}.tally")


def test_no_schedule_records_every_step_in_one_window(tmp_path):
    got = []
    with quiet_profile(tmp_path, on_trace_ready=got.append) as p:
        run_steps(p, 4)
    assert len(got) == 1 and list(got[0].steps) == [0, 1, 2, 3]
    # the step still open at stop() is closed there, flagged, and is no step of the views
    # (src/analysis/steps.h): the file's steps are the four the program closed
    assert file_steps(got[0].path) == [0, 1, 2, 3]
    assert got[0].records > 0 and got[0].dropped == 0
    assert p.step_num == 4


def test_paddle_scheduler_keyword(tmp_path):
    with quiet_profile(tmp_path, scheduler=(1, 3)) as p:
        run_steps(p, 4)
    assert [list(w.steps) for w in p.windows] == [[1, 2]]
    with pytest.raises(TypeError):
        tally.profile(schedule=(1, 3), scheduler=(1, 3))


@pytest.mark.parametrize("bad,exc,text", [
    (lambda: tally.schedule(wait=-1, active=1), ValueError, "wait (closed) must be >= 0, got -1"),
    (lambda: tally.schedule(active=-2), ValueError, "must be >= 0"),
    (lambda: tally.schedule(skip_first=-1, active=1), ValueError, "skip_first must be >= 0"),
    (lambda: tally.schedule(repeat=-1, active=1), ValueError, "repeat must be >= 0"),
    (lambda: tally.schedule(closed=-3, record=1), ValueError, "must be >= 0"),
    (lambda: tally.schedule(wait=2), ValueError, "active (Paddle's record) must be > 0"),
    (lambda: tally.schedule(wait=1, closed=1, active=1), ValueError, "not both"),
    (lambda: tally.schedule(active=1.5), TypeError, "must be an int"),
    (lambda: tally.profile(schedule=(5, 2)), ValueError, "end must be > start"),
    (lambda: tally.profile(schedule=(3, 3)), ValueError, "end must be > start"),
    (lambda: tally.profile(schedule=(-1, 3)), ValueError, "start must be >= 0"),
    (lambda: tally.profile(schedule=(1, 2, 3)), TypeError, "pair"),
    (lambda: tally.profile(schedule="2:5"), TypeError, "tally.schedule(...)"),
])
def test_bad_schedules_raise_clearly(bad, exc, text):
    with pytest.raises(exc) as e:
        bad()
    assert text in str(e.value)


def test_profile_reentry_is_refused(tmp_path):
    p = quiet_profile(tmp_path)
    with p:
        with pytest.raises(tally.TallyError, match="already running"):
            p.start()
        with pytest.raises(tally.TallyError, match="already running"):
            with p:
                pass
        with pytest.raises(tally.TallyError, match="another tally.profile is running"):
            quiet_profile(tmp_path / "other").start()
        assert p.running
        with tally.range("still recorded"):
            pass
    assert not p.running
    assert "still recorded" in calls(p.windows[-1].load())
    # once stopped, a profile (this one or another) starts again, into new files
    with p:
        with tally.range("second session"):
            pass
    assert len(p.windows) == 2 and p.windows[0].path != p.windows[1].path
    assert "second session" in calls(p.windows[1].load())
    p.stop()  # stopping a stopped profile does nothing


def test_step_outside_a_running_profile_is_refused(tmp_path):
    p = quiet_profile(tmp_path)
    with pytest.raises(tally.TallyError, match="not running"):
        p.step()


def test_on_trace_ready_is_called_once_per_window_with_the_window(tmp_path):
    seen = []

    def ready(w):
        # the file is complete: it can be read from the callback
        seen.append((w.index, list(w.steps), w.records, w.dropped, sorted(calls(w.load()))))

    sched = tally.schedule(wait=1, active=2, repeat=2)
    with tally.profile(schedule=sched, output_dir=tmp_path, torch=False,
                       on_trace_ready=ready) as p:
        run_steps(p, 8)
    assert [s[:2] for s in seen] == [(0, [1, 2]), (1, [4, 5])]
    assert all(s[2] > 0 and s[3] == 0 for s in seen)
    assert seen[0][4] == ["ProfilerStep*", "work1", "work2"]


def test_an_exception_in_on_trace_ready_comes_out_of_step(tmp_path):
    def ready(w):
        raise RuntimeError(f"callback failed for window {w.index}")

    with tally.profile(schedule=tally.schedule(active=1, repeat=2), output_dir=tmp_path,
                       torch=False, on_trace_ready=ready) as p:
        with pytest.raises(RuntimeError, match="window 0"):
            p.step()
        with pytest.raises(RuntimeError, match="window 1"):
            p.step()
        p.step()  # no window ends here
    assert len(p.windows) == 2


def test_default_handler_prints_the_summary(tmp_path, capfd):
    with tally.profile(output_dir=tmp_path, torch=False) as p:
        run_steps(p, 2)
    err = capfd.readouterr().err
    assert "Perf Summary" in err and f"tally report {p.windows[0].path}" in err


def test_timer_only_writes_no_trace_and_prints_the_benchmark(tmp_path, capfd):
    out = tmp_path / "never"
    with tally.profile(output_dir=out, torch=False, timer_only=True) as p:
        for _ in range(4):
            with tally.range("load", "dataloader"):
                pass
            p.step(32)
    err = capfd.readouterr().err
    assert "Perf Summary" in err and "reader_cost" in err and "Steps: 4" in err
    assert not out.exists() and p.windows == []
    with pytest.raises(tally.TallyError, match="timer_only"):
        p.report()


def test_report_and_table_match_the_command_line(tmp_path):
    with quiet_profile(tmp_path) as p:
        for _ in range(3):
            with tally.range("load", "dataloader"):
                pass
            with tally.range("step body"):
                with tally.range("inner"):
                    pass
            p.step(16)
    text = p.report()
    assert "Model Summary" in text and "UserDefined Summary" in text and "inner" in text
    assert p.report(views="ranges") == p.report(views=["ranges"])
    path = p.windows[-1].path
    import json

    for view, argv in [("ops", ["ops", path]), ("ranges", ["report", path, "--views", "ranges"])]:
        doc = json.loads(cli(*argv, "--format", "json", check=True).stdout)
        assert p.table(view) == doc[view]["rows"]
        assert list(p.table(view)[0]) == [c["key"] for c in doc[view]["columns"]]
    assert {r["name"]: r["calls"] for r in p.table("ranges")} == {"step body": 3, "inner": 3}
    top = p.table("ops", sort="calls", top=2)
    assert len(top) == 2 and top[0]["calls"] >= top[1]["calls"]


def test_report_before_any_window_is_refused(tmp_path):
    p = quiet_profile(tmp_path, schedule=tally.schedule(wait=5, active=1, repeat=1))
    with p:
        run_steps(p, 2)
        with pytest.raises(tally.TallyError, match="no window has finished"):
            p.report()


def test_a_window_that_is_not_there_is_said_clearly(tmp_path):
    p = quiet_profile(tmp_path)
    with p:
        run_steps(p, 2)
    with pytest.raises(IndexError, match=r"window 5: this profile has 1 finished window \(0\.\.0"):
        p.report(window=5)
    with pytest.raises(TypeError, match="window must be an int"):
        p.table("ranges", window="a")
    assert p.report(window=0) == p.report()
    with pytest.raises(TypeError, match="sort=...\\): a column key"):
        p.table("ranges", sort=5)
    with pytest.raises(TypeError, match="top=...\\): the number of rows"):
        p.report(top="x")
    with pytest.raises(TypeError, match="name must be a str"):
        tally.profile(name=3)


def test_files_carry_the_rank_like_tensorboard_trace_handler(tmp_path, monkeypatch):
    host, pid = socket.gethostname(), os.getpid()
    with quiet_profile(tmp_path / "plain") as p:
        pass
    assert os.path.basename(p.windows[0].path) == f"tally-{host}-{pid}.tally"

    monkeypatch.setenv("RANK", "3")
    with quiet_profile(tmp_path / "rank") as p:
        pass
    assert os.path.basename(p.windows[0].path) == f"tally-{host}-{pid}-rank3.tally"
    with quiet_profile(tmp_path / "named", name="train-{rank}") as p:
        pass
    assert os.path.basename(p.windows[0].path) == "train-3.tally"

    monkeypatch.delenv("RANK")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with quiet_profile(tmp_path / "local", name="run") as p:
        pass
    assert os.path.basename(p.windows[0].path) == "run-rank1.tally"
    monkeypatch.delenv("LOCAL_RANK")
    for var in ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.setenv(var, "7")
        with quiet_profile(tmp_path / var, name="job") as p:
            pass
        assert os.path.basename(p.windows[0].path) == "job-rank7.tally"
        monkeypatch.delenv(var)
    # a file is never overwritten
    with quiet_profile(tmp_path / "plain") as p:
        pass
    assert os.path.basename(p.windows[0].path) == f"tally-{host}-{pid}-1.tally"
    with pytest.raises(ValueError):
        tally.profile(name="a/b")


def test_output_dir_defaults_to_tally_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with tally.profile(torch=False, on_trace_ready=lambda w: None) as p:
        pass
    assert os.path.dirname(p.windows[0].path) == str(tmp_path / "tally-out")


def test_json_gz_is_written_without_a_tally_binary(tmp_path):
    """TALLY_WRITE=json.gz from the package writes the .pt.trace.json.gz with the package's own
    command line (python3 -m tally) when no tally binary is on PATH or in TALLY_BIN: a
    pip-installed package has none (before, it said "the tally command was not found")."""
    import json, subprocess, sys, time
    code = ("import tally\n"
            "with tally.profile(torch=False, name='w') as p:\n"
            "    for i in range(2):\n"
            "        with tally.range('work'):\n"
            "            pass\n"
            "        p.step()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALLY_")}
    env.update(PATH="/usr/bin:/bin", TALLY_OUTPUT_DIR=str(tmp_path), TALLY_WRITE="tally,json.gz",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(tally.__file__))))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "not found" not in r.stderr, r.stderr
    out = tmp_path / "w.pt.trace.json.gz"
    for _ in range(200):  # the export runs in the background
        if out.exists() and out.stat().st_size > 0:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    import gzip
    with gzip.open(out, "rt") as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"]}
    assert "work" in names
    # TALLY_OUTPUT_DIR is where the files go: no empty tally-out/ beside them
    assert not (tmp_path / "tally-out").exists()


def test_torch_false_never_loads_the_shim(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    monkeypatch.delitem(sys.modules, "tally._torch", raising=False)
    monkeypatch.delattr(tally, "_torch", raising=False)
    with quiet_profile(tmp_path, torch=False) as p:
        assert not p.torch_recorded
    assert "tally._torch" not in sys.modules


def test_a_missing_shim_is_said_in_one_line_and_the_rest_works(tmp_path, monkeypatch, capfd):
    import tally._profile as prof

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # "torch is imported"
    monkeypatch.setitem(sys.modules, "tally._torch", None)  # the shim cannot be imported
    monkeypatch.delattr(tally, "_torch", raising=False)
    monkeypatch.setattr(prof, "_said", set())
    with quiet_profile(tmp_path, torch=None, schedule=(1, 2)) as p:
        assert not p.torch_recorded
        run_steps(p, 3)
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "PyTorch operators are not recorded" in ln]
    assert len(lines) == 1 and re.match(r"^tally: PyTorch operators are not recorded: ", lines[0])
    assert [list(w.steps) for w in p.windows] == [[1]]


def test_torch_true_requires_torch(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    with pytest.raises(ImportError, match="torch=True"):
        quiet_profile(tmp_path, torch=True).start()
    assert not tally.profile(output_dir=tmp_path).running


def test_step_takes_integer_samples(tmp_path):
    class Index:
        def __index__(self):
            return 7

    with quiet_profile(tmp_path) as p:
        p.step(Index())
        p.step(num_samples=3)
        with pytest.raises(ValueError, match=">= 0"):
            p.step(-1)
        with pytest.raises(TypeError):
            p.step(1.5)
    assert p.step_num == 2
    assert [r["samples"] for r in p.table("perf_ips")] == [10]
