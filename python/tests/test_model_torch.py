"""The Model view on PyTorch's own traces: Forward, Backward and Optimization come from what
PyTorch records (docs/VIEWS.md, model), so on the shared training traces Other — the step time
in no phase — is a small rest (it was 78-98 % when PyTorch's traces had no Forward or
Backward), and the phases with Other still add up to each step."""

import json
import os

import pytest

from helpers import REPO, cli

TRACES = os.path.join(os.path.dirname(REPO), "shared", "traces")

# full training steps (forward, autograd backward, optimizer): Other under 15 %
TRAINING = [
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "hta_df_index_resolver.json.gz",
    "hta_nccl_data.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50_nw4_worker0.1623212756351.pt.trace.json.gz",
]


@pytest.mark.parametrize("name", TRAINING)
def test_pytorch_phases_leave_little_other(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"the shared traces are not here: {path} is missing")
    p = cli("report", "--views", "model", "--format", "json", path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    m = {r["name"]: r for r in doc["model"]["rows"]}
    assert m["Forward"]["cpu_total_us"] > 0 and m["Backward"]["cpu_total_us"] > 0, m
    assert m["Other"]["cpu_ratio_pct"] < 15.0, m["Other"]
    for s in doc["model_steps"]["rows"]:
        parts = sum(s[k] for k in ("dataloader_us", "forward_us", "backward_us",
                                   "optimization_us", "other_us"))
        # phases on two threads may overlap (a forward op while the backward starts): never less
        assert parts >= s["step_us"] - 0.002, s
