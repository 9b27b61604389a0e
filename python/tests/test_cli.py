"""python3 -m tally: the command line, run inside the Python module."""

import os

import tally
from helpers import REPO, TORCH_MLP, cli, run_python


def test_version():
    p = cli("--version", check=True)
    assert p.stdout == f"tally {tally.__version__}\n"


def test_report_and_ops():
    p = cli("report", TORCH_MLP, check=True)
    assert p.stdout.startswith(f"Trace: {TORCH_MLP} (PyTorch (legacy))")
    assert "Model Summary" in p.stdout
    p = cli("ops", TORCH_MLP, "--top", "3", check=True)
    assert "ProfilerStep*" in p.stdout


def test_usage_errors_exit_2_with_one_line():
    p = cli("reprot")
    assert p.returncode == 2
    assert p.stderr == "tally: unknown verb 'reprot'; did you mean 'report'?\n"
    p = cli("ops", TORCH_MLP, "--top", "x")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1


def test_a_closed_pipe_is_no_error():
    import subprocess
    import sys

    from helpers import python_env

    cmd = f"{sys.executable} -m tally ops {TORCH_MLP} | head -n 1"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=python_env())
    assert p.returncode == 0 and p.stderr == ""


def test_run_passes_the_programs_status_and_output(tmp_path):
    p = cli("run", "-o", tmp_path, "--", "python3", "-c", "print('hello'); raise SystemExit(3)")
    assert p.returncode == 3 and "hello" in p.stdout


def test_demo_writes_traces(tmp_path):
    p = cli("demo", "-o", tmp_path, "--rmsnorm", "fused", "--steps", "1", "--views", "perf",
            check=True)
    assert "Perf Summary" in p.stdout and "tokens/s" in p.stdout
    assert any(f.endswith(".tally") for f in os.listdir(tmp_path))


def test_bench_python_runs():
    p = run_python([os.path.join(REPO, "bench", "bench_python.py"), "--n", "2000", "--reps", "2"],
                   check=True)
    assert "recording" in p.stdout and "ns per range" in p.stdout


def test_run_injects_the_module_itself(tmp_path):
    p = cli("run", "--no-gpu", "-o", tmp_path, "--", "/bin/sh", "-c",
            'echo "injected: $NVTX_INJECTION64_PATH"', check=True)
    module = os.path.realpath(tally._tally.__file__)
    assert f"injected: {module}\n" in p.stdout


def test_run_gives_the_program_default_signals(tmp_path):
    # Python ignores SIGPIPE; the program that `python3 -m tally run` starts must not inherit that
    p = cli("run", "--no-gpu", "-o", tmp_path, "--", "/bin/sh", "-c",
            "grep -E '^SigIgn' /proc/self/status", check=True)
    ignored = int(p.stdout.split()[-1], 16)
    assert not ignored & (1 << (13 - 1)), "SIGPIPE is ignored"
