#!/usr/bin/python3
"""PyTorch peer of examples/gpt_kjv.json's one-worker arm: the same char-level GPT
(bench/torch_gpt.py's model: nanoGPT's GPT-2 layout, pre-LayerNorm, tied head), trained on the
same text with the same split, batches, optimizer, schedule and clipping as the workbench's
`gpt` model under sync_sgd with one worker, so that the two validation losses can be set side
by side (analysis/psgd_analysis/gpt_peer.py prints the table).

What is matched, and where the workbench defines it:
- text and vocabulary (models/text_data.cpp): the bytes of the file; the vocabulary is the
  distinct bytes in increasing order; the last len/10 bytes are validation, never trained on.
- training batches: `batch` windows of block + 1 bytes starting uniformly at random in the
  training part (the workbench draws them from each worker's RNG stream; the streams differ,
  the distribution is the same).
- validation: the windows starting at train_end + k * block, k < (len_val - 1) / block, all of
  them, mean cross-entropy over every position (nats per token).
- AdamW (train/optimizer_adam.cpp = torch.optim.AdamW): betas, eps 1e-8, decoupled weight decay
  on every parameter.
- schedule (train/schedule_cosine.cpp) at step t (0-based): lr * t / warmup for t < warmup, then
  min_lr + (lr - min_lr) (1 + cos(pi (t - warmup) / (steps - warmup))) / 2.
- clipping: torch.nn.utils.clip_grad_norm_(max_norm=clip) before the step, as the workbench's
  `clip_norm` key.
- initialization: nanoGPT's _init_weights (bench/torch_gpt.py).

usage: torch_gpt_train.py --text FILE --seed S [--steps 2000] [--batch 12] [--lr 1e-3]
       [--min-lr 1e-4] [--warmup 100] [--clip 1.0] [--eval-at 1000,2000] [--threads 1]
       [--out FILE.json]
prints one line per evaluation and writes (with --out) a JSON record of them."""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gpt import GPT  # noqa: E402


def lr_at(t, a):
    if t < a.warmup:
        return a.lr * t / a.warmup
    x = min(max((t - a.warmup) / (a.steps - a.warmup), 0.0), 1.0)
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1.0 + math.cos(math.pi * x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--text", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="0 = no clipping")
    p.add_argument("--eval-at", default="1000,2000")
    p.add_argument("--eval-windows", type=int, default=0, help="0 = every validation window")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    try:
        with open(a.text, "rb") as f:
            raw = f.read()
    except OSError as e:
        print(f"{a.text}: cannot read the text file: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    if len(raw) < 10 * (a.block + 1):  # models/text_data.cpp's rule: a window in each part
        print(f"{a.text}: the text holds {len(raw)} bytes: too short for one window of block + 1 = "
              f"{a.block + 1} bytes in both the training part (90%) and the validation part (10%)",
              file=sys.stderr)
        sys.exit(2)
    byts = sorted(set(raw))
    table = torch.full((256,), -1, dtype=torch.long)
    for i, b in enumerate(byts):
        table[b] = i
    tokens = table[torch.frombuffer(bytearray(raw), dtype=torch.uint8).long()]
    n_val = len(raw) // 10
    train_end = len(raw) - n_val
    W = a.block + 1
    val_count = (n_val - 1) // a.block
    if a.eval_windows:
        val_count = min(val_count, a.eval_windows)
    val_starts = train_end + torch.arange(val_count) * a.block
    offs = torch.arange(W)

    m = GPT(a.layers, a.heads, a.d_model, a.block, len(byts))
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, betas=(a.beta1, a.beta2), eps=1e-8,
                            weight_decay=a.weight_decay)
    gen = torch.Generator().manual_seed(a.seed)
    eval_at = {int(s) for s in a.eval_at.split(",") if s}

    def evaluate():
        m.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for i in range(0, val_count, 256):
                w = tokens[val_starts[i:i + 256, None] + offs]
                loss = m(w[:, :-1], w[:, 1:])
                tot += loss.item() * w.shape[0]
                n += w.shape[0]
        m.train()
        return tot / n

    rows = []
    t0 = time.perf_counter()
    train_s = 0.0
    for t in range(a.steps):
        ts = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(t, a)
        starts = torch.randint(0, train_end - W + 1, (a.batch,), generator=gen)
        w = tokens[starts[:, None] + offs]
        opt.zero_grad(set_to_none=True)
        loss = m(w[:, :-1], w[:, 1:])
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(m.parameters(), a.clip)
        opt.step()
        train_s += time.perf_counter() - ts
        if t + 1 in eval_at:
            v = evaluate()
            row = {"step": t + 1, "val_loss": v, "bpc": v / math.log(2),
                   "tokens": (t + 1) * a.batch * a.block, "train_s": train_s,
                   "wall_s": time.perf_counter() - t0}
            rows.append(row)
            print(f"seed={a.seed} step={t + 1} val_loss={v:.4f} bpc={v / math.log(2):.4f} "
                  f"train_s={train_s:.0f} wall_s={row['wall_s']:.0f}", flush=True)
    rec = {"peer": f"torch {torch.__version__}", "text": os.path.abspath(a.text),
           "text_bytes": len(raw), "vocab": len(byts), "val_windows": val_count,
           "seed": a.seed, "threads": a.threads, "args": vars(a), "evals": rows}
    if a.out:
        tmp = a.out + f".tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(rec, f, indent=1)
        os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
