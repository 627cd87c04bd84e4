#!/usr/bin/python3
"""Reports for the Adaptive SGD reproduction (DESIGN.md section 11, R9 and R10;
papers/adaptive-sgd-heterogeneous-gpus.txt, section 5).

usage: adaptive_report.py figures RESULTS.h5 OUT_PREFIX
       adaptive_report.py sensitivity RESULTS.h5 OUT_PREFIX

figures (R9, experiments/adaptive_xml.json): picks the learning rate with the highest mean
best precision@1 over all runs (the paper grids the lr for b_max in powers of 10 and keeps
one value for every algorithm, section 5.1), then per worker count:
  - time-to-accuracy: simulated seconds until precision@1 first reaches 95% and 99% of the
    best precision@1 any algorithm reaches at that worker count (Fig. 6),
  - the check "Adaptive SGD reaches the best accuracy first": at every worker count >= 2,
    Adaptive SGD is the first to reach 99% of the best precision@1 (it must reach it),
and writes OUT_PREFIX.md (tables), OUT_PREFIX.csv (one row per run, every lr),
OUT_PREFIX.png (Fig. 6 and 7: precision@1 vs simulated time and vs mega-batch),
OUT_PREFIX-lr.png (the same for every lr), OUT_PREFIX-workers.png (Fig. 12: batch size per
worker per mega-batch, updates, cumulative perturbation frequency).

sensitivity (R10, experiments/adaptive_sensitivity.json): one row per Adaptive SGD variant
(parameters that differ from the defaults), best precision@1, time to 99% of the default's
best, perturbation frequency, final batch sizes; OUT_PREFIX.{md,csv,png} and
OUT_PREFIX-workers.png (Figs. 9-12).

Reads results with psgd_analysis.load (the run table; each run's curves and workers/
series through res.run(id)); plain matplotlib.
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import psgd_analysis as pa  # noqa: E402
from psgd_analysis.tables import records  # noqa: E402

ADAPTIVE_DEFAULTS = {"megabatch": 100, "b_min": 0, "beta": 0.0, "initial_batch": 0,
                     "pert_thr": 0.1, "delta": 0.1, "gamma": 0.9, "scaling": True,
                     "clamp": False, "renormalize": False, "mode": "simulated",
                     "emulate_speeds": True}
# The paper's Table/Fig. numbers we compare shapes with (section 5.2).
PAPER_NOTE = ("Paper (Figs. 6-7, 4 V100 GPUs, Amazon-670k / Delicious-200k): Adaptive SGD reaches "
              "the highest top-1 accuracy in the shortest time for every GPU count; Elastic SGD "
              "trails it, TensorFlow gradient aggregation is far slower.")


def algo_label(cfg):
    a = cfg["algorithm"]
    name = a["name"]
    if name == "adaptive_sgd":
        return "Adaptive"
    if name == "elastic_sgd":
        if a.get("local_steps") == 1 and a.get("split_batch"):
            return "Grad. aggregation"
        if a.get("gamma", 0) > 0:
            return "Elastic+momentum"
        return "Elastic"
    return name


def adaptive_variant(cfg, base_megabatch=None):
    """Parameters of an adaptive_sgd run that differ from the paper defaults (except the
    mega-batch size of the spec's base, passed as base_megabatch)."""
    a = cfg["algorithm"]
    diff = []
    for k, v in a.items():
        if k == "name":
            continue
        ref = base_megabatch if (k == "megabatch" and base_megabatch) else ADAPTIVE_DEFAULTS.get(k)
        if v != ref:
            diff.append(f"{k}={v}")
    return ", ".join(diff) if diff else "defaults"


def nanmax(a):
    a = np.asarray(a, dtype=float)
    return float(np.nanmax(a)) if np.any(np.isfinite(a)) else float("nan")


def first_reach(curves, target):
    """(simulated seconds, mega-batch) when test_accuracy first reaches target, or None."""
    acc = np.asarray(curves["test_accuracy"], dtype=float)
    for i, a in enumerate(acc):
        if np.isfinite(a) and a >= target - 1e-12:
            return float(curves["sim_s"][i]), int(curves["step"][i])
    return None


def fmt(x, spec=".4f"):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-"
    return format(x, spec)


def fmt_t(r):
    return "never" if r is None else f"{r[0] * 1e3:.1f} ms (mb {r[1]})"


def run_rows(res):
    rows = []
    for r in records(res.runs[["run_id"]]):
        rid = r["run_id"]
        run = res.run(rid)
        cfg = run["config"]
        c = run["curves"]
        acc = np.asarray(c["test_accuracy"], dtype=float)
        best = nanmax(acc)
        ib = int(np.nanargmax(acc)) if np.isfinite(best) else -1
        rows.append({
            "id": rid, "run": run, "lr": cfg["lr"], "workers": cfg["workers"],
            "label": algo_label(cfg), "status": run["status"], "best": best,
            "best_mb": int(c["step"][ib]) if ib >= 0 else -1,
            "best_t": float(c["sim_s"][ib]) if ib >= 0 else float("nan"),
            "final": float(acc[-1]) if len(acc) else float("nan"),
            "sim_s": run["sim_s"], "wall_s": run["wall_s"],
            "megabatches": int(c["step"][-1]) if len(c["step"]) else 0,
        })
    return rows


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


def per_worker(run, key):
    """A workers/<key> series as (mega-batches x W); 1-D in the file when W = 1."""
    W = int(run["config"]["workers"])
    return np.asarray(run["workers"][key], dtype=float).reshape(-1, W)


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


def figures(path, prefix):
    res = pa.load(path)
    rows = run_rows(res)
    lrs = sorted({r["lr"] for r in rows})
    Ws = sorted({r["workers"] for r in rows})
    mean_best = {lr: float(np.nanmean([r["best"] for r in rows if r["lr"] == lr])) for lr in lrs}
    lr_sel = max(lrs, key=lambda lr: mean_best[lr])

    md = ["# Adaptive SGD: time-to-accuracy (R9)", "",
          f"Results: `{path}`. Experiment: {res.experiment['name']}. "
          "Precision@1 on the test set after every mega-batch; time is simulated "
          "(runtime/clock.h: speeds, jitter, batch non-zeros, alpha-beta merges).", "",
          PAPER_NOTE, "",
          "## Learning-rate selection (one lr for every algorithm, powers of 10)", "",
          "| lr | mean best P@1 over runs |", "| ---: | ---: |"]
    for lr in lrs:
        md.append(f"| {lr:g} | {mean_best[lr]:.4f}{' (selected)' if lr == lr_sel else ''} |")
    md.append("")

    csv_rows = []
    verdicts = []
    for lr in lrs:
        for W in Ws:
            sel = [r for r in rows if r["lr"] == lr and r["workers"] == W]
            top = max(r["best"] for r in sel)
            for r in sel:
                r["t95"] = first_reach(r["run"]["curves"], 0.95 * top)
                r["t99"] = first_reach(r["run"]["curves"], 0.99 * top)
                csv_rows.append(r)
            if lr != lr_sel:
                continue
            md += [f"## {W} worker{'s' if W > 1 else ''} (lr {lr:g})", "",
                   f"Best P@1 of any algorithm: {top:.4f}; targets 95% = {0.95 * top:.4f}, "
                   f"99% = {0.99 * top:.4f}.", "",
                   "| algorithm | best P@1 | at mega-batch | at time | time to 95% | time to 99% "
                   "| final P@1 | sim time / mega-batch |",
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for r in sorted(sel, key=lambda r: (r["t99"] is None, r["t99"][0] if r["t99"] else 0)):
                md.append(f"| {r['label']} | {fmt(r['best'])} | {r['best_mb']} | "
                          f"{r['best_t'] * 1e3:.1f} ms | {fmt_t(r['t95'])} | {fmt_t(r['t99'])} | "
                          f"{fmt(r['final'])} | {r['sim_s'] / max(1, r['megabatches']) * 1e3:.2f} ms |")
            md.append("")
            if W >= 2:
                reached = [r for r in sel if r["t99"] is not None]
                first = min(reached, key=lambda r: (r["t99"][0], r["label"] != "Adaptive"))
                ada = [r for r in sel if r["label"] == "Adaptive"]
                ok = bool(ada) and first["label"] == "Adaptive"
                highest = max(sel, key=lambda r: r["best"])["label"]
                verdicts.append((W, ok, first["label"], highest))
                md.append(f"First to 99% of the best: **{first['label']}**; highest best P@1: "
                          f"**{highest}**.")
                md.append("")

    md += ["## Check: Adaptive SGD reaches the best accuracy first (heterogeneous workers)", ""]
    all_ok = all(v[1] for v in verdicts)
    for W, ok, first, highest in verdicts:
        md.append(f"- {W} workers: {'yes' if ok else 'no'} (first to 99% of the best: {first}; "
                  f"highest best P@1: {highest})")
    md += ["", f"**Overall: {'PASS' if all_ok else 'FAIL'}** (lr {lr_sel:g}, target 99% of the best "
           "precision@1 any algorithm reaches at that worker count; decided before the runs).", ""]

    md += ["## Every learning rate", "",
           "| lr | workers | algorithm | best P@1 | time to 99% of that cell's best | final P@1 | status |",
           "| ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for r in csv_rows:
        md.append(f"| {r['lr']:g} | {r['workers']} | {r['label']} | {fmt(r['best'])} | "
                  f"{fmt_t(r['t99'])} | {fmt(r['final'])} | {r['status']} |")
    md.append("")

    # Adaptive SGD's workers at the selected lr (Fig. 12).
    md += ["## Adaptive SGD: batch sizes and perturbation (Fig. 12)", ""]
    for W in Ws:
        for r in rows:
            if r["lr"] == lr_sel and r["workers"] == W and r["label"] == "Adaptive":
                w = r["run"].get("workers", {})
                if "batch_size" not in w:
                    continue
                bs = per_worker(r["run"], "batch_size")
                up = per_worker(r["run"], "updates")
                p = np.ravel(w["perturbed"])
                md.append(f"- {W} workers: speeds {np.ravel(w['speed']).tolist()}; batch sizes "
                          f"first {bs[0].astype(int).tolist()} -> last {bs[-1].astype(int).tolist()}; "
                          f"updates last {up[-1].astype(int).tolist()}; perturbation fired in "
                          f"{int(p.sum())}/{len(p)} merges; ||w||/|w| at the end "
                          f"{per_worker(r['run'], 'l2_per_param')[-1].max():.2e}")
    md.append("")
    md += ["Files: " + ", ".join(f"`{os.path.basename(prefix)}{s}`" for s in
                                  (".csv", ".png", "-lr.png", "-workers.png")), ""]

    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md))
    with open(prefix + ".csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["lr", "workers", "algorithm", "run_id", "status", "best_p_at_1", "best_megabatch",
                     "best_sim_s", "sim_s_to_95pct", "sim_s_to_99pct", "final_p_at_1", "sim_s_total",
                     "wall_s"])
        for r in csv_rows:
            wr.writerow([r["lr"], r["workers"], r["label"], r["id"], r["status"], r["best"], r["best_mb"],
                         r["best_t"], r["t95"][0] if r["t95"] else "", r["t99"][0] if r["t99"] else "",
                         r["final"], r["sim_s"], r["wall_s"]])

    # Figs. 6 and 7 at the selected lr.
    fig, axes = plt.subplots(2, len(Ws), figsize=(4.6 * len(Ws), 7.5), squeeze=False)
    for j, W in enumerate(Ws):
        sel = [r for r in rows if r["lr"] == lr_sel and r["workers"] == W]
        plot_acc(axes[0][j], sel, "time", f"{W} worker(s), lr {lr_sel:g}: time-to-accuracy (Fig. 6)")
        plot_acc(axes[1][j], sel, "mb", f"{W} worker(s): accuracy per mega-batch (Fig. 7)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(lrs), len(Ws), figsize=(4.6 * len(Ws), 3.4 * len(lrs)), squeeze=False)
    for i, lr in enumerate(lrs):
        for j, W in enumerate(Ws):
            plot_acc(axes[i][j], [r for r in rows if r["lr"] == lr and r["workers"] == W], "time",
                     f"lr {lr:g}, {W} worker(s)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + "-lr.png", dpi=100)
    plt.close(fig)

    ada = [r for r in rows if r["lr"] == lr_sel and r["label"] == "Adaptive" and r["workers"] > 1]
    if ada:
        fig, axes = plt.subplots(len(ada), 3, figsize=(14, 3.6 * len(ada)), squeeze=False)
        for i, r in enumerate(ada):
            worker_panels(axes[i], r["run"], f"{r['workers']} workers")
        fig.tight_layout()
        fig.savefig(prefix + "-workers.png", dpi=100)
        plt.close(fig)
    print("\n".join(md))
    return 0


def sensitivity(path, prefix):
    res = pa.load(path)
    spec = res.experiment
    base_mb = spec.get("base", {}).get("algorithm", {}).get("megabatch")
    rows = run_rows(res)
    for r in rows:
        r["variant"] = adaptive_variant(r["run"]["config"], base_mb)
        r["samples"] = float(r["run"]["curves"]["samples"][-1])
    lrs = sorted({r["lr"] for r in rows})
    # Runs of different mega-batch sizes consume different samples per step: compare them
    # within the smallest run's sample budget too.
    common = min(r["samples"] for r in rows)
    md = ["# Adaptive SGD: parameter sensitivity (R10)", "",
          f"Results: `{path}`. {rows[0]['workers']} workers; one table per lr. Reference: the "
          "paper's defaults (b_min = b_max/8, beta = b_min/2, pert_thr = delta = 0.1, gamma = 0.9) "
          f"with the spec's mega-batch of {base_mb} batches; target = 99% of the reference's best "
          f"P@1. 'Within common samples' = best P@1 over the first {int(common)} samples (the "
          "smallest run's budget), which compares mega-batch sizes at equal data.", "",
          "Paper (Figs. 9-12): a larger mega-batch slows early progress but 20-100 batches perform "
          "well; starting at b_max is best; beta = b_min/2 is a good default; pert_thr and delta of "
          "0.1 are robust; batch sizes settle by speed and perturbation fires in most merges.", ""]
    for lr in lrs:
        sel = [r for r in rows if r["lr"] == lr]
        ref = next((r for r in sel if r["variant"] == "defaults"), sel[0])
        target = 0.99 * ref["best"]
        md += [f"## lr {lr:g} (reference best P@1 {ref['best']:.4f}, target {target:.4f})", "",
               "| variant | best P@1 | best P@1 within common samples | time to target | final P@1 "
               "| perturbed merges | last batch sizes | status |",
               "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
        for r in sel:
            c = r["run"]["curves"]
            acc = np.asarray(c["test_accuracy"], dtype=float)
            within = acc[np.asarray(c["samples"]) <= common + 0.5]
            r["best_common"] = nanmax(within) if len(within) else float("nan")
            r["t_target"] = first_reach(c, target)
            w = r["run"].get("workers", {})
            p = np.ravel(w.get("perturbed", []))
            bs = per_worker(r["run"], "batch_size")[-1].astype(int).tolist() if "batch_size" in w else []
            r["pert"] = f"{int(p.sum())}/{len(p)}" if len(p) else "-"
            r["last_bs"] = bs
            md.append(f"| {r['variant']} | {fmt(r['best'])} | {fmt(r['best_common'])} | "
                      f"{fmt_t(r['t_target'])} | {fmt(r['final'])} | {r['pert']} | {bs} | {r['status']} |")
        md.append("")
    md += ["Files: " + ", ".join(f"`{os.path.basename(prefix)}{s}`" for s in
                                  (".csv", ".png", "-workers.png")), ""]
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md))
    with open(prefix + ".csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["lr", "variant", "run_id", "status", "best_p_at_1", "best_p_at_1_common_samples",
                     "sim_s_to_target", "final_p_at_1", "perturbed", "last_batch_sizes", "sim_s_total"])
        for r in rows:
            wr.writerow([r["lr"], r["variant"], r["id"], r["status"], r["best"], r["best_common"],
                         r["t_target"][0] if r["t_target"] else "", r["final"], r["pert"],
                         " ".join(map(str, r["last_bs"])), r["sim_s"]])

    # Figs. 9-11: one panel per parameter group (its variants plus the reference) and lr,
    # precision@1 vs simulated time.
    keys = []
    for r in rows:
        k = r["variant"].split("=")[0] if r["variant"] != "defaults" else None
        if k is not None and k not in keys:
            keys.append(k)
    fig, axes = plt.subplots(len(keys), len(lrs), figsize=(5.5 * len(lrs), 3.3 * len(keys)),
                             squeeze=False)
    for i, k in enumerate(keys):
        for j, lr in enumerate(lrs):
            ax = axes[i][j]
            sel = [r for r in rows if r["lr"] == lr]
            ref = next((r for r in sel if r["variant"] == "defaults"), sel[0])
            for r in [ref] + [r for r in sel if r["variant"].split("=")[0] == k]:
                c = r["run"]["curves"]
                ax.plot(np.asarray(c["sim_s"]) * 1e3, c["test_accuracy"], label=r["variant"],
                        lw=1.8 if r is ref else 1.1, color="black" if r is ref else None)
            ax.set_title(f"{k} (lr {lr:g})", fontsize=9)
            ax.set_xlabel("simulated time (ms)")
            ax.set_ylabel("test precision@1")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(len(lrs), 3, figsize=(14, 3.8 * len(lrs)), squeeze=False)
    for j, lr in enumerate(lrs):
        sel = [r for r in rows if r["lr"] == lr]
        ref = next((r for r in sel if r["variant"] == "defaults"), sel[0])
        worker_panels(axes[j], ref["run"], f"{ref['variant']}, lr {lr:g}")
    fig.tight_layout()
    fig.savefig(prefix + "-workers.png", dpi=100)
    plt.close(fig)
    print("\n".join(md))
    return 0


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("figures", "sensitivity"):
        sys.exit(__doc__)
    fn = figures if sys.argv[1] == "figures" else sensitivity
    return fn(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    sys.exit(main())
