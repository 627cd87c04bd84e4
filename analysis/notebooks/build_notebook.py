#!/usr/bin/python3
"""Writes adasum.ipynb from the cells below (kept as Python so the notebook's code is
reviewable and diffable). Edit the cells here, then run this script; never edit the
.ipynb by hand.

usage: build_notebook.py            write analysis/notebooks/adasum.ipynb
       build_notebook.py --check    exit 1 if adasum.ipynb differs from these cells

`make -f Makefile.experiments notebook` (part of `make test`, mk/analysis.mk) runs the
check and then executes the notebook with `jupyter nbconvert --to notebook --execute`.
"""
import json
import os
import sys

CELLS = [
    ("markdown", """# Reading psgd-workbench results with pandas

`psgd_analysis.load` turns one or more HDF5 results files into tidy pandas DataFrames
(`runs`, `curves`, `metrics`); everything after that is plain pandas and matplotlib, ready
to copy into your own notebook.

Which results: the files named in the environment variable `PSGD_RESULTS` (several separated
by `:`; they concatenate into one set of tables, e.g. a sweep split over jobs). Without it, the
small sweep `analysis/notebooks/notebook_sweep.json` (LeNet-5, sync SGD vs Adasum, 2 and 4
workers, 2 seeds, 40 steps; about 15 s) is run on the spot with `build/workbench`.
The last sections redraw the Adasum reports from `reports/*.h5` (written by the `adasum-*`
make targets; `PSGD_REPORTS` names another folder) and are skipped where a file is missing.

Open it in Jupyter with Debian's `/usr/bin/python3` kernel (`jupyter notebook
analysis/notebooks/adasum.ipynb`), or execute it headless as `make -f Makefile.experiments
notebook` does: `PSGD_RESULTS=out/x.h5 jupyter nbconvert --to notebook --execute --output
/tmp/adasum.out.ipynb analysis/notebooks/adasum.ipynb`."""),
    ("code", """import os, subprocess, sys, tempfile
# the repository root (this notebook lives in analysis/notebooks/), whatever the cwd
root = os.path.abspath(os.getcwd())
while not os.path.isdir(os.path.join(root, "analysis", "psgd_analysis")) and root != "/":
    root = os.path.dirname(root)
sys.path.insert(0, os.path.join(root, "analysis"))
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import psgd_analysis as pa
from psgd_analysis import adasum_latency, adasum_lenet, adasum_optimizers, adasum_toy, figures, paper

RESULTS = [p for p in os.environ.get("PSGD_RESULTS", "").split(os.pathsep) if p]
if not RESULTS:  # no results named: run the notebook's own small sweep
    wb = os.path.join(root, os.environ.get("BUILD", "build"), "workbench")
    if not os.path.exists(wb):
        raise FileNotFoundError(f"{wb} is not built (make -f Makefile.experiments build); "
                                "or name results files in PSGD_RESULTS")
    RESULTS = [os.path.join(tempfile.mkdtemp(), "notebook_sweep.h5")]
    subprocess.run([wb, "run", os.path.join(root, "analysis", "notebooks", "notebook_sweep.json"),
                    "-o", RESULTS[0], "--quiet"], check=True)
REPORTS = os.environ.get("PSGD_REPORTS", os.path.join(root, "reports"))
pd.set_option("display.width", 140)
print("results:", RESULTS)"""),
    ("markdown", """## Tidy tables

- `res.runs`: one row per run: `run_id`, `file`, the swept config keys (`res.swept`, dotted
  like `algorithm.name`), the main config fields (`algorithm` is a label such as "Adasum" or
  "Average", `workers`, `lr`, `seed`, ...), `status`, and the run's summary
  (`final_test_accuracy`, `converged_step`, ...). The resolved config is in `config`.
- `res.curves`: long, one row per run and logged step: `run_id, step, epoch, samples, wall_s,
  sim_s, lr, train_loss, test_loss, test_accuracy` (test columns NaN between evaluations).
- `res.metrics`: long, one row per run, metric, logged step and tensor: `run_id, metric, step,
  tensor, value`."""),
    ("code", """res = pa.load(RESULTS)
print(res)
res.runs[["run_id", *res.swept, "status", "final_train_loss", "final_test_accuracy", "wall_s"]]"""),
    ("code", """display(res.curves.head())
display(res.metrics.head())"""),
    ("markdown", """## Over seeds and workers: groupby

One row per (algorithm, workers) cell, the final accuracy and loss aggregated over seeds."""),
    ("code", """cells = res.runs.groupby(["algorithm", "workers"]).agg(
    seeds=("seed", "nunique"),
    acc_mean=("final_test_accuracy", "mean"),
    acc_std=("final_test_accuracy", "std"),
    loss_mean=("final_train_loss", "mean"))
display(cells)
cells["acc_mean"].unstack("workers")   # algorithms x worker counts"""),
    ("markdown", """## Curves, averaged over seeds

Join the run table's keys onto every curve point, then group by step."""),
    ("code", """cur = res.curves.merge(res.runs[["run_id", "algorithm", "workers", "seed"]], on="run_id")
mean = cur.groupby(["algorithm", "workers", "step"], as_index=False)[["train_loss", "test_accuracy"]].mean()
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for (alg, w), g in mean.groupby(["algorithm", "workers"]):
    axes[0].plot(g["step"], g["train_loss"], label=f"{alg}, W={w}")
    ev = g.dropna(subset=["test_accuracy"])
    axes[1].plot(ev["step"], ev["test_accuracy"], marker="o", label=f"{alg}, W={w}")
axes[0].set(xlabel="step", ylabel="train loss (mean over seeds)", yscale="log")
axes[1].set(xlabel="step", ylabel="test accuracy (mean over seeds)")
axes[0].legend(fontsize=8)
plt.show()"""),
    ("markdown", """## Steps, samples and time to a target

`pa.run_metrics` adds, per run, the best/final values and where a curve first reaches a
target (NaN if never); here the median train loss of all logged points."""),
    ("code", """target = float(res.curves["train_loss"].median())
m = pa.run_metrics(res, target_loss=target).merge(res.runs[["run_id", "seed"]], on="run_id")
print(f"target train loss {target:.4g}")
m.groupby(["algorithm", "workers"])[["loss_step_to_target", "loss_samples_to_target", "loss_sim_s_to_target"]].median()"""),
    ("markdown", """## Orthogonality per layer

`metrics/orthogonality`: per tensor, ||Adasum(g_1..g_W)||^2 / sum_i ||g_i||^2 of the workers'
fresh gradients (1 = orthogonal, 1/W = parallel with equal norms; arXiv 3.6); the `mean`
tensor is the mean over tensors. Below: per layer, averaged over seeds and logged steps, one
column per (algorithm, W); then one run over training with the report's figure."""),
    ("code", """orth = res.metrics[res.metrics["metric"] == "orthogonality"].merge(
    res.runs[["run_id", "algorithm", "workers", "seed"]], on="run_id")
if orth.empty:
    print("no orthogonality metrics in", RESULTS)
else:
    layer = orth.groupby(["tensor", "algorithm", "workers"], sort=False)["value"].mean()
    display(layer.unstack(["algorithm", "workers"]))
    rid = orth["run_id"].iloc[-1]
    W = int(res.runs.set_index("run_id").loc[rid, "workers"])
    fig = figures.orthogonality(res.metric(rid, "orthogonality"), res.curve(rid), W,
                                res.metric(rid, "diversity"))
    plt.show()"""),
    ("markdown", """## The Adasum reports from `reports/*.h5`

The same tables and figures as `reports/adasum-*.md`, from the results files the make
targets leave behind (`make -f Makefile.experiments adasum-all`, or one target)."""),
    ("code", """def have(name):
    p = os.path.join(REPORTS, name)
    if not os.path.exists(p):
        print(f"skip: {p} not found (run the make target first)")
    return os.path.exists(p)"""),
    ("markdown", "### R1: LeNet-5, Sum vs Adasum, untuned and tuned (arXiv 5.4, Fig. 6)"),
    ("code", """R1_FILES = ["lenet_seq_lr.h5", "lenet_sweep.h5", "lenet_seq_ref.h5", "lenet_sweep_tuned.h5"]
if all(have(f) for f in R1_FILES):
    # step 1: the sequential (W = 1) max LR, chosen on VALIDATION accuracy (never the test set)
    seq = pa.load(os.path.join(REPORTS, "lenet_seq_lr.h5")).runs
    display(seq.pivot_table(index="lr", values=[adasum_lenet.R1_SELECT_ON, "final_test_accuracy"]))
    # the untuned cells run at that LR (Sum and Adasum on optimizer deltas, W = 4..32)
    r1 = pa.load(os.path.join(REPORTS, "lenet_sweep.h5"))
    display(r1.runs.pivot_table(index="algorithm", columns="workers", values="final_test_accuracy"))
    print("paper (arXiv 5.4) tuned LRs:", paper.R1_TUNED_LR_ARXIV)
    rep1 = adasum_lenet.lenet(*[os.path.join(REPORTS, f) for f in R1_FILES])
    plt.show()"""),
    ("markdown", "### R2: error against the exact-Hessian sequential emulation (arXiv 3.7, Fig. 2)"),
    ("code", """if have("seq_emulation.h5"):
    r2 = pa.load(os.path.join(REPORTS, "seq_emulation.h5"))
    err = r2.metric(r2.run_ids()[0], "seq_error")
    display(err[["adasum_vs_emu", "sum_vs_emu", "average_vs_emu"]].agg(["mean", "min"]))
    fig = figures.seq_error(err)
    plt.show()"""),
    ("markdown", "### R3: per-layer orthogonality (arXiv 3.6, Fig. 1)"),
    ("code", """if have("orthogonality.h5"):
    r3 = pa.load(os.path.join(REPORTS, "orthogonality.h5"))
    o = r3.metrics.query("metric == 'orthogonality'")
    display(o.pivot_table(index="step", columns="tensor", values="value").iloc[[0, -1]])
    rid = r3.run_ids()[0]
    fig = figures.orthogonality(r3.metric(rid, "orthogonality"), r3.curve(rid),
                                int(r3.runs["workers"].iloc[0]), r3.metric(rid, "diversity"))
    plt.show()"""),
    ("markdown", "### R4: Adasum vs MPI_Allreduce latency (MLSys 5.1.1, Fig. 1)"),
    ("code", """if have("adasum-latency.txt"):
    with open(os.path.join(REPORTS, "adasum-latency.txt")) as fh:
        tab, result, _ = adasum_latency.parse_bench_collectives(fh.read())
    display(tab[["bytes", "mpi_us", "wb_adasum_us", "adasum_over_mpi"]])
    fig = figures.latency(tab, paper.R4_MAX_OVERHEAD)
    plt.show()"""),
    ("markdown", "### R5: Horovod's square/cubic toy (Average vs Adasum, LR scan)"),
    ("code", """if have("adasum_toy.h5") and have("adasum_toy_cubic.h5"):
    rep = adasum_toy.toy([os.path.join(REPORTS, "adasum_toy.h5"), os.path.join(REPORTS, "adasum_toy_cubic.h5")])
    for c in rep._claims:
        print(c["verdict"].upper(), "-", c["claim"], "\\n   ", c["evidence"])
    plt.show()"""),
    ("markdown", "### R6: Adasum on optimizer deltas vs averaging at an 8x per-worker batch, W fixed (MLSys 5.2.2)"),
    ("code", """if have("optimizers_small.h5") and have("optimizers.h5"):
    r6 = pa.load(os.path.join(REPORTS, "optimizers.h5"))
    # mean over seeds per (algorithm, lr): validation picks the factor, test reports it
    display(r6.runs.pivot_table(index="lr", columns="algorithm",
                                values=["final_val_accuracy", "final_test_accuracy"], aggfunc="mean"))
    rep6 = adasum_optimizers.optimizers([os.path.join(REPORTS, "optimizers_small.h5"),
                                         os.path.join(REPORTS, "optimizers.h5")])
    plt.show()"""),
]

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adasum.ipynb")


def notebook_text():
    nb = {"cells": [], "metadata": {"kernelspec": {"display_name": "Python 3 (Debian /usr/bin/python3)",
                                                   "language": "python", "name": "python3"},
                                    "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    for i, (kind, src) in enumerate(CELLS):
        cell = {"cell_type": kind, "id": f"cell-{i}", "metadata": {}, "source": src.splitlines(True)}
        if kind == "code":
            cell.update({"execution_count": None, "outputs": []})
        nb["cells"].append(cell)
    return json.dumps(nb, indent=1) + "\n"


def main(argv):
    text = notebook_text()
    if argv[1:] == ["--check"]:
        with open(OUT) as fh:
            if fh.read() != text:
                print(f"{OUT} differs from the cells of {os.path.abspath(__file__)}: edit the cells "
                      "there and run it to rewrite the notebook", file=sys.stderr)
                return 1
        print(f"{os.path.basename(OUT)} matches {os.path.basename(__file__)}")
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    with open(OUT, "w") as fh:
        fh.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
