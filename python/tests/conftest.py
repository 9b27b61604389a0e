"""pytest set-up for the tally package's tests.

The package under test is the one on PYTHONPATH (ctest points it at the build tree). Every test
runs with no TALLY_* variable and no rank variable set, so that a setting of the caller's shell
never changes what a test records. With PYTEST_SKIP_STATUS set (ctest sets 77), a run in which
no test ran (all skipped, none collected) exits with that status, so that ctest reports it
skipped rather than passed.
"""

import os

import pytest

_ran = 0


def pytest_runtest_logreport(report):
    global _ran
    if (report.when == "call" and not report.skipped) or report.failed:
        _ran += 1


def pytest_sessionfinish(session, exitstatus):
    status = os.environ.get("PYTEST_SKIP_STATUS")
    if status and _ran == 0 and exitstatus in (0, 5):  # 5: no test collected
        session.exitstatus = int(status)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("TALLY_") or k.startswith("NVTX_INJECTION") or k.startswith("CUDA_INJ"):
            monkeypatch.delenv(k)
    for k in ("RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(k, raising=False)
