#!/usr/bin/python3
"""Peer of bench_sparse_mlp: PyTorch (Debian python3-torch, CPU) training throughput of the
SLIDE / HeteroGPU extreme-classification MLP (models/sparse_mlp.h): CSR input x [n, F] ->
torch.sparse.mm(x, W0) + b0 -> ReLU -> h @ W1 + b1 -> softmax over L labels, loss
logsumexp(z) - (1/|y|) sum_{l in y} z_l (mean over rows), plain SGD. W0 is [F, h] as in
models/sparse_mlp.h (one row per input feature). Random rows with `nnz` non-zeros and
1 + Poisson(labels_per_row - 1) labels, as the synthetic generator's mean shape.
Prints samples/s of the forward + backward + SGD step.
usage: torch_sparse_mlp.py F h L batch nnz labels_per_row [steps] [threads]"""
import math, sys, time, torch

F, H, L, B = (int(a) for a in sys.argv[1:5])
NNZ = float(sys.argv[5])
LPR = float(sys.argv[6])
S = int(sys.argv[7]) if len(sys.argv) > 7 else 20
T = int(sys.argv[8]) if len(sys.argv) > 8 else 1
torch.set_num_threads(T)
torch.manual_seed(0)

lim0, lim1 = math.sqrt(6.0 / (F + H)), math.sqrt(6.0 / (H + L))
W0 = ((torch.rand(F, H) * 2 - 1) * lim0).requires_grad_()
b0 = torch.zeros(H, requires_grad=True)
W1 = ((torch.rand(H, L) * 2 - 1) * lim1).requires_grad_()
b1 = torch.zeros(L, requires_grad=True)
params = [W0, b0, W1, b1]
opt = torch.optim.SGD(params, lr=0.1)

k = max(1, int(round(NNZ)))
rows = torch.arange(B).repeat_interleave(k)
cols = torch.stack([torch.randperm(F)[:k] for _ in range(B)]).reshape(-1)
vals = torch.rand(B * k)
x = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (B, F)).coalesce()
ny = (1 + torch.poisson(torch.full((B,), max(LPR - 1.0, 0.0)))).long().clamp(max=L)
my = int(ny.max())
Y = torch.randint(0, L, (B, my))
Yw = (torch.arange(my)[None, :] < ny[:, None]).float() / ny[:, None].float()


def step():
    opt.zero_grad()
    h = torch.relu(torch.sparse.mm(x, W0) + b0)
    z = h @ W1 + b1
    loss = (torch.logsumexp(z, 1) - (z.gather(1, Y) * Yw).sum(1)).mean()
    loss.backward()
    opt.step()


for _ in range(3):
    step()
t = time.perf_counter()
for _ in range(S):
    step()
dt = time.perf_counter() - t
print(f"torch {torch.__version__} F={F} h={H} L={L} batch={B} threads={T} "
      f"samples/s={B * S / dt:.1f} ms/step={dt / S * 1e3:.2f}")
