"""R9 of DESIGN.md section 11 (adaptive-figures, adaptive-bibtex): Adaptive SGD time-to-accuracy
(Ma et al., arXiv:2110.07029, section 5.2.1, Figs. 6-8 and 12).

    figures(RESULTS.h5, target, LR_SEARCH.h5, LR_ALL.h5)  -> Report

(analysis/reproduce.py; the rules in mk/targets.mk). The paper's protocol (section 5.1-5.2.1):
one lr shared by every algorithm, chosen by the paper's rule on the validation split
(LR_ALL.h5: every arm at every worker count over the grid; adaptive_rules.lr_rule), the
1-worker search beside it (LR_SEARCH.h5: at 1 worker every method is mini-batch SGD), then per
worker count time-to-accuracy on a common simulated-time budget and the check "Adaptive SGD
reaches the best accuracy first"; the report's CSV has one row per run, its figures are
Figs. 6-7 (<target>.png), the lr search (<target>-lr.png) and Fig. 12 (<target>-workers.png).
"""
import dataclasses
import math
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import paper  # noqa: E402
from . import results as _results  # noqa: E402
from . import stats as st  # noqa: E402
from .adaptive_plots import band, worker_panels  # noqa: E402
from .adaptive_rules import lr_rule, scaling  # noqa: E402
from .adaptive_runs import (ADAPTIVE_DEFAULTS, MINIBATCH, PAPER_ARMS, _to_report, arm_label,  # noqa: E402
                            clock_text, fmt, nanmax, per_worker, run_rows, time_to, within)


# The paper's Table/Fig. numbers we compare shapes with (section 5.2).
PAPER_NOTE = paper.R9_NOTE


ARM_COLORS = {"Adaptive": "tab:red", "Elastic (paper, gamma 0.9)": "tab:purple",
              "Grad. aggregation": "tab:green", "Elastic, gamma 0 (extra)": "tab:blue"}


def _figure_rows(path, base_mb, lr_search):
    """The runs of one results file as row dicts with their arm, seed and best validation
    P@1. lr_search: the file is the 1-worker learning-rate search (mini-batch SGD)."""
    res = _results.load(path)
    rows = []
    for r in run_rows(res):
        cfg = r["run"]["config"]
        r["arm"] = MINIBATCH if lr_search else arm_label(cfg, base_mb)
        r["seed"] = int(cfg.get("seed", 1))
        v = r["run"]["summary"].get("best_val_accuracy")
        r["best_val"] = float("nan") if v is None else float(v)
        r["file"] = path
        c = r["run"]["curves"]
        st_ = np.asarray(c["step"], dtype=float)
        ep = np.asarray(c["epoch"], dtype=float) if "epoch" in c else np.array([])
        # epochs of the training set one mega-batch is (the epoch column counts samples)
        r["epochs_per_mb"] = float(ep[-1] / st_[-1]) if len(ep) and len(st_) and st_[-1] > 0 else float("nan")
        # how far the test P@1 has fallen from its best by the end of the run (overfitting), on
        # means over a tenth of the run so that evaluation-to-evaluation noise at a large lr is not
        # read as a fall: the best k-point moving mean minus the mean of the last k points
        acc = np.asarray(c["test_accuracy"], dtype=float)
        acc = acc[np.isfinite(acc)]
        k = max(1, len(acc) // 10)
        r["drop"] = (float(np.max(np.convolve(acc, np.ones(k) / k, mode="valid")) - np.mean(acc[-k:]))
                     if len(acc) else float("nan"))
        rows.append(r)
    return res, rows


@dataclasses.dataclass
class _SharedLR:
    """Section 5.1's shared lr: the 1-worker search, the paper's rule over every arm and what the
    multi-worker runs use."""
    lrs1: list            # the 1-worker search's grid
    grid: dict            # lr -> mean interval over seeds of mini-batch SGD's best P@1 at 1 worker
    chosen: Any           # the 1-worker search's choice (None without it)
    main_lrs: list        # the lrs of the multi-worker runs
    shared: Any           # the lr every multi-worker cell is read at
    rule_table: dict      # lr_rule's table over every arm (empty without lr_all_path)
    rule_chosen: Any      # lr_rule's choice (None without lr_all_path)
    rule_mean: Any        # the rule's other reading, the highest mean over the arms
    sel_seeds: Any        # the seeds of lr_all_path
    want: Any             # the choice the main runs must match
    mismatch: bool        # the main runs do not run it
    why_nt: str           # why the claims are NOT TESTED ('' when they are tested)


def _load_rows(path, lr_path):
    """The main file's runs as rows, its spec and the mega-batch size of its base; with lr_path, the
    1-worker lr search's rows in place of the main file's 1-worker runs (and its spec)."""
    res = _results.load(path)
    spec = res.experiment
    base_mb = spec.get("base", {}).get("algorithm", {}).get("megabatch", 100)
    _, rows = _figure_rows(path, base_mb, False)
    lr_spec = None
    if lr_path:
        lr_res, w1 = _figure_rows(lr_path, base_mb, True)
        lr_spec = lr_res.experiment
        rows = [r for r in rows if r["workers"] != 1] + w1
    return spec, lr_spec, base_mb, rows


def _shared_lr(rows, crit, lr_all_path, base_mb):
    """The shared lr (section 5.1): the 1-worker search, the paper's rule over every arm from
    lr_all_path (lr_rule), the lr the multi-worker runs use and whether the claims are tested."""
    # 1. The shared lr (section 5.1): the grid value (powers of 10) with the highest mean over
    # seeds of the best validation P@1 of mini-batch SGD at 1 worker; every cell runs at it.
    search = [r for r in rows if r["workers"] == 1]
    lrs1 = sorted({r["lr"] for r in search})
    grid = {lr: st.mean_interval([r[crit] for r in search if r["lr"] == lr], (0.0, 1.0)) for lr in lrs1}
    chosen = max(lrs1, key=lambda lr: grid[lr][0]) if lrs1 else None
    multi = [r for r in rows if r["workers"] > 1]
    main_lrs = sorted({r["lr"] for r in multi})
    if chosen is not None and any(math.isclose(chosen, x) for x in main_lrs):
        shared = next(x for x in main_lrs if math.isclose(chosen, x))
    else:
        shared = main_lrs[0] if main_lrs else chosen
    rule_table, rule_chosen, rule_mean = {}, None, None
    sel_seeds = None
    if lr_all_path:
        _, sel_rows = _figure_rows(lr_all_path, base_mb, False)
        rule_table, rule_chosen, rule_mean = lr_rule(sel_rows)
        sel_seeds = sorted({r["seed"] for r in sel_rows})
    # the choice the main runs must match: the paper's rule when measured, else the 1-worker search
    want = rule_chosen if rule_chosen is not None else chosen
    if want is not None and any(math.isclose(want, x) for x in main_lrs):
        shared = next(x for x in main_lrs if math.isclose(want, x))
    mismatch = want is not None and shared is not None and not math.isclose(want, shared)
    why_nt = ""
    if rule_chosen is None:
        why_nt = ("the shared LR is chosen for mini-batch SGD at W = 1, not as the paper's best accuracy across all the "
                  "algorithms (5.1; experiments/adaptive/adaptive_xml_lr_all.json measures that rule): the 1-worker choice cannot "
                  "see how the merge-based arms fare at it, so the LR choice can decide the ordering")
    elif mismatch:
        why_nt = (f"the multi-worker runs use lr {shared:g}, not {rule_chosen:g}, the value the paper's rule (5.1) "
                  "chose on validation")
    return _SharedLR(lrs1, grid, chosen, main_lrs, shared, rule_table, rule_chosen, rule_mean, sel_seeds, want,
                     mismatch, why_nt)


def _intro_md(path, lr_path, spec, lr_spec, rows, seeds, base_mb, ep_mb, n_mb):
    """The report's head: inputs, the clock, the paper's numbers, the statistics and the protocol."""
    md = ["# Adaptive SGD: time-to-accuracy (R9)", "",
          f"Results: `{path}`" + (f" and `{lr_path}` (the 1-worker lr search)" if lr_path else "") +
          f". Experiments: {spec['name']}" + (f" + {lr_spec['name']}" if lr_spec else "") +
          f" ({len(rows)} runs, seeds {seeds}). Precision@1 on the test set after every mega-batch; time is "
          f"{clock_text(spec)}. The time axis of Fig. 6 is that clock, not a measured one.", "",
          PAPER_NOTE, "",
          f"Statistics: {st.METHOD}, n = {len(seeds)} seeds per cell. A verdict is HOLDS / DOES NOT "
          "HOLD only when the interval decides it; otherwise INCONCLUSIVE (interval shown).", "",
          "Protocol (section 5.1-5.2.1): one learning rate for b_max, chosen from a grid in powers of 10 "
          "and shared by every algorithm; at 1 worker every method is mini-batch SGD (no merge momentum), "
          "so the 1-worker row is one arm and the lr search; the paper's Elastic is elastic_sgd with Adaptive "
          "SGD's merge momentum gamma = 0.9 (same model update rule); gradient aggregation has batch/W per "
          f"worker. A mega-batch is {base_mb} batches of b_max = {spec['base'].get('batch_size')} samples, "
          f"{ep_mb:.3g} epoch(s) of the training rows; {n_mb} mega-batches ({ep_mb * n_mb:.3g} epochs). "
          "Time budgets are equal across arms: at each worker count and seed, every arm is cut at the "
          "simulated time of the arm that finishes its mega-batches first (common time axis).", ""]
    return md


def _lr_md(lr, has_val, lr_all_path):
    """The shared lr's sections: the 1-worker search, the paper's rule and what the runs use."""
    lrs1, grid, chosen, shared, want, mismatch = lr.lrs1, lr.grid, lr.chosen, lr.shared, lr.want, lr.mismatch
    rule_table, rule_chosen, rule_mean, sel_seeds = lr.rule_table, lr.rule_chosen, lr.rule_mean, lr.sel_seeds
    md = []
    md += [f"## Shared learning rate (mean over seeds of the best {'validation' if has_val else 'test'} "
           "P@1 of mini-batch SGD at 1 worker)", "",
           "| lr | " + " | ".join(f"{lr:g}" for lr in lrs1) + " | chosen |",
           "| --- | " + " | ".join("---:" for _ in lrs1) + " | ---: |",
           f"| best {'val' if has_val else 'test'} P@1 | " +
           " | ".join(st.fmt_ci(*grid[lr][:3]) for lr in lrs1) +
           f" | **{chosen:g}** |" if chosen is not None else "| - | - |", ""]
    if chosen is not None and chosen in (lrs1[0], lrs1[-1]) and len(lrs1) > 1:
        md += [f"- The chosen lr {chosen:g} is at the edge of the grid.", ""]
    if rule_table:
        lrs_all = sorted({lr for d in rule_table.values() for lr in d})
        md += ["## Shared learning rate by the paper's rule (5.1: the best accuracy across all the algorithms)", "",
               f"`{lr_all_path}`: every arm at every worker count over the grid, seeds {sel_seeds} (not the main "
               "seeds), mean over seeds of the best validation P@1 (a diverged run counts as 0). Rule (fixed before "
               "the runs, `lr_rule`): the lr whose best cell is the highest.", "",
               "| workers | arm | " + " | ".join(f"lr {lr:g}" for lr in lrs_all) + " |",
               "| ---: | --- | " + " | ".join("---:" for _ in lrs_all) + " |"]
        for (W, a), d in sorted(rule_table.items()):
            md.append(f"| {W} | {a} | " + " | ".join(fmt(d[lr]) if lr in d else "-" for lr in lrs_all) + " |")
        md += ["", f"- Chosen by the rule: **lr {rule_chosen:g}**"
               + (" (the edge of the grid)" if rule_chosen in (lrs_all[0], lrs_all[-1]) and len(lrs_all) > 1 else "")
               + f"; the other reading (the highest mean over the arms) chooses lr {rule_mean:g}"
               + (" too." if math.isclose(rule_mean, rule_chosen) else
                  ": the two readings differ, so the choice rests on the reading.")
               + (f" The 1-worker search (above) chose {chosen:g}." if chosen is not None else ""), ""]
    if mismatch:
        md += [f"- **The multi-worker runs use lr {shared:g}, not the choice {want:g}**: the "
               "protocol's shared lr is not what ran, so the claims below are NOT TESTED. Set the spec's "
               f"base lr to {want:g} and rerun.", ""]
    else:
        md += [f"- Every arm at every worker count runs at lr {shared:g} (rates of smaller batches "
               "follow the linear scaling rule inside Adaptive SGD, section 5.1).", ""]
    return md


def _equal_budget(rows, arms, seeds, W, lr):
    """The arms at W workers and this lr, and per seed {arm: run} cut at a common time budget (the
    first arm to finish), with best_T, final_T, the 99% target and the time to it (t99c censored)."""
    here = [a for a in arms if any(r["workers"] == W and r["arm"] == a and math.isclose(r["lr"], lr)
                                   for r in rows)]
    chosen_rows = {a: [r for r in rows if r["workers"] == W and r["arm"] == a and math.isclose(r["lr"], lr)]
                   for a in here}
    per_seed = {}
    for s_ in seeds:
        runs = {a: next((r for r in chosen_rows[a] if r["seed"] == s_), None) for a in here}
        if not runs or any(v is None for v in runs.values()):
            continue
        budget = min(r["sim_s"] for r in runs.values())
        for r in runs.values():
            c = r["run"]["curves"]
            m = within(c, budget)
            acc = np.asarray(c["test_accuracy"], dtype=float)[m]
            r["budget"] = budget
            r["best_T"] = nanmax(acc) if len(acc) else float("nan")
            r["final_T"] = float(acc[-1]) if len(acc) else float("nan")
        ref = [a for a in PAPER_ARMS + (MINIBATCH,) if a in runs]
        top = max(runs[a]["best_T"] for a in ref) if ref else max(r["best_T"] for r in runs.values())
        for r in runs.values():
            r["target"] = 0.99 * top
            r["t99"] = time_to(r["run"]["curves"], 0.99 * top, budget)
            # never reached within the budget: censored at the budget (conservative for
            # the arm that never gets there: counts as reaching it at the very end)
            r["t99c"] = r["t99"] if r["t99"] is not None else budget
        per_seed[s_] = runs
    return here, per_seed


def _worker_sections(rows, arms, seeds, Ws, shared, why_nt):
    """Per worker count, at the shared lr: each arm's statistics within the equal time budget and the
    check of every Adaptive arm against the paper's baselines. Returns (md lines, cell: (W, arm) ->
    per-seed rows, the paper-default Adaptive's verdicts, the ablations')."""
    md = []
    cell = {}  # (W, arm) -> list of per-seed dicts
    ablation_claims, verdicts = [], []
    for W in Ws:
        here, per_seed = _equal_budget(rows, arms, seeds, W, shared)
        for a in here:
            cell[(W, a)] = [per_seed[s_][a] for s_ in per_seed]
        md += [f"## {W} worker{'s' if W > 1 else ''}", "",
               "Per seed, target = 99% of the best P@1 any of the paper's arms reaches within "
               "the common time budget; mean [95% interval] over seeds. 'drop' = the best mean P@1 over a tenth "
               "of the run's evaluations minus the mean of its last tenth (overfitting shows as a drop).", "",
               "| arm | lr | best P@1 in budget | final P@1 at budget | time to 99% target (ms) | reached "
               "| budget (ms) | sim time of the whole run (ms) | drop after best |",
               "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for a in here:
            L = cell[(W, a)]
            if not L:
                continue
            b = st.mean_interval([r["best_T"] for r in L], (0.0, 1.0))
            f = st.mean_interval([r["final_T"] for r in L], (0.0, 1.0))
            t = st.mean_interval([r["t99c"] for r in L], (0.0, math.inf))
            dr = st.mean_interval([r["drop"] for r in L], (0.0, 1.0))
            reached = sum(r["t99"] is not None for r in L)
            md.append(f"| {a} | {shared:g} | {st.fmt_ci(*b[:3])} | {st.fmt_ci(*f[:3])} | "
                      f"{st.fmt_ci(*t[:3], spec='.1f', scale=1e3)} | {reached}/{len(L)} | "
                      f"{np.mean([r['budget'] for r in L]) * 1e3:.1f} | "
                      f"{np.mean([r['sim_s'] for r in L]) * 1e3:.1f} | {st.fmt_ci(*dr[:3])} |")
        md.append("")
        if W < 2 or not per_seed or not all(a in here for a in PAPER_ARMS):
            continue

        def paired(arm):
            """arm's time to target minus the fastest of the paper's other arms, per seed."""
            d = [per_seed[s_][arm]["t99c"] - min(per_seed[s_][b]["t99c"] for b in PAPER_ARMS if b != "Adaptive")
                 for s_ in per_seed]
            g = [per_seed[s_][arm]["best_T"] - max(per_seed[s_][b]["best_T"] for b in PAPER_ARMS if b != "Adaptive")
                 for s_ in per_seed]
            return st.mean_interval(d), st.mean_interval(g, (-1.0, 1.0)), d, g

        for a in here:
            if not a.startswith("Adaptive"):
                continue
            (dm, dlo, dhi, n), (gm, glo, ghi, _), d, g = paired(a)
            v_t = st.INCONCLUSIVE if st.is_constant(d) else st.decide(dlo, dhi, 0.0, "below")
            v_g = st.INCONCLUSIVE if st.is_constant(g) else st.decide(glo, ghi, 0.0, "above")
            # both parts must hold; DOES NOT HOLD needs Holm over the two against the claim
            parts = [(d, 0.0, "below", None), (g, 0.0, "above", (-1.0, 1.0))]
            v = st.combine_parts(parts)
            if why_nt:
                v = "{} ({}; the data alone: {})".format(st.NOT_TESTED, why_nt, v)
            rec = (W, a, v, v_t, v_g, (dm, dlo, dhi), (gm, glo, ghi), n, parts)
            (verdicts if a == "Adaptive" else ablation_claims).append(rec)
            md.append(f"- {a}: time to target minus the fastest paper baseline "
                      f"{st.fmt_ci(dm, dlo, dhi, '.1f', 1e3)} ms -> {v_t}; "
                      f"best P@1 in budget minus the best paper baseline {st.fmt_ci(gm, glo, ghi, '+.4f')} "
                      f"-> {v_g}.")
        md.append("")
    return md, cell, verdicts, ablation_claims


def _check_md(verdicts, why_nt):
    """The check's section: Adaptive SGD reaches the highest accuracy first, per worker count."""
    md = []
    # every worker count's two parts, Holm over all of them against the claim
    overall = st.combine_parts([p for v in verdicts for p in v[8]])
    if why_nt and verdicts:
        overall = f"{st.NOT_TESTED} ({why_nt})"
    md += ["## Check: Adaptive SGD reaches the highest accuracy first (heterogeneous workers, paper defaults)", "",
           "Claim (paper section 5.2.1, Figs. 6-7), per worker count >= 2: Adaptive's time to 99% of the best "
           "P@1 is below the fastest of the paper's baselines (paired difference < 0) and its best P@1 "
           "within the common time budget is above theirs (difference > 0): HOLDS when both 95% intervals "
           "over seeds are on the claimed side, DOES NOT HOLD when Holm over the parts' one-sided p-values "
           "against the claim rejects one (stats.combine_parts; the overall line: every worker count's "
           "parts).", ""]
    for W, a, v, v_t, v_g, d, g, n, _ in verdicts:
        md.append(f"- {W} workers: **{v}** (time: {v_t}, accuracy: {v_g}; n = {n})")
    md += ["", f"**Overall: {overall}**", ""]
    return md


def _other_lr_md(rows, arms, seeds, Ws, lr):
    """The same check at the lr rule's other reading, when the main runs have it (not a verdict)."""
    main_lrs, rule_mean, shared = lr.main_lrs, lr.rule_mean, lr.shared
    md = []
    # The lr rule's other reading (the highest mean over the cells), when the main runs have it too: the
    # same statistics there, shown (not a verdict: the rule fixed before the runs chose `shared`).
    other = next((x for x in main_lrs if rule_mean is not None and math.isclose(x, rule_mean)
                  and not math.isclose(x, shared)), None)
    if other is not None:
        md += [f"## The same check at lr {other:g}, the rule's other reading", "",
               f"Not a verdict (the rule fixed before the runs chose lr {shared:g}); shown because the two readings "
               "differ. Adaptive minus the best of the paper's other arms, paired by seed, each seed cut at its "
               "common time budget:", "",
               "| workers | Adaptive best P@1 in budget | best other arm's | difference | time to 99% target minus the "
               "fastest other (ms) |", "| ---: | ---: | ---: | ---: | ---: |"]
        for W in Ws:
            here_o, ps = _equal_budget(rows, arms, seeds, W, other)
            if W < 2 or not ps or not all(a in here_o for a in PAPER_ARMS):
                continue
            others = [b for b in PAPER_ARMS if b != "Adaptive"]
            ad = [ps[s_]["Adaptive"]["best_T"] for s_ in ps]
            bo = [max(ps[s_][b]["best_T"] for b in others) for s_ in ps]
            g = [x - y for x, y in zip(ad, bo)]
            d = [ps[s_]["Adaptive"]["t99c"] - min(ps[s_][b]["t99c"] for b in others) for s_ in ps]
            md.append(f"| {W} | {st.fmt_ci(*st.mean_interval(ad, (0.0, 1.0))[:3])} | "
                      f"{st.fmt_ci(*st.mean_interval(bo, (0.0, 1.0))[:3])} | "
                      f"{st.fmt_ci(*st.mean_interval(g, (-1.0, 1.0))[:3], '+.4f')} | "
                      f"{st.fmt_ci(*st.mean_interval(d)[:3], '+.1f', 1e3)} |")
        md.append("")
    return md


def _ablation_md(ablation_claims):
    """The ablation arms' verdicts (the same statistics, replacing paper-default Adaptive)."""
    md = []
    if ablation_claims:
        md += ["## Ablation (same statistics, replacing paper-default Adaptive)", ""]
        for W, a, v, v_t, v_g, d, g, n, _ in ablation_claims:
            md.append(f"- {W} workers, {a}: **{v}** (time diff {st.fmt_ci(*d, '.1f', 1e3)} ms; "
                      f"accuracy diff {st.fmt_ci(*g, '+.4f')})")
        md.append("")
    return md


def _overfit_md(cell, ep_mb, n_mb):
    """The overfitting check: how far each arm's P@1 falls from its best within the run."""
    md = []
    # Overfitting: does a plain-SGD arm's P@1 fall from its best within the run? (mini-batch SGD and
    # gradient aggregation: no merge rule of their own. The merge-momentum arms' falls are reported
    # beside their training loss: a loss that ends far above its minimum is the model growing.)
    PLAIN = (MINIBATCH, "Grad. aggregation")
    refs = [r for (W, a), L in cell.items() if a in PLAIN for r in L if np.isfinite(r["drop"])]
    adas = [r for (W, a), L in cell.items() if a == "Adaptive" for r in L if np.isfinite(r["drop"])]
    overfit = False
    if refs:
        by_arm = {(W, a): float(np.mean([r["drop"] for r in L])) for (W, a), L in cell.items() if a in PLAIN and L}
        worst = max(by_arm.items(), key=lambda kv: kv[1])
        overfit = worst[1] > 0.01
        others = {(W, a): float(np.mean([r["drop"] for r in L])) for (W, a), L in cell.items()
                  if a not in PLAIN and L}
        md += ["## Overfitting check", "",
               f"- One mega-batch is {ep_mb:.3g} epoch(s) of the training rows; the runs see {ep_mb * n_mb:.3g} "
               f"epochs. The plain-SGD arms (mini-batch SGD, gradient aggregation) end "
               f"{np.mean([r['drop'] for r in refs]):.4f} below their best P@1 on average (means over a tenth of "
               f"the run); the largest mean drop is {worst[1]:.4f} ({worst[0][1]}, {worst[0][0]} worker(s)): "
               + ("they overfit within the budget (a mean drop above 0.01), so when each arm peaks, not only the "
                  "optimizer, decides the ordering." if overfit else
                  "they do not overfit within the budget (every mean drop at most 0.01)."),
               "- The merge-rule arms' mean drops: " + "; ".join(f"{a}, {W} worker(s): {d:.4f}"
                                                                  for (W, a), d in sorted(others.items())) + ".", ""]
    if adas:
        grow = []
        for r in adas:
            tl = np.asarray(r["run"]["curves"].get("train_loss", []), dtype=float)
            tl = tl[np.isfinite(tl)]
            if len(tl):
                grow.append(float(tl[-1] / np.min(tl)))
        md += [f"- Adaptive SGD (paper defaults) ends {np.mean([r['drop'] for r in adas]):.4f} below its best P@1 on "
               "average; its training loss ends at "
               + (f"{np.median(grow):.3g}x its minimum (median over runs)" if grow else "-")
               + (": the model grows (the perturbed merge weights sum to more than 1 at every merge, see below), "
                  "which is not overfitting." if grow and np.median(grow) > 2 else "."), ""]
    return md


def _gate_md(cell, Ws):
    """The perturbation gate at this model's scale, and the paper's Elastic against gradient aggregation."""
    md = []
    # The perturbation gate (Algorithm 2 line 7) at this model's scale, and batch sizes.
    gate_vals, pert_vals = [], []
    for W in Ws:
        for r in cell.get((W, "Adaptive"), []):
            w = r["run"].get("workers", {})
            if W > 1 and "l2_per_param" in w:
                gate_vals.append(float(per_worker(r["run"], "l2_per_param").max()))
                pert_vals.append(float(np.mean(np.ravel(w["perturbed"]))))
    if gate_vals:
        thr = ADAPTIVE_DEFAULTS["pert_thr"]
        md += ["## The perturbation gate at this model's scale", "",
               f"- The paper-literal gate (Algorithm 2 line 7) compares ||w_i||_2/|w| with pert_thr = {thr:g}. "
               f"Here that statistic never exceeds {max(gate_vals):.2e} (it is RMS(w)/sqrt(|w|), so it "
               f"shrinks with the model size): the gate "
               + ("never closes" if max(gate_vals) < thr else "closes at some merges")
               + f" and the perturbation fires in {100 * float(np.mean(pert_vals)):.0f}% of the merges at "
               "2-4 workers. A perturbation makes the merge weights sum to 1 + delta (alpha_r - "
               "alpha_s) > 1; with the merge momentum gamma = 0.9 the excess compounds from merge to merge. R10 "
               "(adaptive-sensitivity) runs the same setting with the perturbation off (pert_thr 0).", ""]

    # Does the ordering hinge on the gate? The paper's Elastic has the same merge rule without the
    # perturbation and the dynamic batches.
    lines = []
    for W in Ws:
        e, g = cell.get((W, "Elastic (paper, gamma 0.9)")), cell.get((W, "Grad. aggregation"))
        if e and g:
            d = [re_["best_T"] - rg["best_T"] for re_, rg in zip(e, g)]
            lines.append(f"{W} workers: {st.fmt_ci(*st.mean_interval(d, (-1.0, 1.0))[:3], '+.4f')}")
    if lines:
        md += ["- Without the perturbation, the same merge rule (the paper's Elastic, gamma 0.9) minus gradient "
               "aggregation, best P@1 in the budget, paired by seed: " + "; ".join(lines) + ".", ""]
    return md


def _arms_table_md(cell, Ws, arms, seeds):
    """Figs. 11-12's table: the Adaptive arms' perturbation frequency, batch sizes and gate statistic."""
    md = []
    md += ["## Adaptive SGD arms: perturbation frequency and batch sizes (Figs. 11-12)", "",
           "| workers | arm | perturbed merges (mean fraction) | last batch sizes (seed 1) | gate statistic (max over the run) |",
           "| ---: | --- | ---: | --- | ---: |"]
    for W in Ws:
        for a in arms:
            if not a.startswith("Adaptive") or not cell.get((W, a)):
                continue
            fr, last, gate = [], "-", float("nan")
            for r in cell[(W, a)]:
                w = r["run"].get("workers", {})
                if "perturbed" in w:
                    fr.append(float(np.mean(np.ravel(w["perturbed"]))))
                if r["seed"] == seeds[0] and "batch_size" in w:
                    last = str(per_worker(r["run"], "batch_size")[-1].astype(int).tolist())
                    gate = float(per_worker(r["run"], "l2_per_param").max())
            md.append(f"| {W} | {a} | {st.fmt_ci(*st.mean_interval(fr, (0.0, 1.0))[:3], '.2f')} | {last} | {gate:.3g} |")
    md.append("")
    return md


def _every_run_md(rows, arms, prefix):
    """The table of every run and the files' names; returns (md lines, the rows in the CSV's order)."""
    md = []
    csv_rows = []
    md += ["## Every run", "",
           "| workers | arm | lr | seed | best val P@1 | best test P@1 | final test P@1 | status |",
           "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in sorted(rows, key=lambda r: (r["workers"], arms.index(r["arm"]), r["lr"], r["seed"])):
        md.append(f"| {r['workers']} | {r['arm']} | {r['lr']:g} | {r['seed']} | {fmt(r['best_val'])} | "
                  f"{fmt(r['best'])} | {fmt(r['final'])} | {r['status']} |")
        csv_rows.append(r)
    md += ["", "Files: " + ", ".join(f"`{os.path.basename(prefix)}{s}`" for s in
                                      (".csv", ".png", "-lr.png", "-workers.png")), ""]
    return md, csv_rows


def _csv_frame(csv_rows, shared):
    """The report's CSV: one row per run."""
    return pd.DataFrame(
        [[r["workers"], r["arm"], r["lr"], r["seed"], math.isclose(r["lr"], shared) if shared else False,
          r["id"], r["status"], r["best_val"], r["best"], r["final"], r.get("budget", ""),
          r.get("best_T", ""), (r.get("t99") or "") if "t99" in r else "", r["sim_s"], r["wall_s"],
          os.path.basename(r["file"])] for r in csv_rows],
        columns=["workers", "arm", "lr", "seed", "shared_lr", "run_id", "status", "best_val_p_at_1",
                 "best_p_at_1", "final_p_at_1", "budget_sim_s", "best_p_at_1_in_budget",
                 "sim_s_to_99pct_target", "sim_s_total", "wall_s", "results_file"])


def _fig_curves(cell, Ws, arms, shared):
    """Figs. 6 and 7: P@1 against simulated time (common budget) and per mega-batch, per worker count."""
    # Figs. 6 and 7 at the shared lr: mean over seeds with 95% bands.
    fig, axes = plt.subplots(2, len(Ws), figsize=(4.8 * len(Ws), 7.8), squeeze=False)
    for j, W in enumerate(Ws):
        L = {a: cell.get((W, a), []) for a in arms}
        budget = min((r["budget"] for a in arms for r in L[a]), default=None)
        for a in arms:
            if not L[a]:
                continue
            col = ARM_COLORS.get(a, "tab:gray" if a == MINIBATCH else None)
            lw = 1.8 if a in ("Adaptive", MINIBATCH) else 1.0
            band(axes[0][j], [np.asarray(r["run"]["curves"]["sim_s"]) * 1e3 for r in L[a]],
                 [np.asarray(r["run"]["curves"]["test_accuracy"], dtype=float) for r in L[a]],
                 f"{a} (lr {shared:g})", col, lw, xmax=budget * 1e3 if budget else None)
            band(axes[1][j], [np.asarray(r["run"]["curves"]["step"], dtype=float) for r in L[a]],
                 [np.asarray(r["run"]["curves"]["test_accuracy"], dtype=float) for r in L[a]],
                 a, col, lw)
        axes[0][j].set_title(f"{W} worker(s): P@1 vs simulated time, common budget (Fig. 6)", fontsize=8)
        axes[0][j].set_xlabel("simulated time (ms)")
        axes[1][j].set_title(f"{W} worker(s): P@1 per mega-batch (Fig. 7)", fontsize=8)
        axes[1][j].set_xlabel("mega-batch")
        for ax in (axes[0][j], axes[1][j]):
            ax.set_ylabel("test precision@1 (mean, 95% band)")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def _fig_lr(lr, has_val):
    """The 1-worker lr search: mean best P@1 against lr."""
    lrs1, grid, chosen = lr.lrs1, lr.grid, lr.chosen
    # The lr search: mean best validation P@1 vs lr of mini-batch SGD at 1 worker.
    fig, ax = plt.subplots(1, 1, figsize=(4.8, 3.6))
    if lrs1:
        m = np.array([grid[lr][0] for lr in lrs1])
        lo = np.array([grid[lr][1] for lr in lrs1])
        hi = np.array([grid[lr][2] for lr in lrs1])
        ax.errorbar(lrs1, m, yerr=[np.nan_to_num(m - lo), np.nan_to_num(hi - m)], capsize=2, marker="o", ms=3,
                    color="tab:gray", label=MINIBATCH)
        ax.axvline(chosen, color="black", lw=0.8, ls="--")
        ax.legend(fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("lr (rate for b_max)")
    ax.set_ylabel(f"best {'validation' if has_val else 'test'} P@1 (mean, 95% CI)")
    ax.set_title("1 worker: the shared lr (section 5.1)", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _fig_workers(cell, Ws):
    """Fig. 12: the per-worker panels of one paper-default Adaptive run per worker count (None without one)."""
    ada = [r for W in Ws for r in cell.get((W, "Adaptive"), [])[:1] if W > 1]
    if ada:
        fig, axes = plt.subplots(len(ada), 3, figsize=(14, 3.6 * len(ada)), squeeze=False)
        for i, r in enumerate(ada):
            worker_panels(axes[i], r["run"], f"{r['workers']} workers, seed {r['seed']}")
        fig.tight_layout()
        return fig
    return None


def figures(path, target="adaptive-figures", lr_path=None, lr_all_path=None):
    """R9 at the paper's protocol (section 5.1-5.2.1): one lr shared by every algorithm, chosen
    by the paper's rule on the validation split from lr_all_path (every arm at 2 and 4 workers
    over the grid: lr_rule), with the 1-worker search lr_path (where every method is mini-batch
    SGD) beside it; the paper's three arms at 2 and 4 workers from path, equal simulated-time
    budgets, intervals over seeds. Without lr_all_path the claims are NOT TESTED (the 1-worker
    choice cannot see how the merge-based arms fare at that lr)."""
    prefix = target
    spec, lr_spec, base_mb, rows = _load_rows(path, lr_path)
    has_val = any(np.isfinite(r["best_val"]) for r in rows)
    crit = "best_val" if has_val else "best"
    Ws = sorted({r["workers"] for r in rows})
    arms = [a for a in [MINIBATCH] + list(PAPER_ARMS) + sorted({r["arm"] for r in rows})
            if any(r["arm"] == a for r in rows)]
    arms = list(dict.fromkeys(arms))
    seeds = sorted({r["seed"] for r in rows})
    wall_total = sum(r["wall_s"] for r in rows)

    lr = _shared_lr(rows, crit, lr_all_path, base_mb)
    why_nt = lr.why_nt
    ep_mb = float(np.nanmean([r["epochs_per_mb"] for r in rows])) if rows else float("nan")
    n_mb = int(max((r["megabatches"] for r in rows), default=0))

    md = _intro_md(path, lr_path, spec, lr_spec, rows, seeds, base_mb, ep_mb, n_mb)
    md += _lr_md(lr, has_val, lr_all_path)
    # 2. Per worker count, at the shared lr: equal time budget per seed, metrics per arm.
    sections, cell, verdicts, ablation_claims = _worker_sections(rows, arms, seeds, Ws, lr.shared, why_nt)
    md += sections
    md += _check_md(verdicts, why_nt)
    md += _other_lr_md(rows, arms, seeds, Ws, lr)
    md += _ablation_md(ablation_claims)
    md += _overfit_md(cell, ep_mb, n_mb)
    md += _gate_md(cell, Ws)
    md += _arms_table_md(cell, Ws, arms, seeds)

    scale_md, scale_claims = scaling(cell, Ws, n_mb)
    if why_nt:  # the same lr caveat as the main claims
        scale_claims = [(c, e, "{} ({}; the data alone: {})".format(st.NOT_TESTED, why_nt, v))
                        for c, e, v in scale_claims]
    md += scale_md
    every, csv_rows = _every_run_md(rows, arms, prefix)
    md += every

    record = {"target": target, "title": f"R9: Adaptive SGD time-to-accuracy ({target})",
              "seeds": len(seeds),
              "runtime": {"experiment": f"{wall_total / 60:.1f} min ({len(rows)} runs, sum of run wall times, "
                                        "one rank on the shared 2-core machine)"},
              "claims": [{"claim": f"Adaptive SGD (paper defaults) reaches the highest accuracy first at {W} workers, "
                                   "vs the paper's Elastic (gamma 0.9) and gradient aggregation, equal time budgets, one "
                                   "shared lr (Adaptive SGD 5.2.1, Figs. 6-7)", "verdict": v}
                         for W, a, v, *_ in verdicts] +
                        [{"claim": f"Ablation, {W} workers: {a} reaches the highest accuracy first", "verdict": v}
                         for W, a, v, *_ in ablation_claims] +
                        [{"claim": c, "verdict": v} for c, e, v in scale_claims]}
    rep = _to_report(record, md, [path] + ([lr_path] if lr_path else []) + ([lr_all_path] if lr_all_path else []))
    rep.data(_csv_frame(csv_rows, lr.shared))
    rep.figure(_fig_curves(cell, Ws, arms, lr.shared))
    rep.extra_figure("-lr", _fig_lr(lr, has_val))
    fig = _fig_workers(cell, Ws)
    if fig is not None:
        rep.extra_figure("-workers", fig)
    return rep
