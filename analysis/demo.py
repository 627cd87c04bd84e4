#!/usr/bin/python3
"""The demo (`make -f Makefile.experiments demo`): print a result table of a results file and draw its curves.

usage: demo.py RESULTS.h5 OUT.png

Reads the file with psgd_analysis.load (pandas DataFrames: res.runs, one row per run;
res.curves, one row per run and logged step).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import psgd_analysis as pa  # noqa: E402


def fmt(x, spec=".4g"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    res = pa.load(sys.argv[1])
    runs = pa.tables.records(res.runs)
    curves = res.curves
    has_acc = bool(curves["test_accuracy"].notna().any())
    width = max([len("run")] + [len(r["run_id"]) for r in runs])
    head = f"{'run':<{width}}  {'status':<9} {'steps':>6} {'train loss':>11} {'test loss':>10}"
    head += f" {'test acc':>9}" if has_acc else ""
    head += f" {'wall s':>8} {'sim s':>9}"
    print(head)
    print("-" * len(head))
    for r in runs:
        steps = 0 if math.isnan(r["steps"]) else int(r["steps"])
        line = (f"{r['run_id']:<{width}}  {r['status']:<9} {steps:>6} "
                f"{fmt(r['final_train_loss']):>11} {fmt(r['final_test_loss']):>10}")
        if has_acc:
            line += f" {fmt(r['final_test_accuracy'], '.4f'):>9}"
        line += f" {r['wall_s']:>8.2f} {r['sim_s']:>9.3g}"
        print(line)

    ncols = 2 if has_acc else 1
    fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols, 4.2), squeeze=False)
    ax = axes[0][0]
    for rid, c in curves.groupby("run_id", sort=False):
        ax.plot(c["step"], c["train_loss"], label=rid)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("train loss (mean over workers)")
    ax.set_title("training loss")
    ax.legend(fontsize=7)
    if has_acc:
        ax = axes[0][1]
        evals = curves.dropna(subset=["test_accuracy"])
        for rid, c in evals.groupby("run_id", sort=False):
            ax.plot(c["step"], c["test_accuracy"], marker="o", label=rid)
        ax.set_xlabel("step")
        ax.set_ylabel("test accuracy")
        ax.set_title("test accuracy")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
