#!/usr/bin/env python3
"""train.py — a small transformer language model trained under tally.profile, the way the seeds
profile theirs: every phase labelled (dataloader, forward, backward, optimizer), a schedule that
skips the first steps and records a few, the throughput in tokens/s, and the report at the end.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train.py            # CPU, a few s
    python3 examples/python/train.py --steps 20 --active 5 --device cuda

With torch imported, tally.profile records PyTorch's operators too (the tally._torch shim):
the report's ops table is the one torch.profiler's key_averages().table() prints.
--profiler torch runs the same steps under torch.profiler instead (with the same schedule), and
--profiler none without a profiler, to compare step times.
"""

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import tally


class TinyLM(nn.Module):
    """Token embedding, a few pre-norm transformer layers with a causal mask, a tied head."""

    def __init__(self, vocab, d_model, heads, layers, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -math.inf), diagonal=1))

    def forward(self, x):
        h = self.embed(x) + self.pos[: x.shape[1]]
        h = self.blocks(h, mask=self.mask[: x.shape[1], : x.shape[1]])
        return self.norm(h) @ self.embed.weight.t()


def batches(vocab, batch, seq, device, gen):
    """Synthetic text: random tokens; the target is the next token."""
    while True:
        t = torch.randint(0, vocab, (batch, seq + 1), generator=gen)
        t = t.to(device, non_blocking=True)
        yield t[:, :-1], t[:, 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--wait", type=int, default=1, help="schedule: steps not recorded")
    ap.add_argument("--warmup", type=int, default=1, help="schedule: steps armed, not recorded")
    ap.add_argument("--active", type=int, default=3, help="schedule: steps recorded")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--profiler", choices=["tally", "torch", "none"], default="tally")
    ap.add_argument("--record-shapes", action="store_true")
    ap.add_argument("--profile-memory", action="store_true")
    ap.add_argument("--out", default="tally-out/train", help="where the traces go")
    ap.add_argument("--views", default="overview,model,perf,ops",
                    help="the report's views ('all' for every one)")
    args = ap.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch.device(args.device)
    model = TinyLM(args.vocab, args.d_model, args.heads, args.layers, args.seq).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = batches(args.vocab, args.batch, args.seq, device, gen)
    params = sum(p.numel() for p in model.parameters())
    print(f"train: {params / 1e6:.2f} M parameters, {args.layers} layers, d_model "
          f"{args.d_model}, batch {args.batch} x {args.seq} tokens, {args.steps} steps on "
          f"{device}, profiler {args.profiler}")

    os.environ.setdefault("TALLY_SAMPLES_UNIT", "tokens")  # tally.step(n) counts tokens
    sched = dict(wait=args.wait, warmup=args.warmup, active=args.active, repeat=1)
    if args.profiler == "tally":
        prof = tally.profile(schedule=tally.schedule(**sched), output_dir=args.out,
                             record_shapes=args.record_shapes,
                             profile_memory=args.profile_memory,
                             on_trace_ready=lambda w: print(
                                 f"train: window {w.index}: steps {w.steps.start}-"
                                 f"{w.steps.stop - 1}, {w.records} records, {w.path}"))
    elif args.profiler == "torch":
        acts = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts, schedule=torch.profiler.schedule(**sched),
                                      record_shapes=args.record_shapes,
                                      profile_memory=args.profile_memory)
    else:
        prof = None

    times, tokens = [], []
    if prof is not None:
        prof.start()
    for step in range(args.steps):
        t0 = time.perf_counter()
        with tally.range("next_batch", "dataloader"):
            x, y = next(data)
        with tally.range("forward", "forward"):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
        with tally.range("backward", "backward"):
            loss.backward()
        with tally.range("optimizer", "optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        n = x.numel()
        if isinstance(prof, tally.profile):
            prof.step(n)  # closes ProfilerStep#step; n tokens for the throughput
        elif prof is not None:
            prof.step()
        times.append(time.perf_counter() - t0)
        tokens.append(n)
    if prof is not None:
        prof.stop()

    # throughput after the first step (the warm-up: allocations, lazy initialisation)
    t, n = sum(times[1:]) or sum(times), sum(tokens[1:]) or sum(tokens)
    print(f"train: loss {loss.item():.4f}, {n / t:,.0f} tokens/s, step time median "
          f"{statistics.median(times[1:] or times) * 1e3:.1f} ms")
    if isinstance(prof, tally.profile):
        if not prof.torch_recorded and "torch" not in sys.modules:
            print("train: PyTorch operators were not recorded")
        print(prof.report(views=args.views, top=15))
        print(f"train: traces in {os.path.abspath(args.out)}; `python3 -m tally report FILE` "
              "prints every view")
    elif prof is not None:
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15))
    return 0


if __name__ == "__main__":
    sys.exit(main())
