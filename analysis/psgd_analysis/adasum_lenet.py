"""R1 of DESIGN.md section 11 (adasum-lenet): LeNet-5, Sum vs Adasum at 4-32 workers, untuned
and tuned LR (Adasum arXiv 5.4 Fig. 6 and its tuned-LR table; MLSys 5.2.3 Fig. 4). lenet()
reads the W = 1 LR search, the untuned sweep, the sequential reference, the tuned grid and
the apply ablation, decides the claims of arXiv 5.4 with the thresholds of
psgd_analysis/claims.py (fixed before the runs) and returns a Report.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import claims
from . import figures, paper
from . import stats as st
from .report import Report
from .results import Results, load
from .tables import match, records, sort
from .adasum_common import DIVERGED_RULE, _grid_cell, _lr_grid_values, _lr_is, _seed_values, _uniq


#: the paper's sequential max LR, found on MNIST (arXiv 5.4); ours is searched on our data
#: (experiments/adasum/lenet_seq_lr.json) and written into experiments/adasum/lenet_sweep.json
PAPER_SEQ_LR = 0.0328
UNTUNED_LR = PAPER_SEQ_LR  # kept for old callers: the paper's value, not ours (see lenet())
#: a priori thresholds of the R1 check (percentage points of test accuracy)
R1_NEAR_PP = claims.R1_NEAR_PP          # "stays near the sequential accuracy" (claims.py)
R1_COLLAPSE_PP = claims.R1_COLLAPSE_PP  # "fails to converge / collapses" (claims.py)
R1_CHANCE = None  # diverged runs are left out (DIVERGED_RULE)
#: the split every LR is chosen on (never the test set; spec metrics.validation_fraction)
R1_SELECT_ON = "final_val_accuracy"
#: the sequential arm and the two combiners as psgd_analysis.results labels them
R1_SEQ, R1_SUM, R1_ADA = "Sum", "Sum", "Adasum (delta)"


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
        f"{grid[0]:g} - {grid[-1]:g} (`experiments/adasum/lenet_seq_lr.json`).\n\n"
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
    gradients (experiments/adasum/lenet_ablation_apply.json) against the main sweep's Adasum on the
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
    rep.text("`experiments/adasum/lenet_ablation_apply.json` reruns the untuned W = 16 and 32 cells with `apply: gradient` "
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


def _r1_runtime(parts: Sequence[tuple[str, Results]]) -> dict[str, str]:
    """The measured runtime: the sum of the run wall times of every part, each part's own."""
    total = 0.0
    each = []
    for name, r in parts:
        t = float(np.nansum(r.runs["wall_s"].to_numpy(dtype=float)))
        total += t
        # each part's own rank counts, read per run (a --resume'd file can mix them)
        each.append(f"{name} {t / 60:.1f} min ({len(r)} runs, mpirun -n {r.ranks_label()})")
    return {"experiment": f"{total / 60:.1f} min (sum of run wall times: "
                          + "; ".join(each) + ")"}


def _r1_lr_table(rep: Report, algs: Sequence[str], ws: Sequence[int], chosen: Mapping[tuple[str, int], float],
                 chosen_seed: Mapping[tuple[str, int], list[float]], seq_lr: float, on_edge: Any) -> None:
    """The tuned max LR per cell (seed mean and each seed's), ours beside the paper's (arXiv 5.4)."""
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


def _r1_setup(rep: Report, res: Results, seq_lr: float, seeds: Sequence[int], grid: Sequence[float],
              tseeds: Sequence[int], div_rule: str) -> None:
    """The setup section: the model, the schedule, the combiners, the untuned and tuned LRs, the statistics."""
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


def _r1_csv(parts: Sequence[tuple[str, Results]]) -> pd.DataFrame:
    """The CSV: every run of the input files, with its part."""
    cols = ["algorithm", "workers", "lr", "seed", "status", "final_val_accuracy",
            "final_test_accuracy", "final_train_loss", "steps", "wall_s", "run_id"]
    frames = []
    for name, r in parts:
        f = r.runs[cols].copy()
        f.insert(0, "part", name)
        frames.append(f)
    return sort(pd.concat(frames, ignore_index=True), "part", "algorithm", "workers", "lr", "seed")


def _r1_curves(seq_res: Results, seq_runs: pd.DataFrame, untuned_lr: float, ref_res: Results | None,
               ref_runs: pd.DataFrame, res: Results, runs: pd.DataFrame, algs: Sequence[str],
               ws: Sequence[int]) -> dict[tuple[str, int], list[pd.DataFrame]]:
    """The untuned cells' test curves for the figure (the sequential reference's at the untuned LR)."""
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
    return curves


def lenet(seq_h5: str, h5: str | None = None, ref_h5: str | None = None,
          tuned_h5: str | None = None, apply_h5: str | None = None) -> Report:
    """R1 at the paper's protocol (arXiv 5.4): (1) the sequential max LR on our data from the
    W = 1 search (``seq_h5``, experiments/adasum/lenet_seq_lr.json), checked against the untuned LR of
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
        "experiments/adasum/lenet_seq_lr.json", "experiments/adasum/lenet_sweep.json", "experiments/adasum/lenet_seq_ref.json",
        "experiments/adasum/lenet_sweep_tuned.json", "experiments/adasum/lenet_ablation_apply.json"]
    parts = [("W = 1 LR search", seq_res), ("untuned sweep", res)] + (
        [("sequential reference", ref_res)] if ref_res is not None else []) + (
        [("tuned grid", tun_res)] if tun_res is not None else []) + (
        [("apply ablation", abl_res)] if abl_res is not None else [])
    rep.runtime = _r1_runtime(parts)
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
    # experiments/adasum/lenet_seq_ref.json's runs (the untuned cells' further seeds)
    ref_runs = ref_res.runs if ref_res is not None else seq_runs.iloc[0:0]
    ref_lrs = sorted(_uniq(ref_runs["lr"])) if len(ref_runs) else []
    ref_ok = len(ref_lrs) <= 1 and all(math.isclose(x, seq_lr, rel_tol=1e-9) for x in ref_lrs)
    check = ("**CHECK passed:** the untuned LR of `experiments/adasum/lenet_sweep.json` "
             f"({untuned_lr:g}) and the LR of the sequential reference's further seeds "
             f"(`experiments/adasum/lenet_seq_ref.json`: {', '.join(f'{x:g}' for x in ref_lrs) or 'none'}) equal the "
             f"LR the W = 1 search chose from its results file ({seq_lr:g})." if lr_ok and ref_ok else
             "**CHECK FAILED:** the untuned LR of `experiments/adasum/lenet_sweep.json` "
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
        f"{', '.join(map(str, sorted(s_ref))) or 'none'} from `experiments/adasum/lenet_seq_ref.json`)"
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

    _r1_lr_table(rep, algs, ws, chosen, chosen_seed, seq_lr, on_edge)

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

    _r1_setup(rep, res, seq_lr, seeds, grid, tseeds, div_rule)

    rep.data(_r1_csv(parts))
    rep.seeds = n_seeds

    curves = _r1_curves(seq_res, seq_runs, untuned_lr, ref_res, ref_runs, res, runs, algs, ws)
    rep.figure(_r1_figure(seq_runs, seq_lr, cells, paper.R1_TUNED_LR_ARXIV, seq_m[0], curves))
    return rep
