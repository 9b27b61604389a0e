#!/usr/bin/env python3
"""train_small.py — a small transformer training loop for tally's GPU checks.

Modes (the same model, data and steps in each, so that the kernels are the same):
  plain      no profiler at all (run it alone, or under `tally run`)
  nvtx       under torch.autograd.profiler.emit_nvtx(record_shapes=True): every op is an NVTX
             range "aten::mm, seq = N, op_id = K, sizes = [...]" that tally turns into operators
  torchprof  under torch.profiler (CPU + CUDA, record_shapes) writing a Chrome trace to
             --trace-dir, as PyTorch users do today

Every step is wrapped in an NVTX range "train_step" (use `tally run --step-range train_step`)
and ends with a device synchronisation so that step times are comparable across modes. The
profiler (torchprof) is entered before the first CUDA call so that it sees the same work as
tally, which records from CUDA's initialisation.

Prints "STEP_MS mean median" over the steps after --warmup, and "KERNEL_STEPS n".
"""
import argparse
import contextlib
import os
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["plain", "nvtx", "torchprof"], default="plain")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--trace-dir", default="torch_traces")
    args = p.parse_args()

    import torch
    import torch.nn as nn

    if not torch.cuda.is_available():
        print("train_small: no CUDA device", file=sys.stderr)
        return 2

    prof = None
    if args.mode == "torchprof":
        os.makedirs(args.trace_dir, exist_ok=True)
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            record_shapes=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(args.trace_dir, use_gzip=True),
        )
        outer = prof
    elif args.mode == "nvtx":
        outer = torch.autograd.profiler.emit_nvtx(record_shapes=True)
    else:
        outer = contextlib.nullcontext()

    torch.manual_seed(0)
    times = []
    with outer:
        dev = torch.device("cuda")
        layer = nn.TransformerEncoderLayer(
            d_model=args.d_model, nhead=8, dim_feedforward=4 * args.d_model,
            batch_first=True, dropout=0.0)
        model = nn.Sequential(
            nn.TransformerEncoder(layer, num_layers=args.layers, enable_nested_tensor=False),
            nn.Linear(args.d_model, 1000)).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        loss_fn = nn.CrossEntropyLoss()
        x = torch.randn(args.batch, args.seq, args.d_model, device=dev)
        y = torch.randint(0, 1000, (args.batch, args.seq), device=dev)
        torch.cuda.synchronize()
        for step in range(args.steps):
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("train_step")
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = loss_fn(out.reshape(-1, 1000), y.reshape(-1))
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            dt = (time.perf_counter() - t0) * 1e3
            if step >= args.warmup:
                times.append(dt)
            if prof is not None:
                prof.step()
    print("STEP_MS %.4f %.4f" % (statistics.mean(times), statistics.median(times)))
    print("KERNEL_STEPS %d" % args.steps)
    print("LOSS %.5f" % loss.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
