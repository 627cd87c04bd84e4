"""The reproduction targets R1-R6 of DESIGN.md section 11: each function reads the
results of its experiment, builds the tables (ours beside the paper's), states whether
the paper's claimed *shape* holds with our numbers, and returns a Report.

The checks are fixed here, before and independently of any data: thresholds are stated
in the report text, and a disagreement is reported with the numbers, never hidden.
Absolute values differ from the papers (Fashion-MNIST instead of MNIST, 2 CPU cores
instead of GPU clusters); the claim checked is the shape (ordering, ratio, trend).
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Mapping, Sequence

import numpy as np

from . import catalog as _catalog
from . import claims
from . import figures, paper
from . import stats as st
import pandas as pd

from .metrics import best_per_group, median_over
from .report import Report
from .results import Results, load
from .tables import first, match, py, records, sort


def _pp(x: float) -> str:
    """Accuracy as percent with one decimal ('-' for NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _uniq(col: pd.Series) -> list[Any]:
    """A column's distinct values in first-seen order, as Python scalars."""
    return [py(v) for v in col.unique()]


def _lr_is(df: pd.DataFrame, lr: float, rel_tol: float = 1e-9) -> pd.DataFrame:
    """The rows whose lr is ``lr`` (relative tolerance), with a fresh index."""
    return df[[math.isclose(x, lr, rel_tol=rel_tol) for x in df["lr"]]].reset_index(drop=True)


def _runtime_from_results(res: Results) -> dict[str, str]:
    """Compute time recorded in the file: the sum of the runs' wall times (each run's wall
    time is the whole run on its ranks), and the rank count it ran with."""
    total = float(np.nansum(res.runs["wall_s"].to_numpy(dtype=float)))
    ranks = res.attrs.get("mpi_ranks", "?")
    return {"experiment": f"{total / 60:.1f} min ({len(res)} runs, sum of run wall times, "
                          f"mpirun -n {ranks})"}


# ============================================================================ R1
#: the paper's sequential max LR, found on MNIST (arXiv 5.4); ours is searched on our data
#: (experiments/lenet_seq_lr.json) and written into experiments/lenet_sweep.json
PAPER_SEQ_LR = 0.0328
UNTUNED_LR = PAPER_SEQ_LR  # kept for old callers: the paper's value, not ours (see lenet())
#: a priori thresholds of the R1 check (percentage points of test accuracy)
R1_NEAR_PP = claims.R1_NEAR_PP          # "stays near the sequential accuracy" (claims.py)
R1_COLLAPSE_PP = claims.R1_COLLAPSE_PP  # "fails to converge / collapses" (claims.py)
#: The one divergence rule of every target (psgd_analysis.stats.split_diverged): a diverged
#: run has no accuracy; the tables give the diverged count beside the accuracy of the runs
#: that did not diverge, and an LR is chosen among those with the most runs that did not
#: diverge (then the best mean validation accuracy).
DIVERGED_RULE = ("a diverged run has no accuracy: intervals are over the runs that did not diverge, "
                 "with the diverged count beside them; an LR is chosen among those with the most "
                 "non-diverged seeds")
R1_CHANCE = None  # diverged runs are left out (DIVERGED_RULE)
#: the split every LR is chosen on (never the test set; spec metrics.validation_fraction)
R1_SELECT_ON = "final_val_accuracy"
#: the sequential arm and the two combiners as psgd_analysis.results labels them
R1_SEQ, R1_SUM, R1_ADA = "Sum", "Sum", "Adasum (delta)"


def _seed_values(runs: pd.DataFrame, col: str, diverged: float | None, **cell: Any) -> dict[int, float]:
    """seed -> ``col`` of the runs matching ``cell`` (lr matched with a tolerance): completed
    runs their value; diverged runs are left out (``diverged`` None, DIVERGED_RULE) or, for
    an old caller, scored ``diverged``; runs that did not finish are left out. Shared by the
    LR-grid targets (R1, R6)."""
    out: dict[int, float] = {}
    s = match(runs, **{k: v for k, v in cell.items() if k != "lr"})
    if "lr" in cell:
        s = _lr_is(s, cell["lr"])
    for r in records(s):
        if r["status"] == "completed" and not (r[col] is None or math.isnan(r[col])):
            out[int(r["seed"])] = float(r[col])
        elif r["status"] == "diverged" and diverged is not None:
            out[int(r["seed"])] = diverged
    return out


def _lr_grid_values(runs: pd.DataFrame, col: str, diverged: float,
                    cells: Mapping[tuple, Mapping[str, Any]], grid: Sequence[float]
                    ) -> dict[tuple, dict[int, float]]:
    """(*cell key, lr) -> seed -> ``col`` for every cell (its filter) and grid LR (R1, R6)."""
    return {(*k, lr): _seed_values(runs, col, diverged, lr=lr, **flt)
            for k, flt in cells.items() for lr in grid}


def _grid_cell(s: pd.DataFrame, v: Mapping[int, float], lr: float, chosen_lr: float,
               fmt: Any) -> str:
    """One cell of an LR-grid table: '-' without runs, the statuses without values, else
    fmt(v) with the diverged count, bold when lr is the chosen LR (R1, R6)."""
    if not len(s):
        return "-"
    if not v:
        return ", ".join(sorted(set(map(str, s["status"]))))
    cell = fmt(v)
    bad = int((s["status"] == "diverged").sum())
    cell += f" ({bad} diverged)" if bad else ""
    return f"**{cell}**" if math.isclose(lr, chosen_lr) else cell


def _r1_paired(a: dict[int, float], b: dict[int, float], scale: float = 1.0) -> list[float]:
    """scale * (a - b) over the seeds both have (paired by seed: same init, same data order)."""
    return [scale * (a[k] - b[k]) for k in sorted(set(a) & set(b))]


def _r1_choose(val: Mapping[float, Mapping[int, float]], seeds: Sequence[int] | None = None,
               seed: int | None = None, larger_on_tie: bool = False) -> float:
    """The LR of ``val`` (lr -> seed -> validation accuracy) with the best validation accuracy:
    the mean over ``seeds`` (all the LR's seeds when None) or one ``seed``'s value; an LR
    with more non-diverged seeds first (DIVERGED_RULE); ties go to the smaller LR, or to the
    larger with ``larger_on_tie`` (the 'aggressive' sequential LR). NaN when no LR has a value."""
    best, best_key = math.nan, None
    for lr in sorted(val, reverse=larger_on_tie):
        v = val[lr] if seeds is None else {k: x for k, x in val[lr].items() if k in seeds}
        if seed is not None:
            x, n = v.get(seed, math.nan), 1
        else:
            x, n = (float(np.mean(list(v.values()))) if v else math.nan), len(v)
        if math.isnan(x):
            continue
        if best_key is None or (n, x) > best_key:
            best, best_key = lr, (n, x)
    return best


def _r1_seq_search(rep: Report, seq: Results) -> tuple[float, list[float], pd.DataFrame]:
    """Step 1 (arXiv 5.4): the sequential (W = 1) max LR on our data. Returns (chosen LR,
    grid, table rows for the CSV) and writes the search's section."""
    runs = seq.runs
    grid = sorted(_uniq(runs["lr"]))
    val = {lr: _seed_values(runs, R1_SELECT_ON, R1_CHANCE, lr=lr) for lr in grid}
    test = {lr: _seed_values(runs, "final_test_accuracy", R1_CHANCE, lr=lr) for lr in grid}
    chosen = _r1_choose(val, larger_on_tie=True)
    per_seed = [_r1_choose(val, seed=sd, larger_on_tie=True) for sd in sorted(_uniq(runs["seed"]))]
    pct = lambda v: st.fmt_ci(*st.mean_interval(list(v.values()), (0.0, 1.0))[:3], ".1f", scale=100)  # noqa: E731
    rows = {"max LR": [], "x paper's 0.0328": [], "validation acc % (choice)": [], "test acc %": [],
            "final train loss": [], "runs (diverged)": []}
    for lr in grid:
        s = _lr_is(runs, lr)
        bad = int((s["status"] == "diverged").sum())
        loss = [x for x in s["final_train_loss"] if x is not None and np.isfinite(x)]
        rows["max LR"].append(f"{lr:g}" + (" (chosen)" if math.isclose(lr, chosen) else ""))
        rows["x paper's 0.0328"].append(f"{lr / PAPER_SEQ_LR:.3g}")
        rows["validation acc % (choice)"].append(_grid_cell(s, val[lr], lr, chosen, pct))
        rows["test acc %"].append(pct(test[lr]) if test[lr] else "-")
        rows["final train loss"].append(f"{np.mean(loss):.3f}" if loss else "-")
        rows["runs (diverged)"].append(f"{len(s)} ({bad})")
    edge = len(grid) > 1 and (math.isclose(chosen, grid[0]) or math.isclose(chosen, grid[-1]))
    cfg = seq.config(seq.run_ids()[0]) if len(seq) else {}
    rep.section("Step 1: the sequential max LR on our data (W = 1, the paper's 2 epochs and schedule)")
    rep.text(
        "The paper first finds 'a very aggressive learning rate schedule for sequential training that "
        "barely reaches a baseline accuracy', then keeps the epochs fixed and measures every distributed "
        "configuration by 'how far off they are from the sequential accuracy' (arXiv 5.4); its 0.0328 "
        "reliably reaches 99.3% on MNIST in 2 epochs, the net's ceiling (99.3-99.4%). **Our reading:** "
        "at the fixed 2-epoch budget, the sequential max LR is the LR at which one worker (batch 32, "
        f"momentum 0.5, {cfg.get('epochs', '?')} epochs, the paper's warm-up + linear decay) trains best: "
        f"the grid LR with the best seed-mean final **validation** accuracy ({len(per_seed)} seeds; an LR "
        "with a diverged seed loses to one without; ties to the larger LR). Grid: ratio sqrt(2), "
        f"{grid[0]:g} - {grid[-1]:g} (`experiments/lenet_seq_lr.json`).\n\n"
        f"**Chosen: {chosen:g}** ({chosen / PAPER_SEQ_LR:.3g} x the paper's MNIST 0.0328)"
        + (" -- ON THE GRID'S EDGE: the optimum may lie outside." if edge else ", inside the grid.")
        + " Each seed's own choice: " + ", ".join(f"{x:g}" for x in per_seed) + ".")
    rep.table(pd.DataFrame(rows), "bold = the chosen LR")
    return chosen, grid, runs


def _r1_figure(seq_rows: pd.DataFrame, chosen_seq: float, cells: pd.DataFrame,
               paper_lr: Mapping[str, Mapping[int, float]], seq_acc: float,
               curves: Mapping[tuple[str, int], list[pd.DataFrame]]) -> Any:
    """R1 (arXiv Fig. 6 + LR table) with the spread over seeds: (a) the sequential LR search
    (validation accuracy vs LR, seeds as dots); (b) untuned and tuned test accuracy vs W, mean
    with 95% error bars, the sequential accuracy as a line; (c) the validation-chosen LR per
    cell as a multiple of the sequential LR, beside the paper's; (d) untuned train loss."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(17.6, 3.9))
    ax = axes[0]
    ok = seq_rows[seq_rows["status"] == "completed"]
    ax.scatter(ok["lr"], 100 * ok[R1_SELECT_ON], s=12, color="0.4", alpha=0.6, label="each seed")
    g = ok.groupby("lr", as_index=False)[R1_SELECT_ON].mean()
    ax.plot(g["lr"], 100 * g[R1_SELECT_ON], "o-", color="k", label="seed mean")
    ax.axvline(chosen_seq, color="tab:red", ls="--", label=f"chosen {chosen_seq:g}")
    ax.axvline(PAPER_SEQ_LR, color="tab:blue", ls=":", label="paper (MNIST) 0.0328")
    ax.set_xscale("log")
    ax.set_xlabel("max LR (W = 1, batch 32)")
    ax.set_ylabel("final validation accuracy %")
    ax.set_title("step 1: sequential LR search")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax = axes[1]
    algs = list(dict.fromkeys(cells["algorithm"]))
    ticks = sorted(set(int(w) for w in cells["workers"]))
    for j, alg in enumerate(algs):
        s = sort(match(cells, algorithm=alg), "workers")
        for kind, ls in (("untuned", "-"), ("tuned", ":")):
            x = s["workers"].to_numpy(dtype=float) * (1 + 0.03 * (j - 0.5) + (0.015 if kind == "tuned" else 0))
            m = 100 * s[f"{kind}_mean"].to_numpy(dtype=float)
            lo = 100 * s[f"{kind}_lo"].to_numpy(dtype=float)
            hi = 100 * s[f"{kind}_hi"].to_numpy(dtype=float)
            err = np.vstack([np.where(np.isfinite(lo), m - lo, 0), np.where(np.isfinite(hi), hi - m, 0)])
            ax.errorbar(x, m, yerr=err, fmt="o" + ls, capsize=3, color=figures._color(alg.split(" ")[0]),
                        label=f"{alg}, {kind}", alpha=1.0 if kind == "untuned" else 0.6)
            if kind == "untuned":  # the mean is over the runs that did not diverge: say how many did
                for r in records(s):
                    if r["untuned_diverged"]:
                        ax.annotate(f"{r['untuned_diverged']}/{r['untuned_diverged'] + r['untuned_n']} diverged",
                                    (r["workers"], 100 * r["untuned_mean"] if np.isfinite(r["untuned_mean"]) else 5),
                                    fontsize=6, color=figures._color(alg.split(" ")[0]),
                                    xytext=(4, -10), textcoords="offset points")
    if np.isfinite(seq_acc):
        ax.axhline(100 * seq_acc, color="k", ls="--", lw=1, label="sequential (W = 1)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(w) for w in ticks])
    ax.set_xlabel("workers (x 32 samples)")
    ax.set_ylabel("test accuracy % (mean, 95% CI)")
    ax.set_title("Fig. 6: accuracy at 2 epochs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    ax = axes[2]
    for j, alg in enumerate(algs):
        s = sort(match(cells, algorithm=alg), "workers")
        c = figures._color(alg.split(" ")[0])
        ax.plot(s["workers"].to_numpy(dtype=float) * (1 + 0.04 * (j - 0.5)), s["tuned_lr"] / chosen_seq,
                "o-", color=c, label=f"{alg} (ours, seed mean)")
        for r in records(s):
            per = [x / chosen_seq for x in r["tuned_lr_per_seed"]]
            jit = [r["workers"] * (1 + 0.04 * (j - 0.5) + 0.02 * (k - (len(per) - 1) / 2))
                   for k in range(len(per))]
            ax.scatter(jit, per, s=12, color=c, alpha=0.5, marker="x")
        key = alg.split(" ")[0]
        if key in paper_lr:
            w = sorted(paper_lr[key])
            ax.plot(w, [paper_lr[key][x] / PAPER_SEQ_LR for x in w], "s--", color=c, alpha=0.6,
                    label=f"{key} (paper, MNIST)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ticks, [str(w) for w in ticks])
    ax.set_xlabel("workers")
    ax.set_ylabel("tuned max LR / sequential max LR")
    ax.set_title("chosen LR (x: each seed's choice)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax = axes[3]
    styles = {1: "-", 4: ":", 8: "-.", 16: "--", 32: "-"}
    for (alg, w), cs in curves.items():
        cs = [c[["epoch", "train_loss"]].dropna() for c in cs]
        n = min(len(c) for c in cs)
        if n == 0:
            continue
        x = cs[0]["epoch"].to_numpy()[:n]
        y = np.vstack([c["train_loss"].to_numpy()[:n] for c in cs])
        col = "k" if w == 1 else figures._color(alg.split(" ")[0])
        ax.plot(x, np.nanmean(y, axis=0), styles.get(int(w), "-"), color=col, lw=1,
                label="sequential W=1" if w == 1 else f"{alg} W={w}")
        if len(cs) > 1:
            ax.fill_between(x, np.nanmin(y, axis=0), np.nanmax(y, axis=0), color=col, alpha=0.1)
    ax.set_xlabel("epoch")
    ax.set_ylabel("train loss (seed mean, min-max band)")
    ax.set_yscale("log")
    ax.set_ylim(0.2, 5.0)  # a diverging run's loss leaves the axis (its count is in panel 2)
    ax.set_title("untuned training loss")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _r1_apply_ablation(rep: Report, abl: Results, un_delta: Mapping[int, Mapping[int, float]],
                       seq_acc: Mapping[int, float], method: str) -> None:
    """Where Adasum is applied (arXiv 4.1): the untuned W = 16 and 32 cells with Adasum on the
    gradients (experiments/lenet_ablation_apply.json) against the main sweep's Adasum on the
    optimizer deltas, paired by seed; a diverged run is -inf (claims.cell_decide)."""
    ar = abl.runs
    ws = sorted(_uniq(ar["workers"]))
    rows: dict[str, list[Any]] = {"W": [], "Adasum (gradient) test acc %": [], "loss vs sequential (pp)": [],
                                  "Adasum (delta) test acc %": [], "delta minus gradient (pp)": []}
    cells = {}
    for w in ws:
        g = _seed_values(ar, "final_test_accuracy", -math.inf, workers=w)
        g_fin = {k: x for k, x in g.items() if math.isfinite(x)}
        d = un_delta.get(w, {})
        cells[f"W={w}"] = _r1_paired(d, g, 100)
        bad = sum(1 for x in g.values() if not math.isfinite(x))
        rows["W"].append(w)
        rows["Adasum (gradient) test acc %"].append(
            st.fmt_ci(*st.mean_interval(list(g_fin.values()), (0.0, 1.0))[:3], ".1f", scale=100)
            + (f" ({bad} diverged)" if bad else ""))
        rows["loss vs sequential (pp)"].append(
            st.fmt_ci(*st.mean_interval(_r1_paired(seq_acc, g_fin, 100), claims.PP)[:3], "+.1f"))
        rows["Adasum (delta) test acc %"].append(
            st.fmt_ci(*st.mean_interval([x for x in d.values() if math.isfinite(x)], (0.0, 1.0))[:3], ".1f", scale=100))
        rows["delta minus gradient (pp)"].append(claims.cell_decide(cells[f"W={w}"], 0.0, "above")[2])
    v, ev = claims.cells_decide(cells, 0.0, "above")
    rep.claim_verdict(
        "Ablation, where Adasum is applied: on the optimizer deltas (Horovod's DistributedOptimizer, arXiv 4.1) "
        "Adasum reaches a higher accuracy than on the gradients at W = 16 and 32 (untuned LR)", v,
        f"test accuracy, Adasum (delta) minus Adasum (gradient), paired by seed, above 0 in every cell ({method}): "
        + ev + ".")
    rep.section("Ablation: Adasum on gradients vs on optimizer deltas (untuned, W = 16 and 32)")
    rep.text("`experiments/lenet_ablation_apply.json` reruns the untuned W = 16 and 32 cells with `apply: gradient` "
             "(the combined gradient goes through one momentum step, as this target did before) instead of Horovod's "
             "`apply: delta` (each worker's own momentum step, Adasum on the deltas); same LR, epochs, seeds. Mean "
             "[95% CI] over seeds; the difference is paired by seed.")
    rep.table(pd.DataFrame(rows))
    near = {w: claims.cell_decide(_r1_paired(seq_acc, _seed_values(ar, "final_test_accuracy", -math.inf,
                                                                    workers=w), 100), R1_NEAR_PP, "below")[0]
            for w in ws}
    fails = [w for w in ws if near[w] == st.FAILS]
    rep.text(f"'Near' the sequential run (loss below {R1_NEAR_PP:g} pp, the untuned claim's rule per cell) with "
             "Adasum on the gradients: " + "; ".join(f"W={w}: {v}" for w, v in near.items()) + "."
             + (f" With gradients too 'near' does not hold at W = {', '.join(map(str, fails))}, so the place "
                "Adasum acts does not decide the untuned claim." if fails else ""))


def lenet(seq_h5: str, h5: str | None = None, ref_h5: str | None = None,
          tuned_h5: str | None = None, apply_h5: str | None = None) -> Report:
    """R1 at the paper's protocol (arXiv 5.4): (1) the sequential max LR on our data from the
    W = 1 search (``seq_h5``, experiments/lenet_seq_lr.json), checked against the untuned LR of
    the main sweep (``h5``, lenet_sweep.json: Sum and Adasum on optimizer deltas at W = 4..32,
    the untuned LR, many seeds); (2) the sequential reference at that LR (``ref_h5``,
    lenet_seq_ref.json, its further seeds); (3) the tuned grid around it (``tuned_h5``,
    lenet_sweep_tuned.json, fewer seeds). 'Collapse' and 'near' are losses of test accuracy
    against the sequential run, paired by seed; intervals and tests from psgd_analysis.stats."""
    if h5 is None:
        raise SystemExit("adasum-lenet: the report reads reports/lenet_seq_lr.h5, lenet_sweep.h5, "
                         "lenet_seq_ref.h5 and lenet_sweep_tuned.h5 (analysis/psgd_analysis/catalog.py)")
    seq_res, res = load(seq_h5), load(h5)
    ref_res = load(ref_h5) if ref_h5 else None
    tun_res = load(tuned_h5) if tuned_h5 else None
    rep = Report("adasum-lenet", "R1: LeNet-5, Sum vs Adasum, untuned and tuned LR (4-32 workers)",
                 sources=[paper.R1_SOURCE])
    abl_res = load(apply_h5) if apply_h5 else None
    rep.inputs = [p for p in (seq_h5, h5, ref_h5, tuned_h5, apply_h5) if p] + [
        "experiments/lenet_seq_lr.json", "experiments/lenet_sweep.json", "experiments/lenet_seq_ref.json",
        "experiments/lenet_sweep_tuned.json", "experiments/lenet_ablation_apply.json"]
    parts = [("W = 1 LR search", seq_res), ("untuned sweep", res)] + (
        [("sequential reference", ref_res)] if ref_res is not None else []) + (
        [("tuned grid", tun_res)] if tun_res is not None else []) + (
        [("apply ablation", abl_res)] if abl_res is not None else [])
    total = 0.0
    each = []
    for name, r in parts:
        t = float(np.nansum(r.runs["wall_s"].to_numpy(dtype=float)))
        total += t
        each.append(f"{name} {t / 60:.1f} min ({len(r)} runs)")
    ranks = res.attrs.get("mpi_ranks", "?")
    rep.runtime = {"experiment": f"{total / 60:.1f} min (sum of run wall times, mpirun -n {ranks}: "
                                 + "; ".join(each) + ")"}
    for name, r in parts:
        if R1_SELECT_ON not in r.runs or not r.runs[R1_SELECT_ON].notna().any():
            raise SystemExit(f"adasum-lenet: the {name} has no {R1_SELECT_ON} in any run; every LR is "
                             "chosen on a validation split (the specs set metrics.validation_fraction), "
                             "never on the test set: rerun it")
    pct = lambda m, lo, hi: st.fmt_ci(m, lo, hi, ".1f", scale=100)  # noqa: E731

    def ci(d: Mapping[int, float]) -> tuple[float, float, float, int]:
        return st.mean_interval(list(d.values()), bounds=(0.0, 1.0))

    # --- step 1: the sequential max LR, and the CHECK against the main spec's untuned LR -----
    seq_lr, seq_grid, seq_runs = _r1_seq_search(rep, seq_res)
    runs = res.runs
    main_lrs = sorted(_uniq(runs["lr"]))
    untuned_lr = main_lrs[0] if len(main_lrs) == 1 else math.nan
    lr_ok = len(main_lrs) == 1 and math.isclose(untuned_lr, seq_lr, rel_tol=1e-9)
    # the sequential reference: the search's runs at the chosen LR (its seeds) joined with
    # experiments/lenet_seq_ref.json's runs (the untuned cells' further seeds)
    ref_runs = ref_res.runs if ref_res is not None else seq_runs.iloc[0:0]
    ref_lrs = sorted(_uniq(ref_runs["lr"])) if len(ref_runs) else []
    ref_ok = len(ref_lrs) <= 1 and all(math.isclose(x, seq_lr, rel_tol=1e-9) for x in ref_lrs)
    check = ("**CHECK passed:** the untuned LR of `experiments/lenet_sweep.json` "
             f"({untuned_lr:g}) and the LR of the sequential reference's further seeds "
             f"(`experiments/lenet_seq_ref.json`: {', '.join(f'{x:g}' for x in ref_lrs) or 'none'}) equal the "
             f"LR the W = 1 search chose from its results file ({seq_lr:g})." if lr_ok and ref_ok else
             "**CHECK FAILED:** the untuned LR of `experiments/lenet_sweep.json` "
             f"({', '.join(f'{x:g}' for x in main_lrs)}) or of the sequential reference "
             f"({', '.join(f'{x:g}' for x in ref_lrs)}) is not the LR the W = 1 search chose ({seq_lr:g}): "
             "the untuned claims are NOT TESTED until the specs name the chosen LR and are rerun.")
    rep.text(check)

    # --- the sequential reference: W = 1 at the untuned LR, the untuned cells' seeds ----------
    s_search = _seed_values(_lr_is(seq_runs, untuned_lr), "final_test_accuracy", R1_CHANCE) \
        if not math.isnan(untuned_lr) else {}
    s_ref = _seed_values(ref_runs, "final_test_accuracy", R1_CHANCE, workers=1)
    same = [s_search[k] == s_ref[k] for k in sorted(set(s_search) & set(s_ref))]  # determinism
    seq_acc = {**s_search, **s_ref}
    seq_m = ci(seq_acc)

    # --- the untuned cells ---------------------------------------------------------------
    algs = [a for a in (R1_SUM, R1_ADA) if a in _uniq(runs["algorithm"])]
    ws = sorted(_uniq(runs["workers"]))
    seeds = sorted(_uniq(runs["seed"]))
    n_seeds = len(seeds)
    un = {(a, w): _seed_values(runs, "final_test_accuracy", R1_CHANCE, algorithm=a, workers=w) for a in algs for w in ws}
    un_div = {(a, w): int((match(runs, algorithm=a, workers=w)["status"] == "diverged").sum()) for a in algs for w in ws}
    loss = {(a, w): _r1_paired(seq_acc, un[a, w], 100) for a in algs for w in ws}
    # for the claims a diverged run has accuracy -inf: it loses everything (claims.cell_decide
    # then decides its cell on per-seed outcomes by the exact sign test)
    un_inf = {(a, w): _seed_values(runs, "final_test_accuracy", -math.inf, algorithm=a, workers=w)
              for a in algs for w in ws}
    loss_inf = {(a, w): _r1_paired(seq_acc, un_inf[a, w], 100) for a in algs for w in ws}

    # --- the tuned grid: the untuned LR (all its seeds) + the tuned spec's LRs -----------------
    all_runs = pd.concat([runs, tun_res.runs], ignore_index=True) if tun_res is not None else runs
    grid = sorted(_uniq(all_runs["lr"]))
    tseeds = sorted(_uniq(tun_res.runs["seed"])) if tun_res is not None else seeds
    cells_ = {(a, w): {"algorithm": a, "workers": w} for a in algs for w in ws}
    val = _lr_grid_values(all_runs, R1_SELECT_ON, R1_CHANCE, cells_, grid)
    test = _lr_grid_values(all_runs, "final_test_accuracy", R1_CHANCE, cells_, grid)
    on_edge = lambda lr: (len(grid) > 1 and not math.isnan(lr) and  # noqa: E731
                          (math.isclose(lr, grid[0]) or math.isclose(lr, grid[-1])))
    # every LR is compared on the seeds the whole grid has (the tuned spec's)
    # a cell the tuned spec leaves out (W = 8) has one LR: nothing was searched there
    searched = {(a, w): sum(1 for lr in grid if len(_lr_is(match(all_runs, algorithm=a, workers=w), lr))) > 1
                for a in algs for w in ws}
    chosen = {(a, w): _r1_choose({lr: val[a, w, lr] for lr in grid}, seeds=tseeds) if searched[a, w] else math.nan
              for a in algs for w in ws}
    chosen_seed = {(a, w): [_r1_choose({lr: val[a, w, lr] for lr in grid}, seed=sd) if searched[a, w] else math.nan
                            for sd in tseeds] for a in algs for w in ws}

    def tuned(a: str, w: int) -> dict[int, float]:
        return {k: x for k, x in test.get((a, w, chosen[a, w]), {}).items() if k in tseeds}

    cells = []
    for a in algs:
        for w in ws:
            um, ulo, uhi, un_n = ci(un[a, w])
            tm, tlo, thi, tn = ci(tuned(a, w))
            cells.append({"algorithm": a, "workers": w, "untuned_mean": um, "untuned_lo": ulo,
                          "untuned_hi": uhi, "untuned_n": un_n, "untuned_diverged": un_div[a, w],
                          "tuned_lr": chosen[a, w], "tuned_mean": tm, "tuned_lo": tlo, "tuned_hi": thi,
                          "tuned_n": tn, "tuned_lr_per_seed": chosen_seed[a, w]})
    cells = pd.DataFrame(cells)

    # --- claims ----------------------------------------------------------------------------
    method = (f"{n_seeds} seeds per untuned cell, {len(tseeds)} per tuned-grid point, {st.METHOD}; "
              f"{DIVERGED_RULE}")
    big = [w for w in ws if w > 8]
    div_rule = ("; in the untuned claims a diverged run has lost everything (loss +inf: the paper's 'fails to "
                "converge'), and a cell with one is decided on per-seed outcomes by the exact sign test")
    nt = None if lr_ok and ref_ok else f"{st.NOT_TESTED} (the untuned LR is not the W = 1 search's choice)"
    if R1_SUM in algs and R1_ADA in algs and big and seq_acc:
        sum_loss = {w: loss_inf[R1_SUM, w] for w in big}
        ada_loss = {w: loss_inf[R1_ADA, w] for w in ws}
        v_a, ev_a = claims.r1_untuned(sum_loss, ada_loss)
        rep.claim_verdict(
            "Untuned: Sum's accuracy collapses beyond 8 workers while Adasum's stays near the sequential "
            "accuracy up to 32 workers (arXiv 5.4, Fig. 6)", nt or v_a,
            f"test accuracy lost against the sequential (W = 1) run at the same LR {untuned_lr:g} and "
            f"2 epochs (sequential: {pct(*seq_m[:3])}), paired by seed ({method}{div_rule}). Thresholds fixed before "
            "the runs (psgd_analysis/claims.py); collapse at every W > 8, near at every W; DOES NOT HOLD "
            "when Holm over the cells rejects one: " + ev_a + ".")
        v_c, ev_c = claims.r1_converges(sum_loss, {w: loss_inf[R1_ADA, w] for w in big})
        rep.claim_verdict(
            "Untuned, in the paper's words: Sum fails to converge at more than 8 workers, while Adasum "
            "still converges at 16 and 32 (arXiv 5.4)", nt or v_c,
            f"'fails to converge' = loses more than {R1_COLLAPSE_PP:g} pp against the sequential run, "
            f"'converges' = loses less than that (the same a-priori collapse threshold), paired by seed "
            f"({method}{div_rule}): " + ev_c + ".")
        diff = {w: _r1_paired(un_inf[R1_ADA, w], un_inf[R1_SUM, w], 100) for w in big}
        v_b, ev_b = claims.r1_ordering(diff)
        rep.claim_verdict(
            "Untuned, weaker form (the ordering of Fig. 6): beyond 8 workers Sum loses more accuracy "
            "than Adasum against the sequential run", nt or v_b,
            f"Sum's loss minus Adasum's = Adasum's accuracy minus Sum's, paired by seed, above 0 at every "
            f"W > 8 ({method}{div_rule}): " + ev_b + ".")

        lo_w, hi_w = min(ws), max(ws)
        v_t, ev_t = claims.r1_tuned_lrs(chosen_seed[R1_SUM, lo_w], chosen_seed[R1_SUM, hi_w],
                                        {w: chosen_seed[R1_ADA, w] for w in big},
                                        {w: chosen_seed[R1_SUM, w] for w in big})
        rep.claim_verdict(
            "Tuned: Adasum's best LRs stay high at 16 and 32 workers while Sum's fall "
            "(arXiv 5.4 LR table)", v_t,
            "each seed's LR chosen on its own final validation accuracy (grid "
            f"{', '.join(f'{g:g}' for g in grid)}); pairs: Sum's LR at W={lo_w} vs W={hi_w}, and "
            "Adasum's vs Sum's at each W>8, per seed: " + ev_t + ". LRs chosen on the seed-mean "
            "validation accuracy: Sum " + ", ".join(f"W={w}: {chosen[R1_SUM, w]:g}" for w in ws if searched[R1_SUM, w])
            + "; Adasum " + ", ".join(f"W={w}: {chosen[R1_ADA, w]:g}" for w in ws if searched[R1_ADA, w])
            + (" (a chosen LR on the grid's edge may have its optimum outside the grid)."
               if any(on_edge(chosen[a, w]) for a in algs for w in ws) else "."),
            arms={f"{a} W={w}": list(chosen_seed[a, w])
                  for a, w in [(R1_SUM, lo_w), (R1_SUM, hi_w)] + [(a, w) for w in big for a in (R1_SUM, R1_ADA)]})

        if 32 in ws and 16 in ws:
            d1 = _r1_paired(un_inf[R1_ADA, 32], tuned(R1_SUM, 32), 100)
            d2 = _r1_paired(tuned(R1_ADA, 16), tuned(R1_SUM, 16), 100)
            v1, _, e1 = claims.cell_decide(d1, 0.0, "above")
            v2, _, e2 = claims.cell_decide(d2, 0.0, "above")
            rep.claim_verdict(
                "Tuned Sum stays below untuned Adasum at 32 workers, and tuned Adasum beats tuned "
                "Sum at 16 (arXiv 5.4)", st.combine([v1, v2]),
                f"test accuracy at the validation-chosen LRs, paired by seed, interval above 0 ({method}): "
                f"W=32 untuned Adasum {pct(*ci(un[R1_ADA, 32])[:3])} minus tuned Sum (lr "
                f"{chosen[R1_SUM, 32]:g}) {pct(*ci(tuned(R1_SUM, 32))[:3])} = {e1} ({v1}); W=16 tuned Adasum (lr {chosen[R1_ADA, 16]:g}) "
                f"{pct(*ci(tuned(R1_ADA, 16))[:3])} minus tuned Sum (lr {chosen[R1_SUM, 16]:g}) "
                f"{pct(*ci(tuned(R1_SUM, 16))[:3])} = {e2} ({v2}).")

    # --- tables ----------------------------------------------------------------------------
    rep.section("The sequential reference and the untuned cells (the paper's Fig. 6)")
    rep.text(
        f"Sequential = one worker, batch 32, at the untuned LR {untuned_lr:g}, 2 epochs, seeds "
        f"{', '.join(map(str, sorted(seq_acc)))}: test accuracy {pct(*seq_m[:3])}"
        + f" (seeds {', '.join(map(str, sorted(s_search)))} from the W = 1 search, "
        f"{', '.join(map(str, sorted(s_ref))) or 'none'} from `experiments/lenet_seq_ref.json`)"
        + (f"; where both ran a seed, the runs are bit-identical in {sum(same)} of {len(same)} "
           "(same config and seed, same result)" if same else "")
        + ". Loss = sequential minus the cell, per seed, in points: mean [95% CI] "
        f"({st.METHOD}). The paper's thresholds are words ('fails to converge', 'still converges'); "
        f"ours are fixed in psgd_analysis/claims.py: collapse > {R1_COLLAPSE_PP:g} pp, near < {R1_NEAR_PP:g} pp.")
    t_un = {"combiner": [], "W": [], "steps": [], "test acc %": [], "loss vs sequential (pp)": [],
            "tuned: LR / seq LR": [], "tuned test acc %": [], "tuned loss vs sequential (pp)": []}
    for a in algs:
        for w in ws:
            s = match(runs, algorithm=a, workers=w)
            t_un["combiner"].append(a)
            t_un["W"].append(w)
            t_un["steps"].append(int(s["steps"].max()) if len(s) else "-")
            t_un["test acc %"].append(pct(*ci(un[a, w])[:3]) + (f" ({un_div[a, w]} diverged)" if un_div[a, w] else ""))
            t_un["loss vs sequential (pp)"].append(
                st.fmt_ci(*st.mean_interval(loss[a, w], claims.PP)[:3], "+.1f")
                + (f" ({un_div[a, w]} diverged: +inf)" if un_div[a, w] else ""))
            c = chosen[a, w]
            t_un["tuned: LR / seq LR"].append("not searched" if math.isnan(c) else f"{c:g} / {c / seq_lr:.3g}"
                                              + (" (grid edge)" if on_edge(c) else ""))
            t_un["tuned test acc %"].append(pct(*ci(tuned(a, w))[:3]))
            t_un["tuned loss vs sequential (pp)"].append(
                st.fmt_ci(*st.mean_interval(_r1_paired(seq_acc, tuned(a, w), 100), claims.PP)[:3], "+.1f"))
    rep.table(pd.DataFrame(t_un))
    # the analysis behind a 'near' that does not hold: is it the untuned LR or the budget?
    seq_steps = int(ref_runs["steps"].max()) if len(ref_runs) else (
        int(_lr_is(seq_runs, untuned_lr)["steps"].max()) if not math.isnan(untuned_lr) else 0)
    notes = []
    if R1_ADA in algs:
        for w in ws:
            lu = st.mean_interval(loss[R1_ADA, w], claims.PP)
            if st.decide(lu[1], lu[2], R1_NEAR_PP, "below") == st.HOLDS:
                continue
            lt = st.mean_interval(_r1_paired(seq_acc, tuned(R1_ADA, w), 100), claims.PP)
            s_w = match(runs, algorithm=R1_ADA, workers=w)["steps"]
            best = ("no LR search at this W" if math.isnan(chosen[R1_ADA, w]) else
                    f"at its best grid LR ({chosen[R1_ADA, w]:g}) {st.fmt_ci(*lt[:3], '+.1f')} pp (n = {lt[3]})")
            notes.append(
                f"W={w}: untuned loses {st.fmt_ci(*lu[:3], '+.1f')} pp; {best}; "
                f"{int(s_w.max()) if len(s_w) else '?'} optimizer steps against the sequential run's {seq_steps}")
    rep.text(
        "The tuned columns answer whether ANY LR of the grid brings a cell near the sequential run at the "
        f"paper's fixed 2 epochs: where even the best LR loses more than {R1_NEAR_PP:g} pp, the loss is the "
        "budget (W workers take W times fewer optimizer steps than one at the same epochs), not the untuned LR."
        + ("\n\n**Where Adasum is not shown 'near' (the analysis behind that verdict):** " + "; ".join(notes) + ". "
           "Where the best LR of the grid does not close the gap either, it is the step budget of the "
           "paper's own protocol (fixed epochs), not the untuned LR: Adasum's combined step is at most the "
           "sum of the W workers' steps (orthogonal deltas) and shrinks toward their average as they align "
           "(arXiv 3), so it cannot always make up W times fewer steps. Whether MNIST's 99.3-99.4% ceiling "
           "hides the same shortfall in the paper's Fig. 6 is not tested here."
           if notes else ""))

    t_lr = {"": [], **{f"W={w}": [] for w in ws}}
    for a in algs:
        key = a.split(" ")[0]
        t_lr[""].append(f"{a}, ours (seed mean) / our seq LR {seq_lr:g}")
        for w in ws:
            lr = chosen[a, w]
            t_lr[f"W={w}"].append("-" if math.isnan(lr) else f"{lr:.4g} ({lr / seq_lr:.3g}x)"
                                  + (" (grid edge)" if on_edge(lr) else ""))
        t_lr[""].append(f"{a}, ours (each seed's choice)")
        for w in ws:
            t_lr[f"W={w}"].append(", ".join("-" if math.isnan(x) else f"{x:g}" for x in chosen_seed[a, w]))
        t_lr[""].append(f"{key}, paper (arXiv 5.4) / its seq LR 0.0328")
        for w in ws:
            tab = paper.R1_TUNED_LR_ARXIV.get(key, {})
            t_lr[f"W={w}"].append(f"{tab[w]:.4g} ({tab[w] / PAPER_SEQ_LR:.3g}x)" if w in tab else "-")
    rep.section("Tuned max LR per cell (chosen on validation): ours beside the paper's")
    rep.table(pd.DataFrame(t_lr))
    rep.text("Paper LRs: arXiv 5.4 table (MNIST, 4/8/16/32 K80 GPUs x 32; MLSys 5.2.3 prints it rounded). "
             "The multiple of each side's own sequential LR is the comparable number. For Sum the LR "
             "multiplies the *summed* gradient, in ours as in the paper; for Adasum it is each worker's "
             "own optimizer LR (the combiner acts on the optimizer deltas).")

    t_grid = {"combiner": [], "W": [], **{f"lr={lr:g}": [] for lr in grid}, "chosen lr": []}
    t_test = {"combiner": [], "W": [], **{f"lr={lr:g}": [] for lr in grid}}
    for a in algs:
        for w in [w for w in ws if searched[a, w]]:
            for t in (t_grid, t_test):
                t["combiner"].append(a)
                t["W"].append(w)
            for lr in grid:
                s = _lr_is(match(all_runs, algorithm=a, workers=w), lr)
                s = s[s["seed"].isin(tseeds)]
                v = {k: x for k, x in val[a, w, lr].items() if k in tseeds}
                t_grid[f"lr={lr:g}"].append(_grid_cell(s, v, lr, chosen[a, w], lambda v: pct(*ci(v)[:3])))
                tv = {k: x for k, x in test[a, w, lr].items() if k in tseeds}
                t_test[f"lr={lr:g}"].append(pct(*ci(tv)[:3]) if tv else "-")
            t_grid["chosen lr"].append(f"{chosen[a, w]:g}" + (" (grid edge)" if on_edge(chosen[a, w]) else ""))
    rep.section(f"The tuned grid: final validation accuracy %, mean [95% CI] over seeds {', '.join(map(str, tseeds))}")
    rep.table(pd.DataFrame(t_grid), "bold = the cell's chosen LR (best seed-mean validation accuracy)")
    rep.section("For the record: final test accuracy % of every grid point (same seeds; not used for any choice)")
    rep.table(pd.DataFrame(t_test))

    if abl_res is not None and R1_ADA in algs:
        _r1_apply_ablation(rep, abl_res, {w: un_inf[R1_ADA, w] for w in ws}, seq_acc, method)

    cfg = res.config(res.run_ids()[0]) if len(res) else {}
    vfrac = (cfg.get("metrics") or {}).get("validation_fraction", "?")
    rep.section("Setup")
    rep.text(
        "LeNet-5 (Horovod's PyTorch MNIST net, 21,840 parameters) on Fashion-MNIST, W logical "
        f"workers x 32 samples, momentum SGD (0.5), **{cfg.get('epochs', '?')} epochs** (the paper's), "
        "linear warm-up over 17% of the steps from 0 to the max LR, then linear decay to 0 (the paper's "
        f"aggressive sequential schedule, arXiv 5.4). A validation split of {vfrac} of the training set "
        "is held back (the runs train on the rest); every LR choice is made on it; test accuracy is on "
        "the 10k test images after the last step.\n\n"
        "- **Sum** = `sync_sgd` with `combine: sum`, no LR scaling (the W gradients are added, so its step "
        "is W times the averaged step). **Adasum (delta)** = `adasum` with `apply: delta`: each worker "
        "takes its own momentum-SGD step from the shared weights and Adasum combines the W optimizer "
        "deltas, as Horovod's DistributedOptimizer(op=hvd.Adasum) does (arXiv 4.1: 'the Adasum operation "
        "should be performed after the optimizer update'). At W = 1 both are sequential SGD.\n"
        f"- **Untuned** = the sequential max LR found on our data in step 1 ({seq_lr:g}), for both "
        f"combiners; seeds {', '.join(map(str, seeds))}. {paper.R1_UNTUNED_LR_NOTE}\n"
        f"- **Tuned** = per (combiner, W), the LR of the grid {', '.join(f'{g:g}' for g in grid)} "
        f"(the sequential LR x 2^k) with the best mean final **validation** accuracy over seeds "
        f"{', '.join(map(str, tseeds))} (ties: the smaller LR); its **test** accuracy plays no part in the "
        "choice. A chosen LR on the grid's edge is marked.\n"
        f"- Every accuracy is the mean over seeds with its {st.METHOD}. A verdict is HOLDS / DOES NOT "
        "HOLD only when the interval is wholly on one side of its threshold (a claim over several cells: "
        "HOLDS when every cell holds, DOES NOT HOLD when Holm over the cells rejects one); a discrete "
        "choice (the tuned LR) goes to the exact sign test. Divergence: " + DIVERGED_RULE + div_rule + ".\n"
        "- Paper: MNIST, target 99.3% (the sequential schedule barely reaches it); Fig. 6's accuracies "
        "are only in the figure, so the paper's side is its stated claims (above) and the LR table.")

    # --- CSV: every run of the four files ------------------------------------------------------
    cols = ["algorithm", "workers", "lr", "seed", "status", "final_val_accuracy",
            "final_test_accuracy", "final_train_loss", "steps", "wall_s", "run_id"]
    frames = []
    for name, r in parts:
        f = r.runs[cols].copy()
        f.insert(0, "part", name)
        frames.append(f)
    rep.data(sort(pd.concat(frames, ignore_index=True), "part", "algorithm", "workers", "lr", "seed"))
    rep.seeds = n_seeds

    curves: dict[tuple[str, int], list[pd.DataFrame]] = {}
    cs = [seq_res.curve(r) for r in _lr_is(seq_runs, untuned_lr)["run_id"]] if not math.isnan(untuned_lr) else []
    cs += [ref_res.curve(r) for r in ref_runs["run_id"]] if ref_res is not None else []
    if cs:
        curves[R1_SEQ, 1] = cs
    for a in algs:
        for w in ws:
            cs = [res.curve(r) for r in match(runs, algorithm=a, workers=w)["run_id"]]
            if cs:
                curves[a, w] = cs
    rep.figure(_r1_figure(seq_runs, seq_lr, cells, paper.R1_TUNED_LR_ARXIV, seq_m[0], curves))
    return rep


# ============================================================================ R2
def seq_error(h5: str) -> Report:
    """R2: relative error of Adasum / sync SGD against the exact-Hessian emulation."""
    res = load(h5)
    rep = Report("adasum-seq-error", "R2: error against the exact-Hessian sequential emulation "
                 "(LeNet-5, 64 workers)", sources=[paper.R2_SOURCE])
    rep.inputs = [h5, "experiments/seq_emulation.json"]
    rep.runtime = _runtime_from_results(res)
    rep.seeds = int(res.runs["seed"].nunique()) if len(res) else None
    rid = res.run_ids()[0]
    err = res.metric(rid, "seq_error")
    if err is None:
        raise SystemExit(f"{h5}: run {rid} has no metrics/seq_error")
    orth = res.metric(rid, "orthogonality")
    if orth is not None:
        m = {int(s): v for s, v in zip(orth["step"], orth["mean"])}
        err["orthogonality_mean"] = [m.get(int(s), math.nan) for s in err["step"]]
    rep.data(err)
    cfg = res.config(rid)
    means = {k: float(np.nanmean(err[k])) for k in err.columns if k != "step"}
    mins = {k: float(np.nanmin(err[k])) for k in err.columns if k != "step"}
    n = len(err)
    below_sum = int(np.sum(err["adasum_vs_emu"].to_numpy() < err["sum_vs_emu"].to_numpy()))
    below_avg = int(np.sum(err["adasum_vs_emu"].to_numpy() < err["average_vs_emu"].to_numpy()))
    holds = means["adasum_vs_emu"] < means["sum_vs_emu"] and means["adasum_vs_emu"] < means["average_vs_emu"]
    part = means["adasum_vs_emu"] < means["sum_vs_emu"] or means["adasum_vs_emu"] < means["average_vs_emu"]
    # Seeds: per seed, the mean over logged steps of (Adasum - sum) and
    # (Adasum - average) errors, and Adasum's smallest error; decided by 95% t-intervals.
    per = []
    for sid in res.run_ids():
        e = res.metric(sid, "seq_error")
        if e is not None and len(e):
            per.append((float(np.nanmean(e["adasum_vs_emu"] - e["sum_vs_emu"])),
                        float(np.nanmean(e["adasum_vs_emu"] - e["average_vs_emu"])),
                        float(np.nanmin(e["adasum_vs_emu"]))))
    if len(per) >= 2:
        ds, da, mn = (st.t_interval([p_[i] for p_ in per]) for i in range(3))
        v1 = st.combine([st.decide(ds[1], ds[2], 0.0, "below"), st.decide(da[1], da[2], 0.0, "below")])
        rep.claim_verdict(
            "Adasum's error against the exact-Hessian sequential emulation is below synchronous "
            "SGD's on average (arXiv 3.7, Fig. 2)", v1,
            f"{len(per)} seeds ({st.METHOD}): mean over logged steps of Adasum - sum "
            f"{st.fmt_ci(*ds[:3], '+.3f')}, Adasum - average {st.fmt_ci(*da[:3], '+.3f')} (relative "
            f"error; both must be below 0). Seed {res.runs['seed'].iloc[0]}: Adasum "
            f"{means['adasum_vs_emu']:.3g}, sum {means['sum_vs_emu']:.3g}, average {means['average_vs_emu']:.3g}.")
        rep.claim_verdict(
            "Adasum's error comes close to zero at some steps (arXiv 3.7)",
            st.decide(mn[1], mn[2], 0.1, "below"),
            f"smallest Adasum error per run {st.fmt_ci(*mn[:3], '.3f')} over {len(per)} seeds; "
            "'close to zero' is read as < 0.1 (see 'Why' below).")
    else:
        rep.claim("Adasum's error against the exact-Hessian sequential emulation is below synchronous "
                "SGD's on average (arXiv 3.7, Fig. 2)", True if holds else (None if part else False),
                f"mean relative error over {n} logged steps: Adasum {means['adasum_vs_emu']:.3g}, "
                f"sync SGD sum {means['sum_vs_emu']:.3g}, sync SGD average {means['average_vs_emu']:.3g}; "
                f"Adasum below sum at {below_sum}/{n} steps, below average at {below_avg}/{n}.")
        rep.claim("Adasum's error comes close to zero at some steps (arXiv 3.7)",
                mins["adasum_vs_emu"] < 0.1,
                f"smallest Adasum error {mins['adasum_vs_emu']:.3g} (sum: {mins['sum_vs_emu']:.3g}, "
                f"average: {mins['average_vs_emu']:.3g}); 'close to zero' is read as < 0.1.")
    rep.section("Setup")
    rep.text(f"LeNet-5 on Fashion-MNIST, W = {cfg['workers']} logical workers x {cfg['batch_size']}, "
             f"Adasum training with momentum SGD, lr {cfg['lr']}, {cfg['steps']} steps. Every "
             f"{cfg['metrics']['seq_emulation']['every']} steps, from the current model w0 and the "
             "64 workers' batches, the workbench computes the exact-Hessian sequential emulation "
             "w_emu = w0 - a sum_k h_k, h_k = g_k - a H_k sum_{j<k} h_j (DESIGN.md section 8; "
             "arXiv 3.7 Eq. 2), and the models one combined step of Adasum, sync SGD (sum) and "
             "sync SGD (average) would produce; error = ||w - w_emu|| / ||w_emu - w0||. "
             "*_vs_seq columns use true sequential SGD over the same batches as the reference. "
             "The paper's 'synchronous SGD' is the sum (same LR, the emulation's first-order "
             "term); the average is shown too.")
    rep.section("Relative error per logged step (ours); the paper gives Fig. 2 only as a plot")
    show = err[[k for k in ["step", "adasum_vs_emu", "sum_vs_emu", "average_vs_emu", "seq_vs_emu",
                            "adasum_vs_seq", "sum_vs_seq", "orthogonality_mean"] if k in err]].copy()
    show["step"] = show["step"].astype(np.int64)
    rep.table(show, floatfmt=".3g")
    rep.table(pd.DataFrame([{"series": k, "mean": means[k], "min": mins[k]} for k in means]),
              "Mean and minimum over the logged steps", floatfmt=".3g")
    # A claim that does not hold gets the rows that explain it: why "close to zero at some
    # steps" does not hold here.
    rep.section("Why Adasum's error does not come near zero here")
    o = err["orthogonality_mean"].to_numpy(dtype=float) if "orthogonality_mean" in err else None
    a_ = err["adasum_vs_emu"].to_numpy(dtype=float)
    lines = []
    if o is not None and np.isfinite(o).sum() >= 3:
        ok = np.isfinite(o) & np.isfinite(a_)
        corr = float(np.corrcoef(o[ok], a_[ok])[0, 1])
        i = int(np.nanargmin(a_))
        lines.append(
            f"- Adasum equals the sum of the gradients only where they are orthogonal (arXiv 3.6: "
            f"orthogonality 1; 1/W = parallel). Over our logged steps the mean per-layer "
            f"orthogonality is {np.nanmin(o):.2f}-{np.nanmax(o):.2f}, and Adasum's error falls as it "
            f"rises (Pearson r = {corr:.2f} over {int(ok.sum())} steps; its smallest error "
            f"{a_[i]:.3g} is at step {int(err['step'].iloc[i])}, orthogonality {o[i]:.2f}).")
    if "seq_vs_emu" in err:
        sv = err["seq_vs_emu"].to_numpy(dtype=float)
        lines.append(
            f"- The emulation's first-order Hessian expansion (arXiv Eq. 2) is itself far from "
            f"true sequential SGD over the same batches at these steps: seq_vs_emu "
            f"{np.nanmin(sv):.3g}-{np.nanmax(sv):.3g}. An error near zero needs a small "
            "a ||H|| over the emulated distance, which holds late in training, when ||g|| has decayed.")
    lines.append(
        f"- The paper's Fig. 2 run trains to 99.3% test accuracy on MNIST and plots every step; ours "
        f"logs {n} steps among the first {cfg['steps']} of training (DESIGN.md R2 scale), where the "
        "gradients are still large and far from orthogonal. The claim is therefore not tested at the "
        "steps where the paper sees it; a run continued to convergence, logging the error late in "
        "training, is what would test it.")
    rep.text("\n".join(lines))
    rep.figure(figures.seq_error(err))
    return rep


# ============================================================================ R3
def orthogonality(h5: str) -> Report:
    """R3: per-layer orthogonality over training (and gradient diversity)."""
    res = load(h5)
    rep = Report("adasum-orthogonality", "R3: per-layer gradient orthogonality during training "
                 "(LeNet-5, 16 workers)", sources=[paper.R3_SOURCE])
    rep.inputs = [h5, "experiments/orthogonality.json"]
    rep.runtime = _runtime_from_results(res)
    rep.seeds = int(res.runs["seed"].nunique()) if len(res) else None
    rid = res.run_ids()[0]
    orth = res.metric(rid, "orthogonality")
    div = res.metric(rid, "diversity")
    cur = res.curve(rid)
    cfg = res.config(rid)
    W = int(cfg["workers"])
    steps = orth["step"].to_numpy()
    total = int(res.runs["steps"].iloc[0])
    tensors = [c for c in orth.columns if c != "step"]
    # Trend per tensor: mean over the first and the last 10% of logged points (sampling
    # noise of single steps is large at 16 workers, so windows, not single points).
    k = max(1, len(steps) // 10)
    rows = []
    for t in tensors:
        v = orth[t].to_numpy()
        rows.append({"tensor": t, "first 10%": float(np.mean(v[:k])),
                     "at 25%": float(np.interp(0.25 * total, steps, v)),
                     "at 50%": float(np.interp(0.50 * total, steps, v)),
                     "at 75%": float(np.interp(0.75 * total, steps, v)),
                     "last 10%": float(np.mean(v[-k:])), "max": float(np.max(v)),
                     "rises": bool(np.mean(v[-k:]) > np.mean(v[:k]))})
    trend = pd.DataFrame(rows)
    mean_first, mean_last = rows[-1]["first 10%"], rows[-1]["last 10%"]
    n_rise = sum(1 for r in rows[:-1] if r["rises"])
    holds = mean_last > mean_first and n_rise >= (len(rows) - 1) / 2
    # Seeds: the rise of the mean over tensors, last 10% minus first 10% of the
    # logged steps, per seed; HOLDS when its 95% t-interval is above 0.
    rises = []
    for sid in res.run_ids():
        om = res.metric(sid, "orthogonality")
        if om is not None and "mean" in om:
            v = om["mean"].to_numpy(dtype=float)
            kk = max(1, len(v) // 10)
            rises.append(float(np.mean(v[-kk:]) - np.mean(v[:kk])))
    if len(rises) >= 2:
        m, lo, hi, nn = st.mean_interval(rises, (-1.0, 1.0))  # a difference of two values in [0, 1]
        rep.claim_verdict(
            "Orthogonality rises toward 1 as training proceeds (gradients start parallel, become "
            "orthogonal), layers at different rates (arXiv 3.6, Fig. 1; MLSys 5.1.3, Fig. 2)",
            st.decide(lo, hi, 0.0, "above"),
            f"rise of the mean orthogonality over tensors (last 10% minus first 10% of the logged "
            f"steps) {st.fmt_ci(m, lo, hi, '+.3f')} over {nn} seeds ({st.METHOD}; width "
            f"{hi - lo:.3f}). Seed {res.runs['seed'].iloc[0]}: {mean_first:.3f} -> {mean_last:.3f} "
            f"(1/W = {1 / W:.3f} = parallel, 1 = orthogonal); {n_rise} of {len(rows) - 1} tensors rise.")
    else:
        rep.claim("Orthogonality rises toward 1 as training proceeds (gradients start parallel, "
                  "become orthogonal), layers at different rates (arXiv 3.6, Fig. 1; MLSys 5.1.3, Fig. 2)",
                  True if holds else (None if mean_last > mean_first else False),
                  f"mean over tensors: {mean_first:.3f} in the first 10% of logged steps -> "
                  f"{mean_last:.3f} in the last 10% (1/W = {1 / W:.3f} = parallel, 1 = orthogonal); "
                  f"{n_rise} of {len(rows) - 1} tensors rise; per-tensor final values range "
                  f"{min(r['last 10%'] for r in rows[:-1]):.3f}-{max(r['last 10%'] for r in rows[:-1]):.3f}.")
    sched = cfg.get("schedule", {})
    boundary_note = ""
    if sched.get("name") == "warmup_linear":
        b = float(sched.get("warmup", 0.17)) * total
        win = max(2 * (steps[1] - steps[0]) if len(steps) > 1 else 1, 0.05 * total)
        v = orth["mean"].to_numpy()
        before = v[(steps >= b - win) & (steps < b)]
        after = v[(steps >= b) & (steps < b + win)]
        boundary_note = (f"Schedule boundary: the paper sees drops exactly at step-schedule boundaries "
                 f"(arXiv 3.6). This run's schedule is continuous (linear warmup to step {b:.0f}, "
                 f"then linear decay), so that claim is not tested here; for the record, the mean "
                 f"orthogonality in the {win:.0f} steps before the warmup end is "
                 f"{np.mean(before) if len(before) else math.nan:.3f} and after it "
                 f"{np.mean(after) if len(after) else math.nan:.3f}.")
    data = pd.DataFrame({"step": orth["step"]})
    for t in tensors:
        data[f"orth_{t}"] = orth[t]
    if div is not None and len(div) == len(orth):
        for t in div.columns:
            if t != "step":
                data[f"div_{t}"] = div[t].to_numpy()
    lr_at = np.interp(steps, cur["step"].to_numpy(dtype=float), cur["lr"].to_numpy(dtype=float))
    data["lr"] = lr_at
    rep.data(data)
    rep.section("Setup")
    rep.text(f"LeNet-5 on Fashion-MNIST, W = {W} logical workers x {cfg['batch_size']}, Adasum with "
             f"momentum SGD, max LR {cfg['lr']}, {sched.get('name')} schedule, {total} steps "
             f"({cfg['epochs']} epochs); every {cfg['metrics']['orthogonality']['every']} steps "
             "the workers' fresh gradients give, per tensor, ||Adasum(g_1..g_W)||^2 / sum_i ||g_i||^2 "
             "(1 = orthogonal, 1/W = parallel with equal norms), the paper's measure (arXiv 3.6). "
             "The paper measured ResNet-50 and BERT-Large at 64 GPUs; the figure's values are "
             "not in the text, so the comparison is the trend.")
    rep.section("Orthogonality per tensor over training (ours)")
    rep.table(trend, floatfmt={"first 10%": ".3f", "at 25%": ".3f", "at 50%": ".3f",
                               "at 75%": ".3f", "last 10%": ".3f", "max": ".3f"})
    if boundary_note:
        rep.text("\n" + boundary_note)
    rep.figure(figures.orthogonality(orth, cur, W, div))
    return rep


# ============================================================================ R4
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s*\|(.*)\|\s*([0-9.]+)\s*$")


def parse_bench_collectives(text: str) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """Parse bench/bench_collectives.cpp's part-1 table and RESULT line."""
    rows, result, header = [], {}, []
    part1 = True
    for line in text.splitlines():
        if line.startswith("# in-process"):
            part1 = False
        if line.startswith("#") and part1:
            header.append(line)
        if line.startswith("RESULT"):
            result = dict(kv.split("=", 1) for kv in line.split()[1:])
        m = _ROW.match(line)
        if part1 and m:
            cells = [c.split() for c in m.group(3).split("|")]
            rows.append({"bytes": int(m.group(1)), "count": int(m.group(2)),
                         "mpi_us": float(cells[0][0]), "wb_sum_us": float(cells[1][0]),
                         "wb_adasum_us": float(cells[2][0]),
                         "mpi_busbw_GBs": float(cells[0][2]), "adasum_busbw_GBs": float(cells[2][2]),
                         "wrong": int(cells[0][3]) + int(cells[1][3]) + int(cells[2][3]),
                         "adasum_over_mpi": float(m.group(4))})
    f = pd.DataFrame(rows)
    if len(f):
        f["sum_over_mpi"] = f["wb_sum_us"].to_numpy() / f["mpi_us"].to_numpy()
    return f, result, header


def latency(bench_txt: str, elapsed_s: float | None = None) -> Report:
    """R4: Adasum (RVHDD) latency vs MPI_Allreduce per message size."""
    with open(bench_txt) as fh:
        text = fh.read()
    tab, result, header = parse_bench_collectives(text)
    rep = Report("adasum-latency", "R4: Adasum collective latency vs MPI_Allreduce",
                 sources=[paper.R4_SOURCE])
    rep.inputs = [bench_txt, "build/bench_collectives"]
    if elapsed_s is not None:
        rep.runtime = {"benchmark": f"{elapsed_s / 60:.1f} min (mpirun -n 2)"}
    if not len(tab):
        raise SystemExit(f"{bench_txt}: no benchmark rows found")
    rep.data(tab)
    r = tab["adasum_over_mpi"].to_numpy()
    ok = r <= 1 + paper.R4_MAX_OVERHEAD
    big = tab["bytes"].to_numpy() >= 1 << 20
    wrong = int(np.sum(tab["wrong"]))
    holds = bool(np.all(ok)) and wrong == 0
    rep.claim("Adasum's overhead over the baseline allreduce is below 45% (and it is sometimes "
              "faster) (MLSys 5.1.1, Fig. 1)",
              True if holds else (None if bool(np.all(ok[big])) else False),
              f"Adasum / MPI_Allreduce ranges {r.min():.2f}-{r.max():.2f} over "
              f"{tab['bytes'].iloc[0]} B-{tab['bytes'].iloc[-1]} B; <= 1.45 at {int(ok.sum())}/{len(r)} sizes "
              f"(all sizes >= 1 MB: {'yes' if bool(np.all(ok[big])) else 'no'}, max there "
              f"{r[big].max() if big.any() else math.nan:.2f}); faster than MPI at "
              f"{int(np.sum(r < 1))} sizes; wrong elements {wrong}.")
    rep.section("Setup")
    rep.text("`mpirun -n 2 build/bench_collectives`: 2 ranks on one 2-core machine (shared "
             "memory, MPICH), one logical worker per rank, fp32 buffers fused from 64 tensors of "
             "uneven size as in arXiv 4.2.3; time = best of the interleaved repetitions, slowest "
             "rank. The baseline is MPICH's MPI_Allreduce(MPI_SUM); the paper's is NCCL on 64 "
             "V100s over InfiniBand, so only the ratio is comparable, and with 2 ranks the "
             "recursive vector-halving distance-doubling has a single level. Small messages "
             "are latency-bound: Adasum's extra allreduce of the dot products (Algorithm 1 "
             "line 17) costs a round trip that a one-pass sum does not pay.")
    # Measurement quality: MPICH busy-polls, so other processes on the cores turn
    # microseconds into scheduler time slices. Flag sizes slower than a 4x larger size.
    t = tab["mpi_us"].to_numpy(dtype=float)
    disturbed = [int(tab["bytes"].iloc[i]) for i in range(len(t) - 1) if np.any(t[i] > 2 * t[i + 1:])]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    if disturbed:
        rep.text(f"**Measurement disturbed**: MPI_Allreduce took longer at {len(disturbed)} sizes "
                 f"({', '.join(str(b) for b in disturbed)} B) than at a larger size, the signature of "
                 f"other processes competing for the 2 cores (1-min load average {load:.1f} when the "
                 "report was written). Re-run `make -f Makefile.experiments adasum-latency` on an "
                 "idle machine before drawing conclusions from those rows; the verdict above uses "
                 "all rows as measured.")
    rep.section("Time per op (us) and ratios per size (ours)")
    show = tab[["bytes", "mpi_us", "wb_sum_us", "wb_adasum_us", "sum_over_mpi",
                "adasum_over_mpi", "wrong"]]
    rep.table(show, floatfmt={"mpi_us": ".1f", "wb_sum_us": ".1f", "wb_adasum_us": ".1f",
                              "sum_over_mpi": ".3f", "adasum_over_mpi": ".3f"})
    rep.text(f"Paper: overhead < {paper.R4_MAX_OVERHEAD:.0%}, up to {paper.R4_BEST_SPEEDUP:.0%} "
             "faster, sizes up to 256 MB (ratio band 0.85-1.45).  ")
    # A claim that fails somewhere says why and where it stops failing (small messages).
    rep.section("Small messages: the extra latency-bound round trip, and the break-even size")
    b_ = tab["bytes"].to_numpy()
    extra = tab["wb_adasum_us"].to_numpy(dtype=float) - tab["wb_sum_us"].to_numpy(dtype=float)
    small = b_ <= 16384
    lat = float(t[0]) if len(t) else math.nan  # one latency-bound MPI_Allreduce (smallest size)
    within = [int(b_[i]) for i in range(len(r)) if np.all(r[i:] <= 1 + paper.R4_MAX_OVERHEAD)]
    faster = [int(b_[i]) for i in range(len(r)) if r[i] <= 1.0]
    rep.text(
        "Adasum needs the dot products and norms of the two halves before it can combine them "
        "(arXiv 4.2.3; Algorithm 1's allreduce of the per-tensor scalars), so on top of the "
        "sum's data movement it pays one more small, latency-bound allreduce per level. At the "
        f"smallest sizes (<= 16 KB) Adasum's extra time over our own sum is "
        f"{np.median(extra[small]) if small.any() else math.nan:.1f} us (median; "
        f"{', '.join(f'{x:.1f}' for x in extra[small])} us), about one latency-bound MPI_Allreduce "
        f"of {lat:.1f} us at {int(b_[0]) if len(b_) else 0} B: the ratio there is latency over "
        "latency, not a bandwidth overhead. Break-even: the overhead stays below "
        f"{paper.R4_MAX_OVERHEAD:.0%} for every size from "
        f"**{(str(within[0]) + ' B') if within else 'none measured'}** up; Adasum is first no "
        f"slower than MPI_Allreduce at **{(str(faster[0]) + ' B') if faster else 'no measured size'}**"
        + (f" (and at {len(faster)} sizes in all)" if faster else "") + ". One benchmark run "
        "(best of the repetitions per size), not seeds: these sizes carry no interval, and "
        "the rows flagged as disturbed above can move them.")
    if result:
        rep.text("Benchmark RESULT line: `RESULT " + " ".join(f"{k}={v}" for k, v in result.items())
                 + "`")
    rep.figure(figures.latency(tab, paper.R4_MAX_OVERHEAD))
    return rep


# ============================================================================ R5
def _toy_table(res: Results) -> pd.DataFrame:
    """All toy runs (of every file loaded); converged_step only for completed runs that
    converged, NaN otherwise (a diverged run carries the step it stopped at in
    converged_step, so status must be checked too)."""
    r = res.runs
    conv = (r["status"] == "completed") & (r["converged_step"] >= 0)
    t = r[["model", "x_max", "algorithm", "workers", "lr", "seed", "status"]].copy()
    t["converged"] = conv.to_numpy()
    t["converged_step"] = r["converged_step"].astype(float).where(conv)
    return t


def toy(paths: Sequence[str]) -> Report:
    """R5: steps to converge vs LR, Average vs Adasum; best-LR scaling with W."""
    res = load(paths)
    runs = _toy_table(res)
    rep = Report("adasum-toy", "R5: Horovod's square/cubic toy, steps to converge, Average vs "
                 "Adasum", sources=[paper.R5_SOURCE])
    rep.inputs = list(paths) + ["experiments/adasum_toy.json", "experiments/adasum_toy_cubic.json"]
    tot = sum(float(np.nansum(g["wall_s"].to_numpy(dtype=float)))
              for _, g in res.runs.groupby("file", sort=False))
    # The runs' compute is {tot} s; the rest of the target's wall time is the crash-safe
    # per-run HDF5 commit, which the results file does not record.
    rep.seeds = int(res.runs["seed"].nunique()) if len(res) else None
    rep.runtime = {"experiment": f"{len(res)} runs (mpirun -n "
                                 f"{res.attrs.get('mpi_ranks', '?')}), {tot:.0f} s of compute "
                                 "(sum of run wall times)"}
    med = median_over(runs, ["model", "x_max", "algorithm", "workers", "lr"], "converged_step")
    rep.data(med)
    panels = [(m, x) for m in _uniq(med["model"]) for x in sorted(_uniq(med["x_max"]))]
    ws = sorted(_uniq(med["workers"]))
    best = best_per_group(sort(med, "model", "x_max", "algorithm", "workers", "lr"),
                          ["model", "x_max", "algorithm", "workers"], "converged_step",
                          maximize=False)

    def get(fr: pd.DataFrame, **kw: Any) -> dict[str, Any] | None:
        s = match(fr, **kw)
        return records(s.iloc[:1])[0] if len(s) else None

    rows, ratio_rows = [], []
    reductions = []
    for model, xm in panels:
        single = get(best, model=model, x_max=xm, algorithm="Adasum", workers=1)
        lr1 = single["lr"] if single and not math.isnan(single["converged_step"]) else math.nan
        for w in ws:
            a = get(best, model=model, x_max=xm, algorithm="Average", workers=w)
            d = get(best, model=model, x_max=xm, algorithm="Adasum", workers=w)
            if not a or not d:
                continue
            sa, sd = a["converged_step"], d["converged_step"]
            red = 1 - sd / sa if not (math.isnan(sa) or math.isnan(sd)) else math.nan
            if w > 1 and not math.isnan(red):
                reductions.append((model, xm, w, red, sa, sd))
            rows.append({"model": model, "x_max": xm, "W": w,
                         "Average: steps": sa, "Average: best LR": a["lr"] if not math.isnan(sa) else math.nan,
                         "Adasum: steps": sd, "Adasum: best LR": d["lr"] if not math.isnan(sd) else math.nan,
                         "Adasum fewer steps": f"{100 * red:.0f}%" if not math.isnan(red) else "-",
                         "LR ratio Adasum/Average": (d["lr"] / a["lr"]) if not (math.isnan(sa) or math.isnan(sd)) else math.nan,
                         "Adasum LR / single-worker LR": d["lr"] / lr1 if not math.isnan(sd) else math.nan,
                         "Average LR / single-worker LR": a["lr"] / lr1 if not math.isnan(sa) else math.nan})
            for alg, rr, s in (("Average", a, sa), ("Adasum", d, sd)):
                ratio_rows.append({"model": model, "x_max": xm, "algorithm": alg, "workers": w,
                                   "lr_over_single": rr["lr"] / lr1 if not math.isnan(s) else math.nan})
    table = pd.DataFrame(rows)
    ratio = pd.DataFrame(ratio_rows)

    # claim 1: fewer steps at the best LR (every multi-worker cell), up to 50% (square)
    n_fewer = sum(1 for r in reductions if r[3] > 0)
    max_sq = max([r[3] for r in reductions if r[0] == "quadratic"], default=math.nan)
    max_cu = max([r[3] for r in reductions if r[0] == "cubic"], default=math.nan)
    holds = n_fewer == len(reductions) and len(reductions) > 0
    rep.claim("At its best LR Adasum converges in fewer steps than Average, up to 50% fewer on the "
              "square problem (Horovod guide)",
              True if holds else (None if n_fewer > len(reductions) / 2 else False),
              f"fewer steps in {n_fewer}/{len(reductions)} (model, x_max, W>1) cells; largest "
              f"reduction {100 * max_sq:.0f}% (square), {100 * max_cu:.0f}% (cubic); median steps "
              f"over {rep.seeds} seeds at each cell's best LR.")
    # claim 2: best Adasum LR ~2-2.5x single worker, not W x. On our sqrt(2) grid the
    # nearest values to 2-2.5 are 2 and 2.83; one grid step of slack either side is
    # [2/sqrt2, 2.5*sqrt2] = [1.41, 3.54]. Sub-linear: ratio < W.
    lo, hi = paper.R5_LR_FACTOR[0] / math.sqrt(2), paper.R5_LR_FACTOR[1] * math.sqrt(2)
    ada = [r for r in ratio_rows if r["algorithm"] == "Adasum" and r["workers"] >= 4
           and not math.isnan(r["lr_over_single"])]
    in_band = sum(1 for r in ada if lo <= r["lr_over_single"] <= hi)
    sublinear = sum(1 for r in ada if r["lr_over_single"] < r["workers"])
    vals = sorted({round(r["lr_over_single"], 2) for r in ada})
    holds = in_band == len(ada) and len(ada) > 0
    rep.claim("Adasum's best LR is about 2-2.5x the single-worker best LR, not W x (Horovod guide)",
              True if holds else (None if sublinear == len(ada) and len(ada) else False),
              f"Adasum best LR / single-worker best LR at W >= 4: values {vals}; within "
              f"[{lo:.2f}, {hi:.2f}] (2-2.5 with one sqrt(2) grid step of slack) in {in_band}/{len(ada)} "
              f"cells; below W (sub-linear) in {sublinear}/{len(ada)}.")

    # Seeds: both claims again, per seed, decided by 95% t-intervals over seeds.
    seeds = sorted(_uniq(runs["seed"]))
    if len(seeds) >= 2:
        def best_lr_steps(model, xm, alg, w, sd):
            """(best LR, steps) of one seed: the fewest steps to converge (ties: smaller LR)."""
            s_ = match(runs, model=model, x_max=xm, algorithm=alg, workers=w, seed=sd)
            s_ = s_[s_["converged_step"].notna()]
            if not len(s_):
                return math.nan, math.nan
            s_ = s_.sort_values(["converged_step", "lr"])
            return float(s_["lr"].iloc[0]), float(s_["converged_step"].iloc[0])
        reductions, ratios = {}, {}
        arms_steps: dict[str, list[float]] = {"Average": [], "Adasum": []}
        arms_lr: dict[str, list[float]] = {"Adasum, W >= 4": [], "single worker": []}
        for model, xm in panels:
            for w in ws:
                if w == 1:
                    continue
                red = []
                for sd in seeds:
                    _, sa = best_lr_steps(model, xm, "Average", w, sd)
                    lra, sdd = best_lr_steps(model, xm, "Adasum", w, sd)
                    lr1, _ = best_lr_steps(model, xm, "Adasum", 1, sd)
                    # a combiner that never converges counts as 300 steps (the budget)
                    sa = 300.0 if math.isnan(sa) else sa
                    sdd = 300.0 if math.isnan(sdd) else sdd
                    red.append(1 - sdd / sa)
                    arms_steps["Average"].append(sa)
                    arms_steps["Adasum"].append(sdd)
                    if w >= 4 and not (math.isnan(lra) or math.isnan(lr1)):
                        ratios.setdefault((model, f"x_max {xm:g}", f"W {w}"), []).append(lra / lr1)
                        arms_lr["Adasum, W >= 4"].append(lra)
                        arms_lr["single worker"].append(lr1)
                reductions[(model, f"x_max {xm:g}", f"W {w}")] = red
        rep._claims.clear()
        v1, ev1 = claims.r5_fewer_steps(reductions)
        rep.claim_verdict("At its best LR Adasum converges in fewer steps than Average, up to 50% fewer on "
                          "the square problem (Horovod guide)", v1,
                          f"step reduction 1 - Adasum/Average at each seed's best LRs, {len(seeds)} seeds "
                          f"({st.METHOD}; not converged = 300 steps), every (model, x_max, W > 1) cell "
                          "must be above 0, DOES NOT HOLD when Holm over the cells rejects one: " + ev1 + ".",
                          arms=arms_steps)
        v2, ev2 = claims.r5_lr_ratio(ratios)
        rep.claim_verdict("Adasum's best LR is about 2-2.5x the single-worker best LR, not W x (Horovod "
                          "guide)", v2,
                          "Adasum best LR / single-worker best LR per seed at W >= 4 (a ratio of grid points: "
                          f"a discrete outcome, decided per cell by an exact test over its {len(seeds)} "
                          "seeds, Holm over the cells): " + ev2 + ".", arms=arms_lr)

    rep.section("Setup")
    rep.text("Horovod's toy (models/toy_poly.cpp): recover polynomial coefficients from noise-free "
             "samples x ~ U[-x_max, x_max], one sample per worker per step, plain SGD, converged = "
             "every component of the combined gradient (Adasum's or the average's, before the LR; "
             "algorithms/adasum.cpp sets update_max_abs from it) below 1e-4 for two consecutive steps (budget "
             "300 steps). W = 1 is the single-worker reference (Average and Adasum coincide). For "
             f"each (model, x_max, combiner, W, LR) the median over {rep.seeds} seeds of the steps to "
             "converge (a seed that did not converge or diverged counts as infinitely slow); the "
             "best LR of a cell is the one with the fewest median steps (ties: the smaller LR). "
             "LR grid 0.04 x sqrt(2)^k, k = 0..9. The claims below the tables are decided per seed "
             "(each seed's own best LRs), not on these medians.")
    rep.section("Best LR and steps per cell (ours)")
    rep.table(table, floatfmt={"x_max": "g", "Average: steps": ".0f", "Adasum: steps": ".0f",
                               "Average: best LR": ".3g", "Adasum: best LR": ".3g",
                               "LR ratio Adasum/Average": ".2f",
                               "Adasum LR / single-worker LR": ".2f",
                               "Average LR / single-worker LR": ".2f"})
    rep.text(f"Paper (Horovod guide, text): Adasum needs up to {paper.R5_MAX_STEP_REDUCTION:.0%} "
             f"fewer steps on the square problem; best Adasum LR {paper.R5_LR_FACTOR[0]:g}-"
             f"{paper.R5_LR_FACTOR[1]:g}x the single-worker LR. The guide gives no per-cell numbers.")
    rep.section("Median steps to converge vs LR (ours)")
    for model, xm in panels:
        piv: dict[str, list] = {"combiner, W": []}
        lrs = sorted(_uniq(med["lr"]))
        for lr in lrs:
            piv[f"{lr:g}"] = []
        for alg in ("Average", "Adasum"):
            for w in ws:
                if alg == "Average" and w == 1:
                    continue
                piv["combiner, W"].append(f"{alg}, {w}")
                for lr in lrs:
                    s = _lr_is(match(med, model=model, x_max=xm, algorithm=alg, workers=w), lr)
                    v = first(s, "converged_step")
                    piv[f"{lr:g}"].append("-" if math.isnan(v) else f"{v:.0f}")
        rep.table(pd.DataFrame(piv), f"{model}, x_max = {xm:g} (columns: LR; '-' = not converged in most seeds)")
    rep.figure(figures.toy_steps_vs_lr(med, panels, ws, ratio))
    return rep


# ============================================================================ R6
#: the split every LR is chosen on (never the test set; spec metrics.validation_fraction)
R6_SELECT_ON = "final_val_accuracy"
R6_DIVERGED_ACC = None  # diverged runs are left out (DIVERGED_RULE)
#: a priori threshold of the R6 check: Adasum (delta) minus Average, percentage points of test accuracy
R6_THRESHOLD_PP = 0.0
R6_AVG, R6_ADA = "Average", "Adasum (delta)"


def _r6_figure(opts: Sequence[str], algs: Sequence[str], grid: Sequence[float],
               val: Mapping[tuple[str, str, float], Mapping[int, float]],
               test: Mapping[tuple[str, str, float], Mapping[int, float]],
               chosen: Mapping[tuple[str, str], float],
               bars: Sequence[tuple[str, str, str, float, float, float]]) -> Any:
    """R6 with the spread over seeds: one panel per optimizer, test (solid) and validation
    (dotted) accuracy vs LR for each combiner, mean with 95% t-interval error bars, the arm's
    validation-chosen LR ringed; last panel: test accuracy of the two designs (a: Adasum at
    Average's LR, b: each arm at its own LR), mean with 95% CI error bars."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(opts) + 1, figsize=(4.2 * (len(opts) + 1), 3.8))
    axes = np.atleast_1d(axes)

    def mci(d: Mapping[int, float]) -> tuple[float, float, float]:
        m, lo, hi, _ = st.mean_interval(list(d.values()), (0.0, 1.0))
        return (100 * m, 100 * (m - lo) if np.isfinite(lo) else 0.0,
                100 * (hi - m) if np.isfinite(hi) else 0.0)

    for ax, o in zip(axes, opts):
        for j, a in enumerate(algs):
            c = figures._color(a)
            x = np.asarray(grid, dtype=float) * (1 + 0.04 * (j - 0.5))
            for src, fmt, lab, alpha in ((test, "o-", "test", 1.0), (val, "s:", "validation", 0.6)):
                st_ = [mci(src.get((o, a, lr), {})) if src.get((o, a, lr)) else (np.nan, 0.0, 0.0)
                       for lr in grid]
                ax.errorbar(x, [s[0] for s in st_], yerr=[[s[1] for s in st_], [s[2] for s in st_]],
                            fmt=fmt, capsize=3, color=c, alpha=alpha, label=f"{a} ({lab})")
            lr = chosen.get((o, a), math.nan)
            if not math.isnan(lr) and val.get((o, a, lr)):
                ax.plot([lr * (1 + 0.04 * (j - 0.5))], [mci(val[o, a, lr])[0]], "o", ms=13,
                        mfc="none", mec=c, mew=1.5)
        ax.set_xscale("log")
        ax.set_xticks(list(grid), [f"{g:g}" for g in grid])
        ax.set_xlabel("peak LR")
        ax.set_ylabel("accuracy % (mean, 95% CI over seeds)")
        ax.set_title(f"optimizer: {o} (ring: chosen on validation)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    ax = axes[-1]
    x = np.arange(len(bars))
    for i, (lab, o, a, m, lo, hi) in enumerate(bars):
        err = [[m - lo if np.isfinite(lo) else 0.0], [hi - m if np.isfinite(hi) else 0.0]]
        ax.bar(i, m, 0.8, color=figures._color(a), alpha=0.85)
        ax.errorbar(i, m, yerr=err, fmt="none", ecolor="black", capsize=3)
    ax.set_xticks(x, [b[0] for b in bars], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("test accuracy % (mean, 95% CI)")
    ax.set_title("(a) Adasum at Average's LR; (b) each at its own", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def optimizers(h5: str) -> Report:
    """R6: Adasum on optimizer deltas vs averaging, for momentum SGD / Adam / LAMB, over an
    LR grid with seeds. Every LR is chosen on the final validation accuracy (mean over seeds),
    never on the test set. Design (a), the paper's (MLSys 5.2.1: Adasum-Adam / Adasum-LAMB run
    with the LAMB baseline's tuned hyper-parameters): per optimizer, Average's best LR, Adasum
    run at that same LR. Design (b): each arm at its own validation-chosen LR. Verdicts: 95%
    t-interval of the paired (by seed) Adasum - Average test-accuracy difference against
    R6_THRESHOLD_PP (stats.py)."""
    res = load(h5)
    rep = Report("adasum-optimizers", "R6: Adasum on optimizer deltas vs averaging, with "
                 "momentum SGD, Adam and LAMB (LeNet-5, 32 x 32), LR chosen on validation",
                 sources=[paper.R6_SOURCE])
    rep.inputs = [h5, "experiments/optimizers.json"]
    rep.runtime = _runtime_from_results(res)
    rep.seeds = int(res.runs["seed"].nunique()) if len(res) else None
    runs = res.runs
    if R6_SELECT_ON not in runs or not runs[R6_SELECT_ON].notna().any():
        raise SystemExit(f"{h5}: no {R6_SELECT_ON} in any run; the LRs are chosen on a validation "
                         "split (experiments/optimizers.json sets metrics.validation_fraction), "
                         "never on the test set: rerun the experiment")
    cols = ["algorithm", "optimizer", "workers", "global_batch", "lr", "seed", "status",
            "final_val_accuracy", "final_test_accuracy", "final_train_loss", "min_train_loss",
            "steps", "wall_s", "run_id"]
    rep.data(sort(runs[cols], "optimizer", "algorithm", "lr", "seed"))
    opts = _uniq(runs["optimizer"])
    algs = [a for a in (R6_AVG, R6_ADA) if a in _uniq(runs["algorithm"])]
    grid = sorted(_uniq(runs["lr"]))
    seeds = sorted(_uniq(runs["seed"]))
    n_seeds = len(seeds)
    pct = lambda m, lo, hi: st.fmt_ci(m, lo, hi, ".1f", scale=100)  # noqa: E731
    on_edge = lambda lr: (len(grid) > 1 and not math.isnan(lr) and  # noqa: E731
                          (math.isclose(lr, grid[0]) or math.isclose(lr, grid[-1])))
    edge = lambda lr: " (grid edge)" if on_edge(lr) else ""  # noqa: E731
    glist = ", ".join(f"{g:g}" for g in grid)

    cells_ = {(o, a): {"optimizer": o, "algorithm": a} for o in opts for a in algs}
    val = _lr_grid_values(runs, R6_SELECT_ON, R6_DIVERGED_ACC, cells_, grid)
    test = _lr_grid_values(runs, "final_test_accuracy", R6_DIVERGED_ACC, cells_, grid)

    def choose(o: str, a: str) -> float:
        """The grid LR with the best mean (over seeds) final validation accuracy; ties go to
        the smaller LR; NaN when no LR has a validation value."""
        best, best_v = math.nan, (-1, -math.inf)
        for lr in grid:
            v = val[o, a, lr]
            x = float(np.mean(list(v.values()))) if v else math.nan
            if not math.isnan(x) and (len(v), x) > best_v:  # most non-diverged seeds first
                best, best_v = lr, (len(v), x)
        return best

    chosen = {(o, a): choose(o, a) for o in opts for a in algs}

    def ci(d: Mapping[int, float]) -> tuple[float, float, float, int]:
        return st.mean_interval(list(d.values()), bounds=(0.0, 1.0))

    def at(o: str, a: str, lr: float) -> dict[int, float]:
        return test.get((o, a, lr), {}) if not math.isnan(lr) else {}

    # --- claims: (a) the paper's design, (b) each arm tuned on its own ---------------------
    designs = {}  # design -> optimizer -> (avg lr, ada lr)
    if {R6_AVG, R6_ADA} <= set(algs):
        designs["a"] = {o: (chosen[o, R6_AVG], chosen[o, R6_AVG]) for o in opts}
        designs["b"] = {o: (chosen[o, R6_AVG], chosen[o, R6_ADA]) for o in opts}
    method = f"{n_seeds} seed{'s' if n_seeds != 1 else ''} per cell, {st.METHOD}; {DIVERGED_RULE}"
    rows, bars, verdicts = [], [], {}
    arms: dict[str, dict[str, list[float]]] = {}  # per design: each combiner's test accuracies
    for d, per in designs.items():
        vs, ev = [], []
        for o in opts:
            lr_avg, lr_ada = per[o]
            A, B = at(o, R6_ADA, lr_ada), at(o, R6_AVG, lr_avg)
            # pooled over optimizers: the two combiners the claim compares
            arms.setdefault(d, {}).setdefault(R6_AVG, []).extend(B[k] for k in sorted(B))
            arms[d].setdefault(R6_ADA, []).extend(A[k] for k in sorted(A))
            diff = [100 * (A[k] - B[k]) for k in sorted(set(A) & set(B))]
            m, lo, hi, n = st.mean_interval(diff, claims.PP)
            v = st.decide(lo, hi, R6_THRESHOLD_PP, "above")
            vs.append(v)
            ev.append(f"{o}: Average (lr {lr_avg:g}) {pct(*ci(B)[:3])}%, Adasum (lr {lr_ada:g}) "
                      f"{pct(*ci(A)[:3])}%, difference {st.fmt_ci(m, lo, hi, '+.2f')} pp ({v}"
                      + (f", width {hi - lo:.2f}" if np.isfinite(hi - lo) else "") + ")")
            rows.append({"design": d, "optimizer": o, "Average lr": lr_avg,
                         "Average test acc %": pct(*ci(B)[:3]), "Adasum lr": lr_ada,
                         "Adasum test acc %": pct(*ci(A)[:3]),
                         "Adasum - Average (pp)": st.fmt_ci(m, lo, hi, "+.2f"), "verdict": v})
            for a, lr, dd in ((R6_AVG, lr_avg, B), (R6_ADA, lr_ada, A)):
                if d == "b" and a == R6_AVG:
                    continue  # the same runs as in (a)
                mm, ll, hh, _ = ci(dd)
                lab = (f"{o} Average" if a == R6_AVG else f"{o} Adasum ({d})") + \
                    (f" lr {lr:g}" if not math.isnan(lr) else "")
                bars.append((lab, o, a, 100 * mm, 100 * ll, 100 * hh))
        verdicts[d] = (st.combine(vs), ev)
    bars.sort(key=lambda x: opts.index(x[1]))  # per optimizer: Average, Adasum (a), Adasum (b)
    if "a" in verdicts:
        rep.claim_verdict(
            "At a large total batch, Adasum on the optimizers' deltas converges where (or better than) "
            "averaging does, for Adam and LAMB as for momentum SGD, run with the averaging baseline's "
            "tuned LR and no extra tuning (MLSys 5.2.1-5.2.2, Table 2)", verdicts["a"][0],
            "design (a), the paper's: per optimizer the LR with Average's best seed-mean validation "
            f"accuracy (grid {glist}), Adasum (delta) at that same LR; final test accuracy, Adasum minus "
            f"Average paired by seed, HOLDS when the interval is above {R6_THRESHOLD_PP:g} pp for every "
            f"optimizer ({method}): " + "; ".join(verdicts["a"][1]) + ".", arms=arms.get("a"))
        rep.claim_verdict(
            "Same claim with each arm tuned on its own: Adasum (delta) at its own validation-chosen LR "
            "beats Average at Average's", verdicts["b"][0],
            f"design (b): each (optimizer, combiner) arm at the grid LR with its best seed-mean validation "
            f"accuracy; paired by seed, interval above {R6_THRESHOLD_PP:g} pp for every optimizer "
            f"({method}): " + "; ".join(verdicts["b"][1]) + ".", arms=arms.get("b"))

    # --- tables ---------------------------------------------------------------------------
    t_grid: dict[str, list] = {"optimizer": [], "combiner": [], **{f"lr={lr:g}": [] for lr in grid},
                               "chosen lr (own)": [], "lr used in (a)": []}
    t_test: dict[str, list] = {"optimizer": [], "combiner": [], **{f"lr={lr:g}": [] for lr in grid}}
    for o in opts:
        for a in algs:
            for t in (t_grid, t_test):
                t["optimizer"].append(o)
                t["combiner"].append(a)
            for lr in grid:
                s = _lr_is(match(runs, optimizer=o, algorithm=a), lr)
                t_grid[f"lr={lr:g}"].append(_grid_cell(s, val[o, a, lr], lr, chosen[o, a],
                                                       lambda v: pct(*ci(v)[:3])))
                t_test[f"lr={lr:g}"].append(pct(*ci(test[o, a, lr])[:3]) if test[o, a, lr] else "-")
            c = chosen[o, a]
            t_grid["chosen lr (own)"].append("-" if math.isnan(c) else f"{c:g}{edge(c)}")
            ca = chosen.get((o, R6_AVG), math.nan)
            t_grid["lr used in (a)"].append("-" if math.isnan(ca) else f"{ca:g}")

    # --- text -----------------------------------------------------------------------------
    cfg = res.config(res.run_ids()[0]) if len(res) else {}
    vfrac = (cfg.get("metrics") or {}).get("validation_fraction", "?")
    w, b = cfg.get("workers", "?"), cfg.get("batch_size", "?")
    rep.section("Setup")
    rep.text(
        f"LeNet-5 on Fashion-MNIST, {w} logical workers x {b} = "
        f"{w * b if isinstance(w, int) and isinstance(b, int) else '?'} samples per step, "
        f"{cfg.get('epochs', '?')} epoch, warmup_linear schedule (17% warmup from 0 to the peak LR, "
        f"linear decay to 0). A validation split of {vfrac} of the training set is held back (the "
        "runs train on the rest); test accuracy is on the 10k test images after the last step. "
        f"Seeds {', '.join(map(str, seeds))} per cell (init and data order).\n\n"
        "- **Average** = `sync_sgd` averaging the gradients before one optimizer step (the "
        "'allreduce' baseline); **Adasum (delta)** = each worker steps its own optimizer and the "
        "deltas are Adasum-combined (Horovod DistributedOptimizer with op=Adasum, MLSys 4.1).\n"
        "- Optimizers: momentum SGD (0.9), Adam, LAMB (weight decay 0.01).\n"
        f"- **LR grid** {glist} (peak LR) for every (optimizer, combiner) arm, fixed before the runs "
        "so that it holds (on the validation split, experiments/optimizers.json) "
        "each arm's best LR: Adam's near 0.003-0.03, LAMB's near 0.03-0.1, momentum SGD's near 0.03 "
        "with Adasum and 0.1-0.3 with averaging (the averaged gradient of 1024 samples is small). "
        "Every choice is the grid LR with the best **mean over seeds of the final validation "
        "accuracy** (ties: the smaller LR); the test set plays no part in any choice. A chosen LR on "
        "the grid's edge is marked: its optimum may lie outside.\n"
        "- **Design (a), the paper's** (headline verdict): MLSys 5.2.1 runs Adasum-Adam and "
        "Adasum-LAMB with the LAMB baseline's tuned hyper-parameters and claims Adasum needs "
        "limited to no additional tuning; here, per optimizer, the Average arm's chosen LR, with "
        "Adasum run at that same LR.\n"
        "- **Design (b)**: each arm at its own chosen LR (DESIGN.md section 11: each compared arm "
        "tuned on its own).\n"
        f"- Verdicts: {st.METHOD} of the paired (same seed) Adasum - Average test-accuracy "
        f"difference; HOLDS when the interval is wholly above {R6_THRESHOLD_PP:g} pp (fixed before "
        "the runs), DOES NOT HOLD when wholly below, else INCONCLUSIVE; a claim over the three "
        f"optimizers holds only when each does. {DIVERGED_RULE[0].upper() + DIVERGED_RULE[1:]}.")
    rep.section("Chosen LRs and test accuracy % (ours): mean [95% CI] over seeds")
    if rows:
        rep.table(pd.DataFrame(rows), "(a) = Adasum at Average's validation-chosen LR (the paper's "
                  "design); (b) = each arm at its own validation-chosen LR", floatfmt="g")
    if "a" in verdicts and verdicts["a"][0] != st.HOLDS:
        # The ablation behind design (a): design (b) is the same runs with Adasum's LR
        # freed; the ratio of the two arms' chosen LRs and Adasum's failures at Average's LR say
        # whether (a) fails on the combiner or on carrying the large-batch LR over.
        why = []
        for o in opts:
            la, ld = chosen.get((o, R6_AVG), math.nan), chosen.get((o, R6_ADA), math.nan)
            s_ = _lr_is(match(runs, optimizer=o, algorithm=R6_ADA), la) if not math.isnan(la) else runs.iloc[:0]
            # diverged (NaN) or at chance: a finite blow-up ends at ~10% without a NaN
            ndiv = int(((s_["status"] == "diverged") | (s_["final_test_accuracy"] < 0.15)).sum()) if len(s_) else 0
            ratio = la / ld if ld and not math.isnan(la) and not math.isnan(ld) else math.nan
            why.append(f"{o}: Average's LR {la:g} is {ratio:.3g}x Adasum's own {ld:g}; at {la:g} Adasum "
                       f"diverged or ended at chance (< 15% test accuracy) in {ndiv} of {len(s_)} seeds")
        rep.section("Why design (a) does not hold (ablation: design (b))")
        rep.text(
            "Design (b) is the ablation: the same runs, with Adasum's LR chosen on its own. "
            + "; ".join(why) + ". With its own LR, Adasum (delta) is "
            + ("within the interval of Average for every optimizer (" if verdicts["b"][0] != st.FAILS
               else "still behind Average for some optimizer (")
            + f"design (b): {verdicts['b'][0]}). So (a) fails on carrying Average's LR over, not on "
            "the combiner: Average steps once with the mean of 32 gradients (1024 samples, low noise), "
            "so its best LR is large; Adasum combines the 32 workers' own optimizer deltas, each taken "
            "with a 32-sample gradient, and for near-orthogonal deltas the combination approaches their "
            "sum, so at the same LR its step is up to W = 32 times larger. The paper's claim is that an "
            "LR tuned for the SMALL per-worker minibatch carries over to Adasum (MLSys 1: 'when the "
            "learning rate has been properly tuned for a small minibatch size, Adasum dynamically "
            "adjusts the step size'); Table 2 reuses the baseline's recipe at 64K where LAMB's layer-wise "
            "trust ratio bounds every step, which a 1-epoch LeNet-5 at 1024 does not reproduce.")
    rep.section("The selection grid: final validation accuracy %, mean [95% CI] over seeds")
    rep.table(pd.DataFrame(t_grid), "bold = the arm's own chosen LR (best seed-mean validation "
              "accuracy); 'lr used in (a)' = Average's choice, used by both arms in design (a)")
    rep.section("For the record: final test accuracy % of every grid point, mean [95% CI] (not used for any choice)")
    rep.table(pd.DataFrame(t_test))
    prow = [{"algorithm": k, "phase 1 steps": v[0] if v[0] else "did not converge",
             "phase 2 steps": v[1] if v[1] else "did not converge"}
            for k, v in paper.R6_BERT_STEPS.items()]
    rep.section("Paper")
    rep.table(pd.DataFrame(prow), "Paper: BERT-Large steps to SQuAD F1 90.5 at 64K/32K "
              "minibatch (MLSys Table 2); Adasum rows use the LAMB baseline's hyper-parameters")
    rep.figure(_r6_figure(opts, algs, grid, val, test, chosen, bars))
    return rep


#: target name -> (function, what it reads)
TARGETS = {
    "adasum-lenet": lenet,
    "adasum-seq-error": seq_error,
    "adasum-orthogonality": orthogonality,
    "adasum-latency": latency,
    "adasum-toy": toy,
    "adasum-optimizers": optimizers,
}

#: the README section for the lead (also the preamble of reports/README.md)
README_SECTION = """\
## Reproducing the papers

One make target per reproduced table/figure (DESIGN.md section 11), all defined in one table,
`analysis/psgd_analysis/catalog.py`, from which the make rules (`mk/targets.mk`), `repro-smoke`,
`analysis/reproduce.py`, this table and `reports/README.md` are generated or checked. Each target
runs its specs into `reports/<spec>.h5` (git-ignored; reused while newer than the spec and the
binary, `REUSE=1` skips the check, `rm reports/<name>.h5` forces a rerun), then
`analysis/reproduce.py` writes `reports/<target>.md` (a protocol table paper | ours | deviation,
the provenance, ours beside the paper's numbers, a verdict per claim), `.csv` and `.png`, and
regenerates the index. Adding a target: `analysis/HOWTO-add-a-target.md`.

""" + _catalog.readme_table() + """
| `reproduce-all` | every target above, each one's time and the total printed | | | every verdict in `reports/README.md` |
| `repro-smoke` | every target in a tiny mode (3 steps, 1 seed) into a temp dir; part of `make test` | | ~2-3 min | the report files exist and parse (not the verdicts) |

Runtimes are estimates on the 2-core development machine; each report states the measured one
(the sum of its runs' wall times in its results files).

**Verdicts** (`psgd_analysis.stats`): five classes, counted separately in `reports/README.md`:
HOLDS / DOES NOT HOLD when the data decide at the 95% level, INCONCLUSIVE when they do not,
NOT TESTED when our protocol deviates from the paper's in a way that can decide the claim (the
report names the deviation), BY CONSTRUCTION when a time claim's outcome follows from the cost
model's formula and hand-set parameters (the report shows the formula's prediction). Means over
seeds get a BCa bootstrap interval from 10 seeds on and a Student-t interval below that, both
clipped to the value's bounds; rates a Clopper-Pearson interval; discrete outcomes (a chosen LR,
an ordering) an exact sign test, which needs >= 6 seeds to reach 95% at all; a diverged run is
counted as a divergence rate beside the accuracy of the runs that did not diverge; a claim over
many cells HOLDS when every cell holds and DOES NOT HOLD when Holm over the cells rejects one.
A claim whose statistic is constant across seeds (an interval of width 0) or across the arms
it compares (every arm gives the same value) is INCONCLUSIVE whatever its interval says.
R4 is a benchmark (no seeds).

`make -f Makefile.experiments regress` re-runs the short golden curves in `tests/golden/`
(toy square; LeNet-5, 4 workers, 100 steps; Adasum and sync SGD) and fails naming the run and
step that leaves its tolerance band (`make ... test` runs it; `make ... golden` regenerates the
goldens deliberately). The analysis package `analysis/psgd_analysis` (loader into tidy tables,
summary metrics, one plotting function per figure, the report engine) is what the targets and
`analysis/notebooks/adasum.ipynb` use.
"""
