#!/usr/bin/python3
"""Writes tests/golden/torch/gpt_tiny.json: a tiny GPT (2 layers, 2 heads, d_model 8, block 6,
vocab 11) built by bench/torch_gpt.py's PyTorch model in float64, its weights by tensor name
(spread away from the initialization so that LayerNorm, GELU and softmax are far from
linear), one batch of 3 windows of block + 1 tokens, the mean next-token cross-entropy and the
gradient of every parameter. tests/unit/test_gpt.cpp compares the `gpt` model to it without
torch. Deterministic (torch.manual_seed); rerun with /usr/bin/python3 to regenerate.
usage: make_gpt_golden.py [OUT.json]   (default: gpt_tiny.json beside this script; the
test suite needs_torch writes elsewhere and compares with the committed file)"""
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "bench"))
from torch_gpt import GPT  # noqa: E402

cfg = dict(layers=2, heads=2, d_model=8, block=6, vocab=11)
torch.manual_seed(51)
torch.set_default_dtype(torch.float64)
m = GPT(cfg["layers"], cfg["heads"], cfg["d_model"], cfg["block"], cfg["vocab"])
with torch.no_grad():
    for n, p in m.named_parameters():
        if "ln_" in n and n.endswith("weight"):
            p.copy_(1.0 + 0.2 * torch.randn_like(p))
        elif p.dim() == 1:
            p.copy_(0.1 * torch.randn_like(p))
        else:
            p.copy_(0.3 * torch.randn_like(p))
tokens = torch.randint(0, cfg["vocab"], (3, cfg["block"] + 1))
loss = m(tokens[:, :-1], tokens[:, 1:])
loss.backward()
out = dict(config=cfg, tokens=tokens.reshape(-1).tolist(), loss=loss.item(),
           weights={n: p.detach().reshape(-1).tolist() for n, p in m.named_parameters()},
           grads={n: p.grad.reshape(-1).tolist() for n, p in m.named_parameters()},
           torch=torch.__version__)
out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "gpt_tiny.json")
with open(out_path, "w") as f:
    json.dump(out, f)
    f.write("\n")
print(f"wrote {out_path}: loss {loss.item():.17g}, {sum(p.numel() for p in m.parameters())} parameters")
