"""The plots the Adaptive SGD reports (R9, R10 of DESIGN.md section 11) share: a mean curve over
seeds with its 95% band on a common axis, and the per-worker panels of Figs. 11-12 (batch size,
updates and perturbation frequency per mega-batch).
"""
import numpy as np

from . import stats as st
from .adaptive_runs import per_worker


COLORS = {"Adaptive": "tab:red", "Elastic": "tab:blue", "Grad. aggregation": "tab:green",
          "Elastic+momentum": "tab:purple"}


def plot_acc(ax, rows, x, title):
    for r in rows:
        c = r["run"]["curves"]
        xs = np.asarray(c["sim_s"]) * 1e3 if x == "time" else np.asarray(c["step"])
        ax.plot(xs, c["test_accuracy"], label=r["label"], color=COLORS.get(r["label"]),
                lw=1.6 if r["label"] == "Adaptive" else 1.1)
    ax.set_xlabel("simulated time (ms)" if x == "time" else "mega-batch")
    ax.set_ylabel("test precision@1")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)


def worker_panels(axes, run, title):
    w = run.get("workers", {})
    if "batch_size" not in w:
        return
    bs = per_worker(run, "batch_size")
    up = per_worker(run, "updates")
    mb = np.arange(1, bs.shape[0] + 1)
    speeds = np.ravel(w.get("speed", np.ones(bs.shape[1])))
    for k in range(bs.shape[1]):
        axes[0].plot(mb, bs[:, k], label=f"worker {k} (speed {speeds[k]:.2f})")
        axes[1].plot(mb, up[:, k], label=f"worker {k}")
    axes[0].set_title(f"batch size per worker: {title}", fontsize=9)
    axes[0].set_xlabel("mega-batch")
    axes[0].set_ylabel("batch size")
    axes[0].legend(fontsize=7)
    axes[1].set_title(f"updates per mega-batch: {title}", fontsize=9)
    axes[1].set_xlabel("mega-batch")
    axes[1].set_ylabel("updates u_i")
    if "perturbed" in w:
        p = np.ravel(w["perturbed"])
        axes[2].plot(mb, np.cumsum(p) / mb, color="black")
        axes[2].set_ylim(-0.05, 1.05)
        axes[2].set_title(f"perturbation frequency: {title}", fontsize=9)
        axes[2].set_xlabel("mega-batch")
        axes[2].set_ylabel("fraction of merges perturbed (cumulative)")
    for a in axes:
        a.grid(alpha=0.3)


def band(ax, xs_list, ys_list, label, color, lw=1.2, npts=120, xmax=None):
    """Mean curve over seeds with a 95% t band, on a common x grid (interpolated)."""
    xmax = xmax if xmax is not None else min(float(np.max(x)) for x in xs_list)
    grid = np.linspace(0, xmax, npts)

    def interp(x, y):
        # a run evaluated every few mega-batches has NaN between its evaluations: interpolate
        # between the evaluations (np.interp would carry the NaNs over the whole curve)
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        return np.interp(grid, x[ok], y[ok], left=np.nan) if ok.any() else np.full(len(grid), np.nan)
    Y = np.array([interp(x, y) for x, y in zip(xs_list, ys_list)])
    # before a curve's first evaluation every seed is NaN (left=np.nan): the mean is NaN there,
    # which is what the plot should show, not a warning
    ok = np.isfinite(Y).any(axis=0)
    m = np.full(len(grid), np.nan)
    m[ok] = np.nanmean(Y[:, ok], axis=0)
    ax.plot(grid, m, label=label, color=color, lw=lw)
    if len(Y) > 1:
        ci = [st.t_interval(Y[:, j]) for j in range(len(grid))]
        ax.fill_between(grid, [c[1] for c in ci], [c[2] for c in ci], color=color, alpha=0.18)
