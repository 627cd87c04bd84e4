#!/usr/bin/python3
"""PyTorch peer of bench_resnet: the CIFAR ResNet-20 of He et al. 2016 (section 4.2; width
16, BatchNorm, shortcut option A), training steps on random N(0,1) 3x32x32 inputs with
forward + backward + SGD momentum 0.9, lr 0.01, on ONE thread (as the workbench's pass).
Prints one line with cpu_samples/s=<rate per CPU-second of this process> and ending in
samples/s=<wall-clock rate> (medians over repetitions of >= min_time s): on a shared machine
the wall-clock rate moves with the other jobs, the CPU-time rate much less.

usage: torch_resnet.py BATCH THREADS MIN_TIME_S [REPS]
"""
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = stride != 1 or cin != planes
        self.pad = (planes - cin) // 2

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        sc = F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad)) if self.down else x
        return F.relu(out + sc)


class ResNet(nn.Module):
    def __init__(self, depth=20, width=16):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        layers, cin = [], width
        for s in range(3):
            planes = width << s
            for b in range(n):
                layers.append(Block(cin, planes, 2 if (s > 0 and b == 0) else 1))
                cin = planes
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(cin, 10)

    def forward(self, x):
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


def main():
    batch, threads, min_time = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = ResNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    rates, cpu_rates = [], []
    for _ in range(reps):
        t0, c0, steps = time.perf_counter(), time.process_time(), 0
        while True:
            step()
            steps += 1
            if time.perf_counter() - t0 >= min_time:
                break
        rates.append(steps * batch / (time.perf_counter() - t0))
        cpu_rates.append(steps * batch / (time.process_time() - c0))
    print("torch %s resnet20 batch %d threads %d cpu_samples/s=%.1f samples/s=%.1f" %
          (torch.__version__, batch, threads, statistics.median(cpu_rates), statistics.median(rates)))


if __name__ == "__main__":
    main()
