#!/usr/bin/env python3
"""Write a small CUDA trace with PyTorch's own profiler (Kineto), and the tables PyTorch prints.

Run on a machine with a GPU and a CUDA build of PyTorch (2.x):
    python3 tests/data/torch_cuda_gen.py OUTDIR
It writes into OUTDIR
  torch_cuda_mlp.trace.json.gz  prof.export_chrome_trace() (Kineto JSON, gzipped)
  torch_cuda_mlp.tables.txt.gz  key_averages().table(...) for several sort keys, each block
                                introduced by a line "=== <sort_by> [group_by_input_shape]"
tests/unit/test_ops_torch_cuda.c compares `tally ops` on the trace with those tables.
"""
import gzip
import os
import sys
import torch
from torch.profiler import profile, record_function, ProfilerActivity, schedule

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
dev = "cuda"

model = torch.nn.Sequential(
    torch.nn.Linear(256, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x_host = torch.randn(64, 256)          # copied to the GPU every step: HtoD memcpy
y = torch.randint(0, 10, (64,), device=dev)
x2_host = torch.randn(32, 256)        # a second input shape

for _ in range(3):  # warm up cuBLAS and the allocator outside the trace
    model(x_host.to(dev)).sum().backward()
torch.cuda.synchronize()

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
             profile_memory=True, schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
    for step in range(6):
        with record_function("forward"):
            xb = (x_host if step % 2 == 0 else x2_host).to(dev)
            out_t = model(xb)
            loss = loss_fn(out_t, y[: out_t.shape[0]])
        with record_function("backward"):
            opt.zero_grad()
            loss.backward()
        with record_function("optimizer"):
            opt.step()
        loss.item()  # DtoH copy + sync
        prof.step()

prof.export_chrome_trace(os.path.join(out, "torch_cuda_mlp.trace.json.gz"))

kw = dict(row_limit=-1, max_name_column_width=200)
with gzip.open(os.path.join(out, "torch_cuda_mlp.tables.txt.gz"), "wt") as f:
    f.write("# torch %s, key_averages().table(sort_by=..., row_limit=-1, "
            "max_name_column_width=200)\n" % torch.__version__)
    for key in ["self_cuda_time_total", "cuda_time_total", "cpu_time_total",
                "self_cpu_time_total", "count", "cpu_memory_usage", "self_cuda_memory_usage"]:
        f.write("=== %s\n" % key)
        f.write(prof.key_averages().table(sort_by=key, **kw))
        f.write("\n")
    f.write("=== cpu_time_total group_by_input_shape\n")
    f.write(prof.key_averages(group_by_input_shape=True).table(
        sort_by="cpu_time_total", max_shapes_column_width=200, **kw))
    f.write("\n")
