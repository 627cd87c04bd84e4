#!/usr/bin/python3
"""PyTorch reference for the workbench's `resnet` model (models/resnet.h).

Builds He et al. 2016's CIFAR ResNet-8 (section 4.2: a 3x3 stem, three stages of one basic
block at widths w, 2w, 4w, global average pooling, a linear layer) in PyTorch 1.13, float64,
with BatchNorm and shortcut option A (strided subsampling + zero channels) or B (1x1 conv +
BatchNorm). For random weights (BatchNorm gamma/beta moved off 1/0) and a random batch it
runs ONE training-mode forward/backward and writes, as little-endian float64:

  n_params, n_inputs, n_labels, n_state,
  weights (the model's flat order = named_parameters order), inputs (N x C x H x W), labels,
  mean loss, gradient (flat), running statistics after the pass ([mean C, var C] per
  BatchNorm layer in module order), eval-mode summed loss on the same batch (running stats)

to tests/golden/torch/resnet8_<shortcut>.f64. tests/unit/test_resnet.cpp reads these files
(no torch needed) and compares the workbench's double and float passes with them.

usage: /usr/bin/python3 tests/reference/resnet_torch.py [OUT_DIR]
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

WIDTH, C, H, W, N, CLASSES = 4, 3, 8, 8, 8, 10


class Block(nn.Module):
    def __init__(self, cin, planes, stride, option):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.option = option
        self.pad = (planes - cin) // 2
        self.shortcut = nn.Sequential()
        self.down = stride != 1 or cin != planes
        if self.down and option == "B":
            self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if not self.down:
            sc = x
        elif self.option == "A":
            sc = F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))
        else:
            sc = self.shortcut(x)
        return F.relu(out + sc)


class ResNet8(nn.Module):
    def __init__(self, option):
        super().__init__()
        self.conv1 = nn.Conv2d(C, WIDTH, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(WIDTH)
        self.layer1 = nn.Sequential(Block(WIDTH, WIDTH, 1, option))
        self.layer2 = nn.Sequential(Block(WIDTH, 2 * WIDTH, 2, option))
        self.layer3 = nn.Sequential(Block(2 * WIDTH, 4 * WIDTH, 2, option))
        self.linear = nn.Linear(4 * WIDTH, CLASSES)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "golden", "torch")
    torch.set_num_threads(1)
    for seed, option in ((1, "A"), (2, "B")):
        gen = torch.Generator().manual_seed(seed)
        model = ResNet8(option).double()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() > 1:
                    fan_in = p[0].numel()
                    p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1)
                            * (1.7 / fan_in ** 0.5))
                elif name.endswith("weight"):  # gamma
                    p.copy_(1 + 0.2 * (torch.rand(p.shape, generator=gen, dtype=torch.float64) - 0.5))
                else:
                    p.copy_(0.2 * (torch.rand(p.shape, generator=gen, dtype=torch.float64) - 0.5))
                # The workbench trains in float: round the weights to float32 values.
                p.copy_(p.float().double())
        x = (torch.rand((N, C, H, W), generator=gen, dtype=torch.float64) * 3 - 1.5).float().double()
        y = torch.randint(0, CLASSES, (N,), generator=gen)
        model.train()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        params = [p for _, p in model.named_parameters()]
        w = torch.cat([p.detach().flatten() for p in params])
        g = torch.cat([p.grad.flatten() for p in params])
        state = []
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                state += [m.running_mean.flatten(), m.running_var.flatten()]
        state = torch.cat(state)
        model.eval()
        with torch.no_grad():
            eval_loss = F.cross_entropy(model(x), y, reduction="sum")
        out = torch.cat([torch.tensor([w.numel(), x.numel(), N, state.numel()], dtype=torch.float64),
                         w, x.flatten(), y.double(), loss.detach().reshape(1), g, state,
                         eval_loss.reshape(1)])
        path = os.path.join(out_dir, "resnet8_%s.f64" % option)
        out.numpy().astype("<f8").tofile(path)
        print("%s: %d params, loss %.6f, eval loss sum %.6f" %
              (path, w.numel(), loss.item(), eval_loss.item()))


if __name__ == "__main__":
    main()
