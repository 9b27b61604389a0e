#!/usr/bin/python3
"""Write small traces with PyTorch's own profiler, and the tables PyTorch prints for them.

Run with Debian's python3-torch (CPU only, 1.13):  /usr/bin/python3 tests/data/torch_gen.py
It writes, next to this script,
  torch_mlp.trace.json       the Chrome trace written by prof.export_chrome_trace()
  torch_mlp.tables.txt       key_averages().table(...) for several sort keys, each block
                             introduced by a line "=== <sort_by> [group_by_input_shape]"
tests/unit/test_ops_torch.c reads both and checks that `tally ops` gives the same rows,
counts and times. The model and its inputs are seeded; the times are whatever this machine
took, so regenerating changes the numbers but not what the test checks.
"""
import os
import torch
from torch.profiler import profile, record_function, ProfilerActivity, schedule

here = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
torch.set_num_threads(1)

model = torch.nn.Sequential(
    torch.nn.Linear(64, 128),
    torch.nn.ReLU(),
    torch.nn.Linear(128, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
x2 = torch.randn(16, 64)  # a second input shape, for group_by_input_shape

with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
             schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
    for step in range(6):
        with record_function("forward"):
            out = model(x if step % 2 == 0 else x2)
            loss = loss_fn(out, y[: out.shape[0]])
        with record_function("backward"):
            opt.zero_grad()
            loss.backward()
        with record_function("optimizer"):
            opt.step()
        prof.step()

prof.export_chrome_trace(os.path.join(here, "torch_mlp.trace.json"))

with open(os.path.join(here, "torch_mlp.tables.txt"), "w") as f:
    f.write("# torch %s, key_averages().table(sort_by=..., row_limit=-1)\n" % torch.__version__)
    for key in ["cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
                "self_cpu_memory_usage"]:
        f.write("=== %s\n" % key)
        f.write(prof.key_averages().table(sort_by=key, row_limit=-1))
        f.write("\n")
    f.write("=== cpu_time_total group_by_input_shape\n")
    f.write(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                                row_limit=-1))
    f.write("\n")
