"""One plotting function per reproduced figure. Each returns a matplotlib Figure (Agg
backend, so it works headless under make and CI) built from pandas DataFrames; nothing is
saved here (Report.write does that).
"""
from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import matplotlib

if "ipykernel" not in sys.modules:  # headless under make and CI; a notebook keeps its backend
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import pandas as pd  # noqa: E402

from .tables import match, sort  # noqa: E402

#: one colour per combiner across all figures
COLORS = {"Sum": "tab:red", "Average": "tab:blue", "Adasum": "tab:green",
          "Adasum (delta)": "tab:green"}


def _color(label: str) -> str:
    return COLORS.get(label, "tab:gray")


def seq_error(err: pd.DataFrame, orth: pd.DataFrame | None = None) -> Any:
    """R2 (arXiv:2006.02924 Fig. 2): relative error against the exact-Hessian sequential
    emulation per logged step; right: the same against true sequential SGD."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, suffix, title in ((axes[0], "_vs_emu", "vs exact-Hessian sequential emulation"),
                              (axes[1], "_vs_seq", "vs true sequential SGD")):
        for name, label, col in (("adasum", "Adasum", "Adasum"), ("sum", "sync SGD (sum)", "Sum"),
                                 ("average", "sync SGD (average)", "Average")):
            key = name + suffix
            if key in err:
                ax.plot(err["step"], err[key], "o-", color=_color(col), label=label)
        if suffix == "_vs_emu" and "seq_vs_emu" in err:
            ax.plot(err["step"], err["seq_vs_emu"], "x:", color="k", label="sequential SGD")
        ax.set_xlabel("step (gradients of 64 workers)")
        ax.set_ylabel("relative error ||w - w_ref|| / ||w_ref - w0||")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def orthogonality(orth: pd.DataFrame, lr: pd.DataFrame | None = None, workers: int | None = None,
                  diversity: pd.DataFrame | None = None) -> Any:
    """R3 (arXiv:2006.02924 Fig. 1; mlsys Fig. 2): per-layer orthogonality over training,
    the mean across layers bold, the LR schedule on a twin axis; right: gradient diversity."""
    ncol = 2 if diversity is not None else 1
    fig, axes = plt.subplots(1, ncol, figsize=(6.5 * ncol, 4.0), squeeze=False)
    ax = axes[0][0]
    for c in orth.columns:
        if c in ("step", "mean"):
            continue
        ax.plot(orth["step"], orth[c], lw=1, alpha=0.8, label=c)
    if "mean" in orth:
        ax.plot(orth["step"], orth["mean"], color="red", lw=3, label="mean over tensors")
    if workers:
        ax.axhline(1.0 / workers, color="gray", ls=":", lw=1)
        ax.text(orth["step"].iloc[0], 1.0 / workers, f" 1/W = {1.0 / workers:.3g} (parallel)",
                fontsize=7, va="bottom", color="gray")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("step")
    ax.set_ylabel("||Adasum(g)||^2 / sum ||g_i||^2")
    ax.set_title("per-tensor orthogonality")
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    ax.grid(alpha=0.3)
    if lr is not None:
        ax2 = ax.twinx()
        ax2.plot(lr["step"], lr["lr"], color="k", ls="--", lw=1)
        ax2.set_ylabel("learning rate (dashed)")
    if diversity is not None:
        ax = axes[0][1]
        for c in diversity.columns:
            if c == "step":
                continue
            ax.plot(diversity["step"], diversity[c], lw=3 if c == "total" else 1,
                    color="red" if c == "total" else None, label=c)
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("sum ||g_i||^2 / ||sum g_i||^2")
        ax.set_title("gradient diversity (Yin et al.)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def latency(tab: pd.DataFrame, max_overhead: float) -> Any:
    """R4 (mlsys Fig. 1 / arxiv Fig. 4): time per op vs bytes (log-log) for MPI_Allreduce,
    our allreduce and our Adasum; right: Adasum / MPI_Allreduce with the paper's bound."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    for col, label, c in (("mpi_us", "MPI_Allreduce(sum)", "tab:blue"),
                          ("wb_sum_us", "ours: allreduce(sum)", "tab:orange"),
                          ("wb_adasum_us", "ours: Adasum (RVHDD)", "tab:green")):
        ax.plot(tab["bytes"], tab[col], "o-", label=label, color=c)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time per op (us)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    ax = axes[1]
    # Over repetitions (R4's make rule runs the benchmark several times): each ratio's mean.
    reps = "over_sum" in tab

    def mean_of(col: str, one: str) -> Any:
        return [sum(v) / len(v) for v in tab[col]] if reps else tab[one]
    ax.plot(tab["bytes"], mean_of("over_mpi", "adasum_over_mpi"), "o-", color="tab:green",
            label="Adasum / MPI_Allreduce")
    ax.plot(tab["bytes"], mean_of("sum_over_mpi_reps", "sum_over_mpi"), "o-", color="tab:orange",
            label="our allreduce / MPI_Allreduce")
    if reps:
        ax.plot(tab["bytes"], mean_of("over_sum", ""), "s-", color="tab:purple", label="Adasum / our allreduce")
    ax.axhline(1 + max_overhead, color="red", ls="--", label=f"paper: overhead < {max_overhead:.0%}")
    ax.axhline(1.0, color="gray", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time ratio (mean over repetitions)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def toy_steps_vs_lr(steps: pd.DataFrame, panels: Sequence[tuple[str, float]], workers: Sequence[int],
                    ratio: pd.DataFrame | None = None) -> Any:
    """R5 (Horovod guide): median steps to converge vs LR, one panel per (model, x_max),
    Average dashed / Adasum solid, one colour per worker count; last panel: best LR relative
    to the single-worker best LR, with the guide's 2-2.5x band."""
    n = len(panels) + (1 if ratio is not None else 0)
    ncol = min(n, 3)
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.0 * ncol, 3.8 * nrow), squeeze=False)
    cmap = plt.get_cmap("viridis")
    wcol = {w: cmap(i / max(1, len(workers) - 1)) for i, w in enumerate(workers)}
    for k, (model, xm) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        for alg, ls in (("Average", "--"), ("Adasum", "-")):
            for w in workers:
                s = sort(match(steps, model=model, x_max=xm, algorithm=alg, workers=w), "lr")
                if not len(s):
                    continue
                if w == 1 and alg == "Average":
                    continue  # identical to Adasum at W = 1 (one gradient, nothing to combine)
                ax.plot(s["lr"], s["converged_step"], ls, marker="o", ms=3, color=wcol[w],
                        label=f"{alg} W={w}" if (alg == "Adasum" or w != 1) else None)
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_ylabel("median steps to converge")
        ax.set_title(f"{model}, x_max = {xm:g}")
        ax.grid(alpha=0.3, which="both")
        if k == 0:
            ax.legend(fontsize=6, ncol=2)
    if ratio is not None:
        ax = axes[(n - 1) // ncol][(n - 1) % ncol]
        for (model, xm), mk in zip(panels, "osD^"):
            for alg, ls in (("Average", "--"), ("Adasum", "-")):
                s = sort(match(ratio, model=model, x_max=xm, algorithm=alg), "workers")
                if len(s):
                    ax.plot(s["workers"], s["lr_over_single"], ls, marker=mk,
                            color=_color(alg), alpha=0.8, label=f"{alg} {model} x{xm:g}")
        ax.axhspan(2.0, 2.5, color="green", alpha=0.15, label="guide: 2-2.5x")
        wmax = max(workers)
        ax.plot([1, wmax], [1, wmax], color="gray", ls=":", label="linear (W x)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("workers")
        ax.set_ylabel("best LR / best single-worker LR")
        ax.set_title("best-LR scaling")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=5, ncol=2)
    for k in range(n, nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.tight_layout()
    return fig
