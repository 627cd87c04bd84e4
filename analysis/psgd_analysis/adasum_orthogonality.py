"""R3 of DESIGN.md section 11 (adasum-orthogonality): per-layer gradient orthogonality during
training, LeNet-5 proxy at 64 workers (Adasum arXiv 3.6 Fig. 1; MLSys 5.1.3 Fig. 2). The
statistics (window, smoothing) and the four claims are fixed here before the runs;
orthogonality() returns a Report.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import paper
from . import stats as st
from .report import Report
from .results import Results, load
from .adasum_common import _runtime_from_results


#: a priori choices of the R3 statistics (fixed before the runs)
R3_WINDOW = 10        # steps on each side of an LR boundary ("drops exactly at boundaries")
R3_SMOOTH = 9         # steps of the figure's centred rolling mean (display only)
R3_RISES = ("Orthogonality rises toward 1 as training proceeds (gradients start out pointing in the same "
            "direction and become orthogonal) (arXiv 3.6, Fig. 1; MLSys 5.1.3, Fig. 2)")
R3_MOST = "Most layers (tensors) become more orthogonal as training proceeds (arXiv 3.6; MLSys 5.1.3)"
R3_RATES = "Layers become orthogonal at different rates (arXiv 3.6; MLSys 5.1.3)"
R3_DROPS = ("Orthogonality drops at the boundaries of the LR schedule (clear drops exactly at the "
            "LR changes, arXiv 3.6; MLSys 5.1.3)")


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x (NaN-free points only)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def _lr_boundaries(cur: pd.DataFrame) -> list[int]:
    """The steps whose LR differs from the previous logged step's (the schedule's changes):
    step b is the first update with the new LR, so the gradients of step b + 1 are the first
    taken after it."""
    s = cur["step"].to_numpy(dtype=int)
    lr = cur["lr"].to_numpy(dtype=float)
    return [int(s[i]) for i in range(1, len(s))
            if not math.isclose(lr[i], lr[i - 1], rel_tol=1e-9) and s[i] == s[i - 1] + 1]


def _window_drop(steps: np.ndarray, v: np.ndarray, b: int, w: int) -> float:
    """Mean over the w logged steps up to b (gradients before the new LR acts) minus the mean
    over the w steps after it (b + 1 .. b + w): > 0 is a drop."""
    before = v[(steps > b - w) & (steps <= b)]
    after = v[(steps > b) & (steps <= b + w)]
    if not len(before) or not len(after):
        return math.nan
    return float(np.nanmean(before) - np.nanmean(after))


def _r3_figure(per_seed: Mapping[int, pd.DataFrame], lr: pd.DataFrame, bounds: Sequence[int],
               W: int, seed0: int) -> Any:
    """(a) seed0: each tensor's orthogonality (rolling mean over R3_SMOOTH steps), the mean
    over tensors bold red, the LR dashed; (b) the mean over tensors of every seed (thin) and
    their mean (bold); LR boundaries as vertical lines in both."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    ax = axes[0]
    o = per_seed[seed0]
    sm = lambda s: s.rolling(R3_SMOOTH, center=True, min_periods=1).mean()  # noqa: E731
    for c in o.columns:
        if c not in ("step", "mean"):
            ax.plot(o["step"], sm(o[c]), lw=1, alpha=0.8, label=c)
    ax.plot(o["step"], sm(o["mean"]), color="red", lw=3, label="mean over tensors")
    ax2 = ax.twinx()
    ax2.plot(lr["step"], lr["lr"], color="k", ls="--", lw=1)
    ax2.set_yscale("log")
    ax2.set_ylabel("learning rate (dashed, log)")
    ax.set_title(f"seed {seed0}: per-tensor orthogonality ({R3_SMOOTH}-step rolling mean)", fontsize=9)
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    ax = axes[1]
    allm = []
    for sd, o in per_seed.items():
        ax.plot(o["step"], o["mean"], lw=0.6, alpha=0.6, label=f"seed {sd}")
        allm.append(o["mean"].to_numpy(dtype=float))
    n = min(len(a) for a in allm)
    ax.plot(o["step"].to_numpy()[:n], np.mean([a[:n] for a in allm], axis=0), color="red", lw=2,
            label="mean over seeds")
    ax.set_title("mean over tensors, every logged step, each seed", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    for ax in axes:
        ax.axhline(1.0 / W, color="gray", ls=":", lw=1)
        for b in bounds:
            ax.axvline(b + 0.5, color="gray", ls="-", lw=0.8, alpha=0.7)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("step (vertical lines: LR boundaries)")
        ax.set_ylabel("||Adasum(g)||^2 / sum ||g_i||^2")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _r3_data(per_seed: Mapping[int, pd.DataFrame], cur0: pd.DataFrame) -> pd.DataFrame:
    """The CSV: every seed's per-tensor orthogonality per logged step, with the LR at that step."""
    parts = []
    for sd, o in sorted(per_seed.items()):
        d = o.copy()
        d.insert(0, "seed", sd)
        d["lr"] = np.interp(d["step"].to_numpy(dtype=float), cur0["step"].to_numpy(dtype=float),
                            cur0["lr"].to_numpy(dtype=float))
        parts.append(d)
    return pd.concat(parts, ignore_index=True)


def _r3_setup(rep: Report, res: Results, cfg: dict[str, Any], W: int, bounds: Sequence[int], total: int,
              per_seed: Mapping[int, pd.DataFrame]) -> None:
    """The setup section: the run, the measure and the statistics fixed before the runs."""
    sched = cfg.get("schedule", {})
    acc = res.runs["final_test_accuracy"].astype(float)
    am, al, ah, _ = st.mean_interval(acc.tolist(), (0.0, 1.0))
    rep.section("Setup")
    rep.text(
        f"LeNet-5 on Fashion-MNIST, W = {W} logical workers x {cfg['batch_size']} (the paper's 64 GPUs), "
        f"Adasum on the workers' momentum-SGD deltas (apply = delta: Horovod's DistributedOptimizer, arXiv 4.1), "
        f"LR {cfg['lr']}, {sched.get('name')} schedule (x{sched.get('gamma')} at epochs "
        f"{', '.join(f'{e:g}' for e in sched.get('milestones', []))}: steps {', '.join(map(str, bounds))}), "
        f"{total} steps ({cfg['epochs']} epochs), seeds {', '.join(map(str, sorted(per_seed)))}; final test "
        f"accuracy {st.fmt_ci(am, al, ah, '.1f', scale=100)}%. At every step the workers' fresh gradients give, "
        "per tensor, ||Adasum(g_1..g_W)||^2 / sum_i ||g_i||^2 (1 = orthogonal, 1/W = parallel with equal "
        "norms), the paper's measure (arXiv 3.6). The paper measured ResNet-50 and BERT-Large at 64 GPUs; its "
        "figure's values are not in the text, so the claims are the shapes, each decided by a per-seed "
        "statistic fixed before the runs: the whole-run slope (every logged step, no window picked), the "
        f"drop across each LR boundary ({R3_WINDOW} steps each side; the gradients of step b + 1 are the first "
        "after the LR of step b changes), the per-tensor slopes. A rising trend biases a before-after "
        "difference against a drop, so the drop test is conservative.")


def orthogonality(h5: str) -> Report:
    """R3: per-layer orthogonality over a whole multistep-schedule run at W = 64, decided by
    per-seed statistics with intervals over seeds (psgd_analysis.stats): the rise is the
    least-squares slope of the mean orthogonality on training progress (0..1) over every
    logged step; the drops are the mean over R3_WINDOW steps before minus after each LR
    boundary; per-tensor rates are per-tensor slopes, 'different rates' a Friedman test over
    tensors with seeds as blocks."""
    from scipy import stats as sst
    res = load(h5)
    rep = Report("adasum-orthogonality", "R3: per-layer gradient orthogonality during training "
                 "(LeNet-5, 64 workers, multistep LR)", sources=[paper.R3_SOURCE])
    rep.inputs = [h5, "experiments/adasum/orthogonality.json"]
    rep.runtime = _runtime_from_results(res)
    rids = [r for r in res.run_ids() if res.metric(r, "orthogonality") is not None]
    seeds = {r: int(res.config(r)["seed"]) for r in rids}
    rep.seeds = len(set(seeds.values())) if rids else None
    rid0 = min(rids, key=lambda r: seeds[r])
    cfg = res.config(rid0)
    W = int(cfg["workers"])
    cur0 = res.curve(rid0)
    total = int(res.runs.loc[res.runs["run_id"] == rid0, "steps"].iloc[0])
    per_seed = {seeds[r]: res.metric(r, "orthogonality") for r in rids}
    tensors = [c for c in per_seed[seeds[rid0]].columns if c not in ("step", "mean")]
    bounds = _lr_boundaries(cur0)
    # --- per-seed statistics --------------------------------------------------------------
    rows, slope_t, drops, ctrl = [], {t: {} for t in tensors}, {b: {} for b in bounds}, {}
    mids = [int(round((a + b) / 2)) for a, b in zip([0] + bounds, bounds + [total])][1:-1] if bounds else []
    mids = [m for m in [int(round((bounds[0]) / 2))] + mids if m > R3_WINDOW] if bounds else []
    for sd, o in sorted(per_seed.items()):
        steps = o["step"].to_numpy(dtype=float)
        x = steps / total
        m = o["mean"].to_numpy(dtype=float)
        k = max(1, len(m) // 10)
        rho = float(sst.spearmanr(steps, m, nan_policy="omit")[0])
        ph1 = steps <= (bounds[0] if bounds else total)
        rows.append({"seed": str(sd), "slope per run": _slope(x, m), "Spearman rho": rho,
                     "slope before the 1st boundary": _slope(x[ph1], m[ph1]),
                     "first 10%": float(np.nanmean(m[:k])), "last 10%": float(np.nanmean(m[-k:])),
                     **{f"drop at {b}": _window_drop(steps, m, b, R3_WINDOW) for b in bounds}})
        for t in tensors:
            slope_t[t][sd] = _slope(x, o[t].to_numpy(dtype=float))
        for b in bounds:
            drops[b][sd] = rows[-1][f"drop at {b}"]
        for c in mids:
            ctrl.setdefault(c, {})[sd] = _window_drop(steps, m, c, R3_WINDOW)
    per = pd.DataFrame(rows)
    # --- claims ---------------------------------------------------------------------------
    slopes = per["slope per run"].tolist()
    v, (ms, lo, hi, nn) = st.decide_mean(slopes, 0.0, "above")
    mr, lr_, hr, _ = st.mean_interval(per["Spearman rho"].tolist(), (-1.0, 1.0))
    f0, f1 = float(per["first 10%"].mean()), float(per["last 10%"].mean())
    p1m, p1l, p1h, _ = st.mean_interval(per["slope before the 1st boundary"].tolist())
    rep.claim_verdict(
        R3_RISES, v,
        f"least-squares slope of the mean orthogonality over tensors on training progress (0 = start, 1 = end; "
        f"every logged step of the whole run, {total} steps), per seed: {st.fmt_ci(ms, lo, hi, '+.3f')} per run "
        f"over {nn} seeds ({st.METHOD}; HOLDS when above 0); Spearman rho of orthogonality with step "
        f"{st.fmt_ci(mr, lr_, hr, '+.2f')}; seed-mean level {f0:.3f} in the first 10% of steps -> {f1:.3f} in the "
        f"last 10% (1/W = {1 / W:.4f} = parallel, 1 = orthogonal); before the first LR boundary alone (no jump "
        f"at a boundary in it) the slope is {st.fmt_ci(p1m, p1l, p1h, '+.3f')} per run.")
    t_rows, t_vs = [], []
    for t in tensors:
        vals = list(slope_t[t].values())
        vt, (a, l_, h, _) = st.decide_mean(vals, 0.0, "above")
        t_vs.append(vt)
        lv = [float(np.nanmean(per_seed[sd][t].to_numpy(dtype=float)[:max(1, len(per_seed[sd]) // 10)]))
              for sd in per_seed]
        hv = [float(np.nanmean(per_seed[sd][t].to_numpy(dtype=float)[-max(1, len(per_seed[sd]) // 10):]))
              for sd in per_seed]
        t_rows.append({"tensor": t, "slope per run [95% CI]": st.fmt_ci(a, l_, h, "+.3f"),
                       "rises": vt, "first 10%": float(np.mean(lv)), "last 10%": float(np.mean(hv))})
    n_up = sum(1 for x in t_vs if x == st.HOLDS)
    n_down = sum(1 for x in t_vs if x == st.FAILS)
    # "most layers": an exact one-sided count over the tensors is not the question (tensors are
    # not independent draws); the claim is decided by whether more than half of the tensors
    # rise at the 95% level each, and fails when half or more fall at that level.
    v_most = st.HOLDS if n_up > len(tensors) / 2 else st.FAILS if n_down >= len(tensors) / 2 else st.INCONCLUSIVE
    rep.claim_verdict(R3_MOST, v_most,
                      f"{n_up} of {len(tensors)} tensors have a per-seed slope interval above 0, {n_down} below "
                      f"(HOLDS when more than half rise; table below).")
    mat = np.array([[slope_t[t][sd] for t in tensors] for sd in sorted(per_seed)], dtype=float)
    if mat.shape[0] >= 3 and mat.shape[1] >= 3 and np.isfinite(mat).all():
        chi2, p = sst.friedmanchisquare(*[mat[:, j] for j in range(mat.shape[1])])
        v_rates = st.HOLDS if p < st.ALPHA else st.INCONCLUSIVE
        means = mat.mean(axis=0)
        jmax, jmin = int(np.argmax(means)), int(np.argmin(means))
        d_ = mat[:, jmax] - mat[:, jmin]
        dm, dl, dh, _ = st.mean_interval(d_)
        rep.claim_verdict(
            R3_RATES, v_rates,
            f"Friedman test of the per-seed slopes over the {len(tensors)} tensors (seeds as blocks, n = "
            f"{mat.shape[0]}): chi2 = {chi2:.1f}, p = {p:.2g} (HOLDS when p < {st.ALPHA:g}; equal rates cannot be "
            f"shown by this test, so p >= {st.ALPHA:g} is INCONCLUSIVE). For scale: fastest ({tensors[jmax]}) minus "
            f"slowest ({tensors[jmin]}) mean slope {st.fmt_ci(dm, dl, dh, '+.3f')} per run (chosen after seeing "
            "the data: descriptive only).")
    else:
        rep.claim_verdict(R3_RATES, st.INCONCLUSIVE, f"a Friedman test over tensors needs >= 3 seeds and >= 3 "
                          f"tensors with finite slopes; this file has {mat.shape[0]} x {mat.shape[1]}.")
    cells = [list(drops[b].values()) for b in bounds]
    b_rows = []
    for b, c in zip(bounds, cells):
        vb, (a, l_, h, _) = st.decide_mean(c, 0.0, "above", (-1.0, 1.0))
        lr_b = float(cur0.loc[cur0["step"] == b, "lr"].iloc[0])
        lr_p = float(cur0.loc[cur0["step"] == b - 1, "lr"].iloc[0]) if (cur0["step"] == b - 1).any() else math.nan
        b_rows.append({"window centre (step)": b, "epoch": b / (total / float(cfg["epochs"])),
                       "kind": f"LR boundary ({lr_p:g} -> {lr_b:g})",
                       f"drop = mean {R3_WINDOW} before - mean {R3_WINDOW} after [95% CI]": st.fmt_ci(a, l_, h, "+.3f"),
                       "verdict": vb})
    for c in mids:
        a, l_, h, _ = st.mean_interval(list(ctrl[c].values()), (-1.0, 1.0))
        b_rows.append({"window centre (step)": c, "epoch": c / (total / float(cfg["epochs"])),
                       "kind": "control: no LR change",
                       f"drop = mean {R3_WINDOW} before - mean {R3_WINDOW} after [95% CI]": st.fmt_ci(a, l_, h, "+.3f"),
                       "verdict": "-"})
    if bounds:
        vd = st.combine_cells(cells, 0.0, "above", (-1.0, 1.0))
        rep.claim_verdict(
            R3_DROPS, vd,
            f"per seed, the mean orthogonality over tensors in the {R3_WINDOW} steps up to each LR boundary minus "
            f"the {R3_WINDOW} steps after it (> 0 = a drop); at " + "; ".join(
                f"step {r['window centre (step)']} ({r['kind'].split('(')[1].rstrip(')')}): "
                f"{r[f'drop = mean {R3_WINDOW} before - mean {R3_WINDOW} after [95% CI]']}"
                for r in b_rows if r["kind"].startswith("LR")) +
            f" ({st.METHOD}); HOLDS when every boundary's interval is above 0, DOES NOT HOLD when Holm over "
            "the boundaries rejects one (stats.combine_cells). The same statistic at steps without an LR "
            "change is in the table below as a control." + (
                " Where the interval lies below 0 the orthogonality rises across the boundary, the opposite of "
                "the paper's drop: at step " + ", ".join(str(b) for b, c in zip(bounds, cells)
                                                          if st.mean_interval(c)[2] < 0) + "." if any(
                    st.mean_interval(c)[2] < 0 for c in cells) else ""))
    else:
        rep.claim_verdict(R3_DROPS, st.INCONCLUSIVE, "the run's schedule has no LR change within its steps: "
                          "nothing to test in this file")
    # --- data, tables, figure ---------------------------------------------------------------
    rep.data(_r3_data(per_seed, cur0))
    _r3_setup(rep, res, cfg, W, bounds, total, per_seed)
    rep.section("Per seed: whole-run slope, rank correlation, levels and the drop at each LR boundary")
    rep.table(per, floatfmt=".3f")
    rep.section("Per tensor: slope of orthogonality on training progress (per run), mean [95% CI] over seeds")
    rep.table(pd.DataFrame(t_rows), floatfmt={"first 10%": ".3f", "last 10%": ".3f"})
    rep.section(f"Drops: mean over {R3_WINDOW} steps before minus after, at each LR boundary and at controls")
    rep.table(pd.DataFrame(b_rows), "controls: the same statistic half-way between boundaries (and half-way "
              "to the first), where the LR does not change", floatfmt={"epoch": ".2f"})
    rep.figure(_r3_figure(per_seed, cur0[["step", "lr"]], bounds, W, seeds[rid0]))
    return rep
