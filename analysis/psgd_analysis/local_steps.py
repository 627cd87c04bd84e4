"""R11: Adasum with local steps before communicating (Maleki et al., arXiv:2006.02924 5.2.2-5.2.3,
Table 2: TensorFlow ResNet-50 on TCP, 16 GPUs; 16 local steps (64K effective batch) vs 1 (4K):
84 vs 68 epochs till convergence, 166 vs 175 minutes to accuracy).

Two stages (experiments/adasum/adasum_local_steps_select.json, experiments/adasum/adasum_local_steps.json):
each arm's lr chosen on a validation split (choose_lr), then both arms at their choices, epochs to
a common target (claims). The rules below are fixed before the runs.

The time claim reduces to the epochs claim: the specs' clock prices compute per local batch and one
Adasum per communication round, set to Table 2's communication share, so each arm's simulated time per
epoch is a constant of the formula and time to the target is epochs to the target times it. time_reason
states that from the runs' own per-epoch sim_s, with the epochs ratio at which the two arms would tie;
whether 16 local steps get below it is the epochs question the budget leaves open (NOT TESTED).
"""
from __future__ import annotations

import math
import os
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import stats as st
from .report import Report
from .results import load

SELECT, MAIN, ABLATION = "adasum_local_steps_select", "adasum_local_steps", "adasum_local_steps_ablation"
LONG = "adasum_local_steps_long"  # both arms on one long schedule, the target set as in the main file
#: "converges, in at most this many times the epochs of 1 local step" (paper: 84 / 68 = 1.24)
RATIO_MAX = 1.5
#: the target: this fraction of the 1-local-step arm's seed-mean best test accuracy (the paper's
#: is MLPerf's fixed 74.9% top-1, which its 1-local-step run reaches at 68 epochs)
TARGET_FRAC = 0.99
PAPER = {1: (4096, 2.58, 68, 175.44), 16: (65536, 1.98, 84, 166.32)}  # K: batch, min/epoch, epochs, minutes


#: ImageNet's training images; Adasum rounds per epoch of the paper's 16-local-step run: / 64K
PAPER_IMAGES = 1281167
PAPER_ROUNDS = PAPER_IMAGES / 65536


def rounds_per_epoch(rows) -> float:
    """Steps (Adasum rounds) per epoch of the runs, from their curves' last step and epoch."""
    v = [float(r["curve"]["step"].iloc[-1]) / float(r["curve"]["epoch"].iloc[-1]) for r in rows
         if len(r["curve"]) and float(r["curve"]["epoch"].iloc[-1]) > 0]
    return float(np.mean(v)) if v else math.nan


def sim_s_per_epoch(rows) -> float:
    """Simulated seconds per epoch of the runs, from their curves' last sim_s and epoch (a run's last
    round may pass the budget's last sample: dividing by the curve's epoch, not the budget, counts it)."""
    v = [float(r["curve"]["sim_s"].iloc[-1]) / float(r["curve"]["epoch"].iloc[-1]) for r in rows
         if len(r["curve"]) and float(r["curve"]["epoch"].iloc[-1]) > 0]
    return float(np.mean(v)) if v else math.nan


def time_reason(t1: float, tK: float, K: int, paper: tuple[float, float] | None = None, same: bool = True) -> str:
    """What the time claim reduces to, from the two arms' simulated seconds per epoch t1 (1 local step)
    and tK (K local steps): time to the target is epochs to the target x seconds per epoch, and the seconds
    per epoch are the clock formula's constants (compute per local batch, the same in both arms, plus one
    priced Adasum per round), so K local steps reach the target sooner exactly when they need fewer than
    t1 / tK times the epochs. ``paper``: Table 2's minutes per epoch (1 local step, K), quoted beside;
    ``same``: whether every seed's runs gave these values (no jitter), else they are the seeds' means."""
    r = tK / t1
    pap = (f"; Table 2: {paper[1]:g} / {paper[0]:g} = {paper[1] / paper[0]:.3f}, the share the clock was set "
           f"to" if paper else "")
    return (f"simulated time = compute per local batch (the same in both arms) + one priced Adasum per "
            f"communication round, on the specs' clock; the runs' simulated time per epoch is {t1:.4f} s with "
            f"{arm_label(1)} and {tK:.4f} s with {arm_label(K)} (ratio {r:.3f}{pap}), "
            + ("the same in every seed, " if same else "the means over seeds, ") +
            f"so {arm_label(K)} reach the target in less simulated time exactly when they need fewer than "
            f"{t1 / tK:.2f}x the epochs of {arm_label(1)}, whatever the training does: the time claim is the "
            "epochs claim read through the formula")


def local_steps(cfg: Mapping) -> int:
    a = cfg.get("algorithm", {})
    return int(a.get("local_steps", 1)) if isinstance(a, dict) else 1


def arm_label(K: int) -> str:
    return "1 local step" if K == 1 else f"{K} local steps"


def choose_lr(vals: Mapping[float, Sequence[float]]) -> float:
    """The lr with the highest seed-mean final validation accuracy (a diverged run counts as 0,
    already in vals); ties: the smaller lr. NaN when vals is empty."""
    return st.best_mean_key(vals)


def epochs_to(cur: pd.DataFrame, target: float) -> float:
    """The epoch of the first evaluation whose test accuracy is >= target; NaN when none."""
    c = cur.dropna(subset=["test_accuracy"])
    hit = c[c["test_accuracy"].to_numpy(dtype=float) >= target - 1e-12]
    return float(hit["epoch"].iloc[0]) if len(hit) else math.nan


def ratio_claims(e1: Sequence[float], eK: Sequence[float], budget: float) -> dict[str, tuple]:
    """Per seed, r = epochs(K) / epochs(1). A K run that never reaches the target (NaN) took more
    than `budget` epochs, so its r is only a lower bound, budget / epochs(1): the intervals are
    computed on these values, and a censored seed can decide a claim only on the side a lower
    bound decides (r above a threshold), never the other. A seed whose 1-step run never reaches the
    target has no bound at all: both claims INCONCLUSIVE.
    Returns {"more": (verdict, ci), "at_most": (verdict, ci), "censored": n}: the paper's 16 local
    steps need more epochs than 1 (r > 1) but at most RATIO_MAX times as many (r < RATIO_MAX)."""
    censored = sum(1 for x in eK if not np.isfinite(x))
    if any(not np.isfinite(a) for a in e1):
        ci = (math.nan, math.nan, math.nan, len(e1))
        return {"more": (st.INCONCLUSIVE, ci), "at_most": (st.INCONCLUSIVE, ci), "censored": censored}
    r = [(b if np.isfinite(b) else budget) / a for a, b in zip(e1, eK)]
    ci = st.t_interval(r, bounds=(0.0, math.inf))
    if st.is_constant(r):
        return {"more": (st.INCONCLUSIVE, ci), "at_most": (st.INCONCLUSIVE, ci), "censored": censored}

    def decide(threshold, claim_above):
        v = st.decide(ci[1], ci[2], threshold, "above")  # HOLDS: r > threshold, FAILS: r < threshold
        if censored and v == st.FAILS:  # lower bounds below a threshold say nothing
            v = st.INCONCLUSIVE
        if claim_above:
            return v
        return {st.HOLDS: st.FAILS, st.FAILS: st.HOLDS}.get(v, v)

    return {"more": (decide(1.0, True), ci), "at_most": (decide(RATIO_MAX, False), ci), "censored": censored}


def _rows(path):
    res = load([path])
    out = []
    for _, r in res.runs.iterrows():
        cfg = r["config"]
        out.append({"K": local_steps(cfg), "lr": float(r["lr"]), "seed": int(r["seed"]), "status": r["status"],
                    "val": float(r.get("final_val_accuracy", math.nan)) if r.get("final_val_accuracy") is not None
                    else math.nan, "test": float(r["final_test_accuracy"]) if r["final_test_accuracy"] is not None
                    else math.nan, "curve": res.curve(r["run_id"]), "epochs": float(cfg.get("epochs", math.nan)),
                    "sim_s": float(r["sim_s"]), "wall_s": float(r["wall_s"]), "id": r["run_id"]})
    return res, out


def open_by_budget(verdict: str, censored: int, why: str) -> str:
    """A claim left INCONCLUSIVE while some runs are lower bounds (they missed the target within the
    schedule) is left open by the schedule's length, not by the training: NOT TESTED, saying why. A
    lower bound can only push a value up, so HOLDS/DOES NOT HOLD that rest on the bounds' side stand."""
    if censored and verdict == st.INCONCLUSIVE:
        return f"{st.NOT_TESTED} ({why}; the data alone: {verdict})"
    return verdict


def report(paths: Sequence[str]) -> Report:
    sel_path = next((p for p in paths if os.path.basename(p).startswith(SELECT)), None)
    main_path = next(p for p in paths if os.path.basename(p) == MAIN + ".h5")
    abl_path = next((p for p in paths if os.path.basename(p).startswith(ABLATION)), None)
    long_path = next((p for p in paths if os.path.basename(p).startswith(LONG)), None)
    rep = Report("adasum-local-steps", "R11: Adasum with 16 local steps before communicating (arXiv 5.2.2, Table 2)")
    rep.inputs = [p for p in (main_path, sel_path, abl_path, long_path) if p]
    md = []

    # 1. The lr per arm (validation split).
    chosen, why = {}, ""
    if sel_path:
        _, sel = _rows(sel_path)
        grid: dict[int, dict[float, list[float]]] = {}
        for r in sel:
            v = r["val"] if np.isfinite(r["val"]) and r["status"] != "diverged" else 0.0
            grid.setdefault(r["K"], {}).setdefault(r["lr"], []).append(v)
        chosen = {K: choose_lr(g) for K, g in grid.items()}
        lrs = sorted({lr for g in grid.values() for lr in g})
        md += ["## The learning rate of each arm (validation split)", "",
               f"`{sel_path}`: each arm searched on its own, final validation accuracy (mean over seeds "
               f"{sorted({r['seed'] for r in sel})}; a diverged run counts as 0). Rule (fixed before the runs, "
               "`choose_lr`): the highest mean; ties: the smaller lr.", "",
               "| arm | " + " | ".join(f"lr {lr:g}" for lr in lrs) + " | chosen |",
               "| --- | " + " | ".join("---:" for _ in lrs) + " | ---: |"]
        for K in sorted(grid):
            md.append(f"| {arm_label(K)} | " + " | ".join(
                f"{100 * np.mean(grid[K][lr]):.2f}" if lr in grid[K] else "-" for lr in lrs)
                + f" | **{chosen[K]:g}**" + (" (edge of the grid)" if chosen[K] in (lrs[0], lrs[-1]) else "") + " |")
        md.append("")
    else:
        why = "no learning-rate search in the inputs (experiments/adasum/adasum_local_steps_select.json)"

    # 2. The main runs.
    res, runs = _rows(main_path)
    Ks = sorted({r["K"] for r in runs})
    used = {K: sorted({r["lr"] for r in runs if r["K"] == K}) for K in Ks}
    for K in Ks:
        if K in chosen and not all(math.isclose(x, chosen[K]) for x in used[K]):
            why = (f"the {arm_label(K)} runs use lr {', '.join(f'{x:g}' for x in used[K])}, not {chosen[K]:g}, "
                   "the value its own search chose")
    budget = max(r["epochs"] for r in runs)
    seeds = sorted({r["seed"] for r in runs})
    by = {K: {r["seed"]: r for r in runs if r["K"] == K} for K in Ks}
    K1, KK = Ks[0], Ks[-1]
    common = sorted(set(by[K1]) & set(by[KK]))
    best1 = [float(np.nanmax(by[K1][s]["curve"]["test_accuracy"].to_numpy(dtype=float))) for s in common]
    target = TARGET_FRAC * float(np.mean(best1)) if best1 else math.nan
    e = {K: [epochs_to(by[K][s]["curve"], target) for s in common] for K in (K1, KK)}
    t = {K: [] for K in (K1, KK)}
    for K in (K1, KK):
        for s in common:
            c = by[K][s]["curve"].dropna(subset=["test_accuracy"])
            hit = c[c["test_accuracy"].to_numpy(dtype=float) >= target - 1e-12]
            t[K].append(float(hit["sim_s"].iloc[0]) if len(hit) else math.nan)
    rc = ratio_claims(e[K1], e[KK], budget)
    arm_rows = {K: [by[K][s] for s in common] for K in (K1, KK)}
    per_epoch = {K: sim_s_per_epoch(arm_rows[K]) for K in (K1, KK)}
    rounds = {K: rounds_per_epoch(arm_rows[K]) for K in (K1, KK)}

    md += ["## Epochs to the target", "",
           f"`{main_path}`: each arm at its chosen lr, {budget:g} epochs, seeds {seeds}. Target = "
           f"{TARGET_FRAC:.0%} of the 1-local-step arm's seed-mean best test accuracy = **{100 * target:.2f}%** "
           f"(paper: MLPerf's 74.9% top-1). Per seed, the epoch of the first evaluation at or above it (never: "
           f"more than {budget:g}, so the ratio is a lower bound, {budget:g} / epochs(1 local step), that can only "
           "show a ratio above a threshold).", "",
           "| arm | lr | effective batch | Adasum rounds per epoch | simulated s per epoch | epochs to target "
           "(mean [95% CI]) | reached | final test acc % | simulated s to target || paper: effective batch | rounds "
           "per epoch | min per epoch | epochs till convergence | min to accuracy |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: || ---: | ---: | ---: | ---: | ---: |"]
    for K in (K1, KK):
        W = int(res.runs["workers"].iloc[0])
        B = int(res.runs["batch_size"].iloc[0])
        ev = [x for x in e[K] if np.isfinite(x)]
        p = PAPER.get(K)
        md.append(f"| {arm_label(K)} | {', '.join(f'{x:g}' for x in used[K])} | {W * B * K:,} | "
                  f"{rounds[K]:.2f} | {per_epoch[K]:.4f} | "
                  f"{st.fmt_ci(*st.t_interval(ev)[:3], '.2f') if ev else '-'} | {len(ev)}/{len(common)} | "
                  f"{st.fmt_ci(*st.t_interval([100 * by[K][s]['test'] for s in common])[:3], '.2f')} | "
                  f"{st.fmt_ci(*st.t_interval([x for x in t[K] if np.isfinite(x)])[:3], '.3g') if any(np.isfinite(t[K])) else '-'}"
                  + (f" || {p[0]:,} | {PAPER_IMAGES / p[0]:.2f} | {p[1]} | {p[2]} | {p[3]} |" if p else
                     " || | | | | |"))
    md += ["", f"Adasum rounds per epoch with {arm_label(KK)}: {rounds[KK]:.2f} here (60,000 images / "
           f"{W * B * KK:,}), {PAPER_ROUNDS:.2f} in the paper (ImageNet's 1,281,167 / 65,536): W x local batch was "
           f"chosen to match them. Simulated time per epoch: {per_epoch[KK]:.4f} s with {arm_label(KK)} against "
           f"{per_epoch[K1]:.4f} s with {arm_label(K1)}, ratio {per_epoch[KK] / per_epoch[K1]:.3f} (paper: "
           f"{PAPER[KK][1]:g} / {PAPER[K1][1]:g} min per epoch = {PAPER[KK][1] / PAPER[K1][1]:.3f}, the share the "
           "clock was set to).", ""]
    v_more, ci = rc["more"]
    v_most, _ = rc["at_most"]
    dt = [(b - a) / a for a, b in zip(t[K1], t[KK]) if np.isfinite(a) and np.isfinite(b)]
    dci = st.t_interval(dt)
    v_time = st.INCONCLUSIVE if st.is_constant(dt) or len(dt) < 2 else st.decide(dci[1], dci[2], 0.0, "below")

    def nt(v):
        return f"{st.NOT_TESTED} ({why}; the data alone: {v})" if why else v

    def bc(v):
        if why:
            return nt(v)
        paper = (PAPER[K1][1], PAPER[KK][1]) if K1 == 1 and KK in PAPER else None
        same = all(st.is_constant([sim_s_per_epoch([r]) for r in arm_rows[K]], rel=1e-9) for K in (K1, KK))
        # The clock fixes only the break-even (the per-epoch ratio); whether the epochs ratio is below it
        # is a training result, and the budget that leaves the epochs claim open leaves this one open too.
        miss = rc["censored"]
        return (f"{st.NOT_TESTED} ({time_reason(per_epoch[K1], per_epoch[KK], KK, paper, same)}, which this "
                f"budget leaves open: {miss} of {len(common)} seeds with {arm_label(KK)} miss the target within it; "
                f"the data alone: {v})")

    lb = (f" ({rc['censored']} of {len(common)} seeds never reach the target: their ratio is a lower bound)"
          if rc["censored"] else "")
    ratio_ev = (f"epochs({arm_label(KK)}) / epochs({arm_label(K1)}) per seed: {st.fmt_ci(*ci[:3], '.2f')}{lb} "
                f"(paper 84 / 68 = 1.24); {st.METHOD}")
    claims = [(f"Table 2: {arm_label(KK)} need more epochs to the target than {arm_label(K1)} on the same "
               f"{budget:g}-epoch schedule, a run that misses it counting as a lower bound (paper, at "
               "convergence: 84 > 68)",
               ratio_ev, nt(v_more)),
              (f"Table 2: {arm_label(KK)} still converge, in at most {RATIO_MAX:g}x the epochs of {arm_label(K1)} "
               "(paper: 1.24x)", ratio_ev, nt(v_most)),
              (f"Table 2: {arm_label(KK)} reach the target in less simulated time than {arm_label(K1)} "
               "(paper: 166 vs 175 min on TCP)",
               f"(T({arm_label(KK)}) - T({arm_label(K1)})) / T({arm_label(K1)}): "
               + (st.fmt_ci(*dci[:3], '+.2%') if dt else f"- ({len(dt)} of {len(common)} seeds reach it in both arms)"),
               bc(v_time))]
    # Ablation: 16 local steps with more epochs (the paper trains each arm until it converges).
    abl_wall = 0.0
    if abl_path:
        _, abl = _rows(abl_path)
        abl_wall = sum(r["wall_s"] for r in abl)
        ab = {r["seed"]: r for r in abl}
        both = [s_ for s_ in common if s_ in ab]
        eb = [epochs_to(ab[s_]["curve"], target) for s_ in both]
        e1b = [e[K1][common.index(s_)] for s_ in both]
        budget_b = max(r["epochs"] for r in abl)
        rb = ratio_claims(e1b, eb, budget_b)
        reached = [x for x in eb if np.isfinite(x)]
        md += ["## Ablation: 16 local steps with twice the budget", "",
               f"`{abl_path}`: {arm_label(KK)} at lr {abl[0]['lr']:g} for {budget_b:g} epochs (the schedule stretched "
               f"over them), seeds {sorted(ab)}; epochs to the same target ({100 * target:.2f}%) against the "
               f"{arm_label(K1)} arm's (never: more than {budget_b:g}, a lower bound of the ratio).", "",
               f"- Reached by {len(reached)}/{len(eb)} seeds, at {st.fmt_ci(*st.t_interval(reached)[:3], '.2f') if reached else '-'} "
               f"epochs; final test accuracy {st.fmt_ci(*st.t_interval([100 * ab[s_]['test'] for s_ in both], bounds=(0, 100))[:3], '.2f')}%.",
               f"- Adasum rounds: {rounds_per_epoch(abl):.2f} per epoch, "
               f"{max(int(r['curve']['step'].iloc[-1]) for r in abl if len(r['curve']))} in the "
               f"budget (the paper's {arm_label(KK)} run: {PAPER_ROUNDS * PAPER[KK][2]:,.0f} in its "
               f"{PAPER[KK][2]} epochs).", ""]
        rb_ev = (f"epochs({arm_label(KK)}, {budget_b:g}-epoch budget) / epochs({arm_label(K1)}) per seed: "
                 f"{st.fmt_ci(*rb['at_most'][1][:3], '.2f')}"
                 + (f" ({rb['censored']} of {len(eb)} seeds never reach the target: lower bounds)" if rb["censored"] else ""))
        claims.append((f"Ablation: with a {budget_b:g}-epoch budget, {arm_label(KK)} converge in at most {RATIO_MAX:g}x "
                       f"the epochs of {arm_label(K1)}", rb_ev, rb["at_most"][0]))
    # Both arms on one long schedule (the same LR decay for both, as the paper changed no other
    # hyper-parameter), to a target set the same way from this file's 1-local-step runs: the
    # epochs and time claims without the 8-epoch budget's lower bounds.
    long_wall = 0.0
    if long_path:
        _, lg = _rows(long_path)
        long_wall = sum(r["wall_s"] for r in lg)
        lby = {K: {r["seed"]: r for r in lg if r["K"] == K} for K in (K1, KK)}
        lc = sorted(set(lby[K1]) & set(lby[KK]))
        lbudget = max(r["epochs"] for r in lg)
        lbest = [float(np.nanmax(lby[K1][s_]["curve"]["test_accuracy"].to_numpy(dtype=float))) for s_ in lc]
        ltarget = TARGET_FRAC * float(np.mean(lbest)) if lbest else math.nan
        le = {K: [epochs_to(lby[K][s_]["curve"], ltarget) for s_ in lc] for K in (K1, KK)}
        lt = {K: [] for K in (K1, KK)}
        for K in (K1, KK):
            for s_ in lc:
                c = lby[K][s_]["curve"].dropna(subset=["test_accuracy"])
                hit = c[c["test_accuracy"].to_numpy(dtype=float) >= ltarget - 1e-12]
                lt[K].append(float(hit["sim_s"].iloc[0]) if len(hit) else math.nan)
        lrc = ratio_claims(le[K1], le[KK], lbudget)
        # Time to the target: a 16-step run that never reaches it took more than its whole run's
        # simulated time, a lower bound, which (as in ratio_claims) can decide only the side a lower
        # bound decides: more time, never less.
        lend = {s_: float(lby[KK][s_]["sim_s"]) for s_ in lc}
        ldt = [((b if np.isfinite(b) else lend[s_]) - a) / a for s_, a, b in zip(lc, lt[K1], lt[KK]) if np.isfinite(a)]
        lcens = sum(1 for b in lt[KK] if not np.isfinite(b))
        ldci = st.t_interval(ldt)
        lv_time = (st.INCONCLUSIVE if st.is_constant(ldt) or len(ldt) < 2 or len(ldt) < len(lc)
                   else st.decide(ldci[1], ldci[2], 0.0, "below"))
        if lcens and lv_time == st.HOLDS:
            lv_time = st.INCONCLUSIVE
        # How the epochs ratio moves with the target (descriptive; the claims use the 99% fixed before the runs)
        sens = []
        for frac in (0.97, 0.98, 0.985, 0.99):
            tg = frac * float(np.mean(lbest))
            a_ = [epochs_to(lby[K1][s_]["curve"], tg) for s_ in lc]
            b_ = [epochs_to(lby[KK][s_]["curve"], tg) for s_ in lc]
            rr = ratio_claims(a_, b_, lbudget)
            sens.append(f"{frac:.1%}: {st.fmt_ci(*rr['more'][1][:3], '.2f')} ({rr['censored']} of {len(lc)} lower bounds)")
        reached = {K: sum(1 for x in le[K] if np.isfinite(x)) for K in (K1, KK)}
        md += [f"## Both arms on one {lbudget:g}-epoch schedule", "",
               f"`{long_path}`: both arms at lr {lg[0]['lr']:g} on the same {lbudget:g}-epoch warmup_linear schedule, "
               f"seeds {lc}. Target = {TARGET_FRAC:.0%} of this file's 1-local-step seed-mean best test accuracy = "
               f"**{100 * ltarget:.2f}%**; reached by {reached[K1]}/{len(lc)} runs with {arm_label(K1)} and "
               f"{reached[KK]}/{len(lc)} with {arm_label(KK)} (a run that never does counts as a lower bound).", "",
               f"| seed | epochs ({arm_label(K1)}) | epochs ({arm_label(KK)}) | sim s ({arm_label(K1)}) | "
               f"sim s ({arm_label(KK)}) |", "| ---: | ---: | ---: | ---: | ---: |"]
        for i, s_ in enumerate(lc):
            md.append(f"| {s_} | {le[K1][i]:.2f} | {le[KK][i]:.2f} | {lt[K1][i]:.3f} | {lt[KK][i]:.3f} |")
        md += ["", "The epochs ratio at other targets (a fraction of the same 1-local-step best; descriptive, the "
               "claims use the 99% fixed before the runs): " + "; ".join(sens) + ". A run that misses the target "
               f"counts {lbudget:g} epochs (lower bound); its simulated time, the run's whole sim_s (lower bound). The "
               f"clock fixes the time break-even at {per_epoch[K1] / per_epoch[KK]:.2f}x the epochs."]
        # A run that misses the target within the schedule is a lower bound: it can show a ratio (or a
        # time) above a threshold, never below it. When such runs leave a claim INCONCLUSIVE, the
        # schedule's length decides it, not the training: NOT TESTED, with the caps the budget sets.
        caps = [lbudget / a for a, b in zip(le[K1], le[KK]) if np.isfinite(a) and not np.isfinite(b)]
        v_at_most = open_by_budget(
            lrc["at_most"][0], lrc["censored"],
            f"{lrc['censored']} of {len(lc)} runs with {arm_label(KK)} never reach the target within the {lbudget:g}-epoch "
            f"schedule, so their ratios are lower bounds capped at {lbudget:g} / epochs({arm_label(K1)}) = "
            f"{min(caps, default=math.nan):.2f} to {max(caps, default=math.nan):.2f}: a lower bound can show a ratio above "
            f"{RATIO_MAX:g}x, never below it, and the mean of the capped ratios is {lrc['more'][1][0]:.2f}, so the "
            "schedule's length, not the training, leaves the claim open; the paper trains each arm to convergence")
        tcaps = [(lend[s_] - a) / a for s_, a, b in zip(lc, lt[K1], lt[KK]) if np.isfinite(a) and not np.isfinite(b)]
        lv_time = open_by_budget(
            lv_time, lcens,
            f"{lcens} of {len(lc)} runs with {arm_label(KK)} never reach the target within the {lbudget:g}-epoch "
            f"schedule, so their times are lower bounds (the whole run's simulated time, "
            f"{min(tcaps, default=math.nan):+.1%} to {max(tcaps, default=math.nan):+.1%} against the 1-local-step time "
            "to the target): a lower bound can show more time, never less, so the schedule's length, not the "
            "training, leaves the claim open")
        lr_ev = (f"epochs({arm_label(KK)}) / epochs({arm_label(K1)}) per seed: {st.fmt_ci(*lrc['more'][1][:3], '.2f')}"
                 + (f" ({lrc['censored']} of {len(lc)} lower bounds)" if lrc["censored"] else "") + " (paper 1.24)")
        claims += [
            (f"Long schedule: {arm_label(KK)} take more epochs to the target than {arm_label(K1)}, both on one "
             f"{lbudget:g}-epoch schedule (paper, at convergence: 84 > 68)", lr_ev, lrc["more"][0]),
            (f"Long schedule: {arm_label(KK)} reach the target within {RATIO_MAX:g}x the epochs of {arm_label(K1)}, both "
             f"on one {lbudget:g}-epoch schedule (paper: 1.24x)", lr_ev, v_at_most),
            (f"Long schedule: {arm_label(KK)} get to the target in less simulated time than {arm_label(K1)} on the "
             "clock set to Table 2's per-epoch times (paper: 166 vs 175 min)",
             f"(T({arm_label(KK)}) - T({arm_label(K1)})) / T({arm_label(K1)}): "
             + (st.fmt_ci(*ldci[:3], '+.2%') if len(ldt) == len(lc) else
                f"- ({len(ldt)} of {len(lc)} seeds have a 1-local-step time)")
             + (f" ({lcens} of {len(lc)} lower bounds)" if lcens else "")
             + f"; the clock's break-even is {per_epoch[K1] / per_epoch[KK]:.2f}x the epochs, so this is the epochs "
             "ratio read through the clock", lv_time)]
        md.append("")
    md += ["| claim | ours | verdict |", "| --- | --- | --- |"]
    md += [f"| {c} | {ev_} | **{v}** |" for c, ev_, v in claims]
    md.append("")
    for c, ev_, v in claims:
        rep.claim_verdict(c, v, ev_)
    rep.seeds = len(common)
    wall = (sum(r["wall_s"] for r in runs) + (sum(r["wall_s"] for r in _rows(sel_path)[1]) if sel_path else 0.0)
            + abl_wall + long_wall)
    rep.runtime = {"experiment": f"{wall / 60:.1f} min (sum of run wall times)"}
    rep.text("\n".join(md))
    data_rows = [[f"{budget:g}-epoch main", arm_label(r["K"]), r["lr"], r["seed"], r["status"], r["test"], r["sim_s"],
                  r["wall_s"], target, epochs_to(r["curve"], target), r["id"]] for r in runs]
    if long_path:
        data_rows += [[f"{lbudget:g}-epoch shared", arm_label(r["K"]), r["lr"], r["seed"], r["status"], r["test"],
                       r["sim_s"], r["wall_s"], ltarget, epochs_to(r["curve"], ltarget), r["id"]] for r in lg]
    rep.data(pd.DataFrame(data_rows, columns=["schedule", "arm", "lr", "seed", "status", "final_test_accuracy",
                                              "sim_s", "wall_s", "target", "epochs_to_target", "run_id"]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for K, col in ((K1, "tab:blue"), (KK, "tab:red")):
        for s in common:
            c = by[K][s]["curve"].dropna(subset=["test_accuracy"])
            ax.plot(c["epoch"], 100 * c["test_accuracy"], color=col, lw=0.8, alpha=0.6,
                    label=f"{arm_label(K)} (lr {used[K][0]:g})" if s == common[0] else None)
    if np.isfinite(target):
        ax.axhline(100 * target, color="k", ls="--", lw=0.8, label=f"target {100 * target:.1f}%")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy %")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Adasum, 16 workers: local steps before communicating", fontsize=9)
    fig.tight_layout()
    rep.figure(fig)
    return rep
