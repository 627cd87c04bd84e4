#!/usr/bin/python3
"""PyTorch peer of the `gpt` model (models/gpt.h): nanoGPT's GPT-2 layout with pre-LayerNorm
blocks (github.com/karpathy/nanoGPT model.py, bias=True, dropout 0), causal multi-head
self-attention written out (softmax(q k^T / sqrt(hd)) with the lower-triangular mask), a 4x
MLP with tanh-approximate GELU, final LayerNorm, lm_head tied to the token embedding, mean
next-token cross-entropy. Imported by tests/golden/torch/make_gpt_golden.py; run as a script
it is bench_gpt's peer: the training throughput (forward + backward + AdamW step) of nanoGPT's
shakespeare-char CPU configuration at one thread.
usage: torch_gpt.py layers heads d_model block vocab batch [steps] [threads]
prints: tokens/s=<x>"""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.H = H
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.H, C // self.H).transpose(1, 2)
        k = k.view(B, T, self.H, C // self.H).transpose(1, 2)
        v = v.view(B, T, self.H, C // self.H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = Attention(C, H, T)
        self.ln_2 = nn.LayerNorm(C)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers, heads, C, T, V):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
            h=nn.ModuleList([Block(C, heads, T) for _ in range(layers)]), ln_f=nn.LayerNorm(C)))
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        # nanoGPT's _init_weights: N(0, 0.02), zero biases, c_proj N(0, 0.02/sqrt(2 layers)).
        for n, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if n.endswith("c_proj.weight") else 0.02
                torch.nn.init.normal_(p, 0.0, std)
            elif "ln_" in n and n.endswith("weight"):
                torch.nn.init.ones_(p)
            else:
                torch.nn.init.zeros_(p)

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for blk in self.transformer.h:
            x = blk(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def main():
    L, H, C, T, V, B = (int(a) for a in sys.argv[1:7])
    S = int(sys.argv[7]) if len(sys.argv) > 7 else 20
    threads = int(sys.argv[8]) if len(sys.argv) > 8 else 1
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = GPT(L, H, C, T, V)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    data = torch.randint(0, V, (B, T + 1))
    x, y = data[:, :T], data[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        m(x, y).backward()
        opt.step()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(S):
        step()
    dt = time.perf_counter() - t0
    print(f"torch {torch.__version__} layers={L} heads={H} d_model={C} block={T} vocab={V} "
          f"batch={B} threads={threads} tokens/s={B * T * S / dt:.1f} ms/step={dt / S * 1e3:.2f}")


if __name__ == "__main__":
    main()
