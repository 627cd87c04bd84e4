#!/usr/bin/python3
"""Golden values for train/optimizer_*.cpp from PyTorch's own optimizers.

An independent implementation (Debian's python3-torch, torch.optim) of SGD (momentum,
dampening, Nesterov, weight decay), Adam (bias correction, L2 weight decay) and AdamW
(decoupled weight decay): tests/unit/test_optimizers.cpp runs this script, feeds the same
start point, gradients and per-step learning rates to the workbench optimizer named in
each case, and compares the parameters after every step.

usage: /usr/bin/python3 tests/reference/torch_optimizers.py OUT.json
exit 77 when torch cannot be imported (the C++ test then skips).

OUT.json: {"torch": version, "w0": [n], "grads": [[n] per step], "cases": [{"name",
"optimizer": workbench optimizer JSON, "lrs": [per step], "expected": [[n] per step]}]}.
All numbers are float32 values written exactly (as doubles).
"""
import json
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

STEPS = 6
N = 7

# (name, workbench optimizer JSON, torch constructor taking (params, lr))
CASES = [
    ("sgd", {"name": "sgd"}, lambda p, lr: torch.optim.SGD(p, lr=lr)),
    ("sgd_wd", {"name": "sgd", "weight_decay": 0.05},
     lambda p, lr: torch.optim.SGD(p, lr=lr, weight_decay=0.05)),
    ("momentum", {"name": "sgd", "momentum": 0.9},
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9)),
    ("momentum_dampening_wd", {"name": "sgd", "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01},
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    ("nesterov", {"name": "sgd", "momentum": 0.9, "nesterov": True},
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, nesterov=True)),
    ("nesterov_wd", {"name": "sgd", "momentum": 0.7, "nesterov": True, "weight_decay": 0.02},
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.7, nesterov=True, weight_decay=0.02)),
    ("adam", {"name": "adam"}, lambda p, lr: torch.optim.Adam(p, lr=lr)),
    ("adam_wd", {"name": "adam", "weight_decay": 0.1},
     lambda p, lr: torch.optim.Adam(p, lr=lr, weight_decay=0.1)),
    ("adam_betas", {"name": "adam", "beta1": 0.8, "beta2": 0.99, "eps": 1e-6},
     lambda p, lr: torch.optim.Adam(p, lr=lr, betas=(0.8, 0.99), eps=1e-6)),
    ("adamw", {"name": "adamw"}, lambda p, lr: torch.optim.AdamW(p, lr=lr)),
    ("adamw_wd", {"name": "adam", "weight_decay": 0.1, "weight_decay_mode": "decoupled"},
     lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=0.1)),
]


def main(out_path):
    gen = torch.Generator().manual_seed(20240606)
    w0 = torch.randn(N, generator=gen, dtype=torch.float32)
    grads = [torch.randn(N, generator=gen, dtype=torch.float32) * (0.5 + k) for k in range(STEPS)]
    # A schedule-like lr that changes every step (warmup then decay), so per-step lr
    # handling (Adam's step size, decoupled decay lr * wd) is covered.
    lr_shape = [0.2, 0.6, 1.0, 0.8, 0.5, 0.3]
    cases = []
    for name, wb_opt, make in CASES:
        base = 0.05 if wb_opt["name"] == "sgd" else 0.01
        lrs = [base * s for s in lr_shape]
        p = w0.clone().requires_grad_(True)
        opt = make([p], lrs[0])
        expected = []
        for k in range(STEPS):
            for group in opt.param_groups:
                group["lr"] = lrs[k]
            p.grad = grads[k].clone()
            opt.step()
            expected.append(p.detach().clone().tolist())
        cases.append({"name": name, "optimizer": wb_opt, "lrs": lrs, "expected": expected})
    with open(out_path, "w") as f:
        json.dump({"torch": torch.__version__, "w0": w0.tolist(),
                   "grads": [g.tolist() for g in grads], "cases": cases}, f)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
