"""R3 of DESIGN.md section 11 (adasum-orthogonality): per-layer gradient orthogonality during
training, LeNet-5 proxy at 64 workers (Adasum arXiv 3.6 Fig. 1; MLSys 5.1.3 Fig. 2). The
statistics (window, smoothing) and the four claims are fixed here before the runs;
orthogonality() returns a Report. The BatchNorm ResNet arm (orthogonality_resnet.json) asks
the drops claim again in the paper's setting (normalization, weight decay, the ResNet-50
recipe's schedule) with the same statistic; its row and the controls' check (_drops_verdict)
were fixed before its runs.
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
#: The same claim asked of the BatchNorm ResNet arm (its own row: the LeNet row keeps its catalog
#: rule, whose match is the LeNet wording above, which this one does not contain).
R3_DROPS_BN = ("BatchNorm ResNet-8 with weight decay on the ResNet-50 recipe's schedule: orthogonality falls "
               "across each of the schedule's x0.1 LR steps ('clear drops in the orthogonality [...] exactly at "
               "boundaries of learning rate schedule change', arXiv 3.6; MLSys 5.1.3)")


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x (NaN-free points only)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def _lr_boundaries(cur: pd.DataFrame, factor: float | None = None) -> list[int]:
    """The steps whose LR differs from the previous logged step's (the schedule's changes), in
    the curves' 1-based step labels: curve step b is loop step b - 1 (0-based), the first update
    with the new LR, so loop step b is the first whose gradients are taken at weights the new LR
    moved. With ``factor`` (a multistep schedule's gamma) only the steps where the LR is
    multiplied by it count: a warm-up changes the LR at every one of its steps, and the test
    fixed before the runs takes the recipe's x0.1 steps (a reading of the claim: arXiv 3.6 says
    'boundaries of learning rate schedule change')."""
    s = cur["step"].to_numpy(dtype=int)
    lr = cur["lr"].to_numpy(dtype=float)
    return [int(s[i]) for i in range(1, len(s))
            if not math.isclose(lr[i], lr[i - 1], rel_tol=1e-9) and s[i] == s[i - 1] + 1
            and (factor is None or math.isclose(lr[i] / lr[i - 1], factor, rel_tol=1e-6))]


def _control_steps(bounds: Sequence[int], total: int, w: int = R3_WINDOW) -> list[int]:
    """The controls: the steps half-way between consecutive LR boundaries and half-way to the
    first, where the LR does not step (those less than a window from the start dropped)."""
    if not bounds:
        return []
    mids = [int(round((a + b) / 2)) for a, b in zip([0] + list(bounds), list(bounds) + [total])][1:-1]
    return [m for m in [int(round(bounds[0] / 2))] + mids if m > w]


def _drops_verdict(cells: Sequence[Sequence[float]], controls: Sequence[Sequence[float]]) -> tuple[str, str]:
    """The drop claim over the boundaries' per-seed drops (stats.combine_cells: HOLDS when
    every boundary's interval is above 0, DOES NOT HOLD when Holm over them rejects one), and
    the controls' check, both ways: a drop the same statistic also shows where the LR does not
    change (a control's interval above 0) is not a drop *at* the boundaries, and a rise a
    control shows too (its interval below 0) is not a rise at them either; HOLDS (or DOES NOT
    HOLD) then becomes INCONCLUSIVE with the data's verdict beside it. Returns (verdict, the
    check's sentence)."""
    v = st.combine_cells(cells, 0.0, "above", (-1.0, 1.0))
    ivs = [st.mean_interval(c, (-1.0, 1.0)) for c in controls if len(c)]
    dropping = sum(1 for iv in ivs if iv[1] > 0)
    rising = sum(1 for iv in ivs if iv[2] < 0)
    if v == st.HOLDS and dropping:
        why = (f"{dropping} of {len(controls)} controls (no LR change) drop as well, their intervals above 0, "
               "so the drops are not shown to be at the boundaries")
        return f"{st.INCONCLUSIVE} ({why}; the data alone: {st.HOLDS})", why
    if v == st.FAILS and rising:
        why = (f"{rising} of {len(controls)} controls (no LR change) rise as well, their intervals below 0, "
               "so the rise is not shown to be at the boundaries")
        return f"{st.INCONCLUSIVE} ({why}; the data alone: {st.FAILS})", why
    return v, ("no control's interval excludes 0 in the verdict's direction" if controls else "")


def _window_drop(steps: np.ndarray, v: np.ndarray, b: int, w: int) -> float:
    """Mean over the metric's w steps before b minus the mean over its w steps from b: > 0 is a
    drop. The metric's steps are 0-based loop steps (app/metrics/diagnostics.cpp records
    ctx.step) and b is a curve label (1-based, _lr_boundaries): metric step b is the first whose
    gradients are taken at weights the new LR moved, so before = b - w .. b - 1 and after =
    b .. b + w - 1."""
    before = v[(steps >= b - w) & (steps < b)]
    after = v[(steps >= b) & (steps < b + w)]
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
            ax.axvline(b - 0.5, color="gray", ls="-", lw=0.8, alpha=0.7)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("step (vertical lines: LR boundaries)")
        ax.set_ylabel("||Adasum(g)||^2 / sum ||g_i||^2")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _r3_data(per_seed: Mapping[int, pd.DataFrame], cur0: pd.DataFrame) -> pd.DataFrame:
    """The CSV: every seed's per-tensor orthogonality per logged step (0-based loop steps), with
    the LR of the curves' label at that step: the LR of the update before it, the one that moved
    the weights its gradients are taken at."""
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
        f"drop across each LR boundary ({R3_WINDOW} steps each side; the first step after is the first whose "
        "gradients are taken at weights the new LR moved), the per-tensor slopes. A rising trend biases a "
        "before-after difference against a drop: conservative for a HOLDS, not for a DOES NOT HOLD, which is why "
        "the controls (the same statistic where the LR does not change) are checked both ways.")


class _Arm:
    """One arm's runs: the results, the runs that logged orthogonality, their seeds, the first
    seed's config, curve and step count, and every seed's orthogonality table."""

    def __init__(self, h5: str):
        self.res = load(h5)
        self.rids = [r for r in self.res.run_ids() if self.res.metric(r, "orthogonality") is not None]
        self.seeds = {r: int(self.res.config(r)["seed"]) for r in self.rids}
        self.rid0 = min(self.rids, key=lambda r: self.seeds[r])
        self.cfg = self.res.config(self.rid0)
        self.W = int(self.cfg["workers"])
        self.cur0 = self.res.curve(self.rid0)
        self.total = int(self.res.runs.loc[self.res.runs["run_id"] == self.rid0, "steps"].iloc[0])
        self.per_seed = {self.seeds[r]: self.res.metric(r, "orthogonality") for r in self.rids}

    def window_drops(self, at: Sequence[int]) -> dict[int, dict[int, float]]:
        """_window_drop of every seed's mean over tensors at each step of ``at``: {step: {seed: drop}}."""
        out: dict[int, dict[int, float]] = {b: {} for b in at}
        for sd, o in sorted(self.per_seed.items()):
            steps, m = o["step"].to_numpy(dtype=float), o["mean"].to_numpy(dtype=float)
            for b in at:
                out[b][sd] = _window_drop(steps, m, b, R3_WINDOW)
        return out


_DROP_COL = f"drop = mean {R3_WINDOW} before - mean {R3_WINDOW} after [95% CI]"


def _window_row(step: int, total: int, epochs: float, kind: str, cell: Sequence[float], verdict: str = "-") -> dict:
    """One row of an arm's window table: the window's step and epoch, its kind, the drop's mean
    [95% CI] over seeds."""
    a, l_, h, _ = st.mean_interval(list(cell), (-1.0, 1.0))
    return {"window centre (step)": step, "epoch": step / (total / float(epochs)), "kind": kind,
            _DROP_COL: st.fmt_ci(a, l_, h, "+.3f"), "verdict": verdict}


def _drops_claim(rep: Report, claim: str, cur0: pd.DataFrame, cfg: Mapping[str, Any], total: int,
                 bounds: Sequence[int], drops: Mapping[int, Mapping[int, float]],
                 ctrl: Mapping[int, Mapping[int, float]], extra: Sequence[Mapping[str, Any]] = ()) -> list[dict]:
    """The drop claim of one arm (the same statistic in both: R3_WINDOW steps before minus
    after each LR boundary per seed, Holm over the boundaries, the controls' check of
    _drops_verdict) and its table rows: the boundaries, ``extra`` rows, then the controls."""
    mids = sorted(ctrl)
    cells = [list(drops[b].values()) for b in bounds]
    b_rows = []
    for b, c in zip(bounds, cells):
        vb = st.decide_mean(c, 0.0, "above", (-1.0, 1.0))[0]
        lr_b = float(cur0.loc[cur0["step"] == b, "lr"].iloc[0])
        lr_p = float(cur0.loc[cur0["step"] == b - 1, "lr"].iloc[0]) if (cur0["step"] == b - 1).any() else math.nan
        b_rows.append(_window_row(b, total, cfg["epochs"], f"LR boundary ({lr_p:g} -> {lr_b:g})", c, vb))
    b_rows.extend(extra)
    for c in mids:
        b_rows.append(_window_row(c, total, cfg["epochs"], "control: no LR change", ctrl[c].values()))
    if bounds:
        vd, check = _drops_verdict(cells, [list(ctrl[c].values()) for c in mids])
        rep.claim_verdict(
            claim, vd,
            f"per seed, the mean orthogonality over tensors in the {R3_WINDOW} steps up to each LR boundary minus "
            f"the {R3_WINDOW} steps after it (> 0 = a drop); at " + "; ".join(
                f"step {r['window centre (step)']} ({r['kind'].split('(')[1].rstrip(')')}): "
                f"{r[_DROP_COL]}"
                for r in b_rows if r["kind"].startswith("LR")) +
            f" ({st.METHOD}); HOLDS when every boundary's interval is above 0, DOES NOT HOLD when Holm over "
            "the boundaries rejects one (stats.combine_cells). The same statistic at steps without an LR "
            "change is in the table below as a control; a drop (or a rise) some control shows too is not one at "
            f"the boundaries (INCONCLUSIVE): {check}." + (
                " Where the interval lies below 0 the orthogonality rises across the boundary, the opposite of "
                "the paper's drop: at step " + ", ".join(str(b) for b, c in zip(bounds, cells)
                                                          if st.mean_interval(c)[2] < 0) + "." if any(
                    st.mean_interval(c)[2] < 0 for c in cells) else ""))
    else:
        rep.claim_verdict(claim, st.INCONCLUSIVE, "the run's schedule has no LR change within its steps: "
                          "nothing to test in this file")
    return b_rows


def orthogonality(h5: str, h5_bn: str | None = None) -> Report:
    """R3: per-layer orthogonality over a whole multistep-schedule run at W = 64, decided by
    per-seed statistics with intervals over seeds (psgd_analysis.stats): the rise is the
    least-squares slope of the mean orthogonality on training progress (0..1) over every
    logged step; the drops are the mean over R3_WINDOW steps before minus after each LR
    boundary; per-tensor rates are per-tensor slopes, 'different rates' a Friedman test over
    tensors with seeds as blocks. ``h5_bn``: the BatchNorm ResNet arm's results
    (orthogonality_resnet.json), whose drops at the schedule's x0.1 steps decide R3_DROPS_BN
    by the same statistic (_bn_arm)."""
    from scipy import stats as sst
    arm = _Arm(h5)
    res, rids, seeds, rid0, cfg, W, cur0, total, per_seed = (arm.res, arm.rids, arm.seeds, arm.rid0, arm.cfg, arm.W,
                                                              arm.cur0, arm.total, arm.per_seed)
    rep = Report("adasum-orthogonality", "R3: per-layer gradient orthogonality during training "
                 "(LeNet-5, 64 workers, multistep LR" + ("; a BatchNorm ResNet-8 arm for the drops)" if h5_bn else ")"),
                 sources=[paper.R3_SOURCE])
    rep.inputs = [h5, "experiments/adasum/orthogonality.json"]
    rep.runtime = _runtime_from_results(res)
    rep.seeds = len(set(seeds.values())) if rids else None
    tensors = [c for c in per_seed[seeds[rid0]].columns if c not in ("step", "mean")]
    bounds = _lr_boundaries(cur0)
    # --- per-seed statistics --------------------------------------------------------------
    mids = _control_steps(bounds, total)
    drops, ctrl = arm.window_drops(bounds), arm.window_drops(mids)
    rows, slope_t = [], {t: {} for t in tensors}
    for sd, o in sorted(per_seed.items()):
        steps = o["step"].to_numpy(dtype=float)
        x = steps / total
        m = o["mean"].to_numpy(dtype=float)
        k = max(1, len(m) // 10)
        rho = float(sst.spearmanr(steps, m, nan_policy="omit")[0])
        ph1 = steps < (bounds[0] if bounds else total + 1)  # the metric's steps before the first new-LR gradient
        rows.append({"seed": str(sd), "slope per run": _slope(x, m), "Spearman rho": rho,
                     "slope before the 1st boundary": _slope(x[ph1], m[ph1]),
                     "first 10%": float(np.nanmean(m[:k])), "last 10%": float(np.nanmean(m[-k:])),
                     **{f"drop at {b}": drops[b][sd] for b in bounds}})
        for t in tensors:
            slope_t[t][sd] = _slope(x, o[t].to_numpy(dtype=float))
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
    b_rows = _drops_claim(rep, R3_DROPS, cur0, cfg, total, bounds, drops, ctrl)
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
    if h5_bn is not None:
        bn = _bn_arm(rep, h5_bn)
        rep.data(pd.concat([_r3_data(per_seed, cur0).assign(arm="lenet5"), bn.assign(arm="resnet8_bn")],
                           ignore_index=True))
    return rep


def _warmup_end(cur: pd.DataFrame) -> int | None:
    """The first step at the schedule's peak LR after a warm-up (None without a warm-up: the
    peak at the first step)."""
    lr = cur["lr"].to_numpy(dtype=float)
    i = int(np.argmax(np.isclose(lr, lr.max(), rtol=1e-9)))
    return int(cur["step"].iloc[i]) if i > 0 else None


def _bn_arm(rep: Report, h5: str) -> pd.DataFrame:
    """The BatchNorm ResNet arm: R3_DROPS_BN decided by the LeNet arm's drop statistic
    (_drops_claim) at the schedule's x0.1 steps (_lr_boundaries with the schedule's gamma:
    the warm-up's per-step changes are not boundaries), with controls half-way between them;
    the end of the warm-up (a change of slope, not a step) shown beside them, not tested.
    Adds its sections and figure to ``rep``; returns its CSV rows."""
    arm = _Arm(h5)
    res, rids, seeds, rid0, cfg, W, cur0, total, per_seed = (arm.res, arm.rids, arm.seeds, arm.rid0, arm.cfg, arm.W,
                                                              arm.cur0, arm.total, arm.per_seed)
    rep.inputs += [h5, "experiments/adasum/orthogonality_resnet.json"]
    rt = _runtime_from_results(res)["experiment"]
    rep.runtime = {"experiment": rep.runtime.get("experiment", "-") + " (LeNet-5 arm)", "ResNet arm": rt}
    sched = cfg.get("schedule", {})
    bounds = _lr_boundaries(cur0, float(sched.get("gamma", 0.1)))
    mids = _control_steps(bounds, total)
    wu = _warmup_end(cur0)
    drops, ctrl = arm.window_drops(bounds), arm.window_drops(mids)
    wu_drop = arm.window_drops([wu])[wu] if wu is not None else {}
    rows = []
    for sd, o in sorted(per_seed.items()):
        m = o["mean"].to_numpy(dtype=float)
        k = max(1, len(m) // 10)
        row = {"seed": str(sd), "first 10%": float(np.nanmean(m[:k])), "last 10%": float(np.nanmean(m[-k:])),
               **{f"drop at {b}": drops[b][sd] for b in bounds}}
        if wu is not None:
            row[f"end of warm-up ({wu})"] = wu_drop[sd]
        rows.append(row)
    extra = []
    if wu is not None:
        extra.append(_window_row(wu, total, cfg["epochs"], "end of warm-up (the LR stops rising; not tested)",
                                 wu_drop.values()))
    b_rows = _drops_claim(rep, R3_DROPS_BN, cur0, cfg, total, bounds, drops, ctrl, extra)
    acc = res.runs.loc[res.runs["run_id"].isin(rids), "final_test_accuracy"].astype(float)
    am, al, ah, _ = st.mean_interval(acc.tolist(), (0.0, 1.0))
    model, opt = cfg.get("model", {}), cfg.get("optimizer", {})
    rep.section("BatchNorm ResNet arm: the drops at the LR schedule's boundaries")
    rep.text(
        f"ResNet-{model.get('depth')} (width {model.get('width')}, {model.get('norm')} norm with each worker's "
        f"batch statistics, shortcut {model.get('shortcut')}, pad {model.get('pad')}, augment "
        f"{model.get('augment')}) on Fashion-MNIST, W = {W} logical workers x {cfg['batch_size']}, Adasum on the "
        f"workers' momentum-SGD deltas (momentum {opt.get('momentum')}, weight decay {opt.get('weight_decay')}), "
        f"{sched.get('name')} schedule: linear warm-up from {cfg['lr']:g} to {cfg['lr'] * sched.get('scale', 1):g} "
        f"over {sched.get('warmup_epochs', 0):.3g} epochs (peak from step {wu}), x{sched.get('gamma')} at epochs "
        f"{', '.join(f'{e:.3g}' for e in sched.get('milestones', []))} (steps {', '.join(map(str, bounds))}), "
        f"{total} steps ({cfg['epochs']} epochs), seeds {', '.join(map(str, sorted(per_seed)))}; final test accuracy "
        f"{st.fmt_ci(am, al, ah, '.1f', scale=100)}%. The statistic is the LeNet arm's, fixed before these runs: "
        f"per seed the mean orthogonality over tensors in the {R3_WINDOW} steps up to each x{sched.get('gamma')} "
        f"step minus the {R3_WINDOW} after it, controls half-way between the steps, Holm over the steps; a drop a "
        "control shows too is not one at the boundaries (and a rise likewise). The end of the warm-up is a change "
        "of slope, not a step; the test fixed before the runs reads the paper's 'boundaries of learning rate "
        "schedule change' as the recipe's x0.1 steps, so it is shown, not tested.")
    rep.table(pd.DataFrame(rows), "per seed: levels (mean over tensors) and the drops", floatfmt=".3f")
    rep.table(pd.DataFrame(b_rows), "mean [95% CI] over seeds at each x0.1 step, the end of the warm-up and the "
              "controls", floatfmt={"epoch": ".2f"})
    rep.extra_figure("-resnet", _r3_figure(per_seed, cur0[["step", "lr"]], bounds, W, seeds[rid0]))
    return _r3_data(per_seed, cur0)
