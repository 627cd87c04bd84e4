"""R13 of DESIGN.md section 11 (lpp-table9): LPP-SGD paper Table 9 (Chatterjee et al.,
arXiv:2203.06638), MB-SGD and PL-SGD with LARS at B_loc 1024 beside Table 1's rows it compares
against, trained to the plateau (lpp_plateau). table9(paths) -> Report: the two claims, the
reading generated from them, the ablation (alpha0 and warmup) and a PNG.
"""

import numpy as np

from . import paper
from . import stats as st
from .lpp import (ASYNC, _is_abl, acc_ci, alpha0, cells_frame, f, family, group, load_runs, mb_pl_lose,
                  not_tested, paired, pp, role, runtime_line, seeds_line, to_report)
from .lpp_plateau import protocol_checks


PAPER_T9 = paper.LPP_T9


def table9_claims(cells, why=""):
    """Table 9's two claims from its cells (keyed (method, U, B_loc, optimizer)), each a (claim, ours,
    verdict) row; a claim whose cells are missing is left out."""
    c = {x.key: x for x in cells}
    acc = (lambda r: r["test_acc"])
    mbl, pll = c.get(("MB-SGD", 1, 1024, "lars")), c.get(("PL-SGD", 1, 1024, "lars"))
    mb, pl = c.get(("MB-SGD", 1, 128, "sgd")), c.get(("PL-SGD", 1, 128, "sgd"))
    lap, lpp_ = c.get(("LAP-SGD", 4, 256, "sgd")), c.get(("LPP-SGD", 4, 256, "sgd"))
    out = []
    if all([mbl, pll, mb, pl]):
        ours, v = mb_pl_lose(mbl, mb, pll, pl)
        out.append(("LARS does not stop MB-SGD and PL-SGD losing test accuracy at the larger B_loc: "
                    "Te.A.(MB+LARS 1024) - Te.A.(MB 128) < 0 and Te.A.(PL+LARS 1024) - Te.A.(PL 128) < 0",
                    ours, not_tested(v, why)))
    if all([mbl, pll, lap, lpp_]):
        ds = [(a, b, paired(a, b, acc)) for a in (lap, lpp_) for b in (mbl, pll)]
        v = st.combine(st.decide(d[1], d[2], 0.0, "above") for _, _, d in ds)
        out.append(("LAP-SGD and LPP-SGD (U 4, B_loc 256) generalize better than MB-SGD and PL-SGD with LARS at "
                    "B_loc 1024: every Te.A.(LAP/LPP) - Te.A.(MB/PL+LARS) > 0",
                    "; ".join("{} - {}: {}".format(a.label, b.label, pp(d)) for a, b, d in ds), not_tested(v, why)))
    return out


def paper_t9_gap():
    """(least, most) test-accuracy points by which Table 9's LARS rows end below its LAP/LPP rows, or None."""
    pt = {(x[0], x[2]): x[4] for x in PAPER_T9}
    g = [pt.get(k) for k in (("LAP-SGD", 256), ("LPP-SGD", 256), ("MB-SGD+LARS", 1024), ("PL-SGD+LARS", 1024))]
    if any(x is None for x in g):
        return None
    return min(g[:2]) - max(g[2:]), max(g[:2]) - min(g[2:])


def table9_reading(cells, claims):
    """Where the second claim fails or stays open: whether LARS lifted the large batch, or the LAP/LPP
    rows (R7's cells) fell, measured against the small-batch baseline they share, and where the LAP/LPP
    deficit is taken apart (R7's ablation)."""
    if len(claims) < 2 or claims[1][2] not in (st.FAILS, st.INCONCLUSIVE):
        return []
    c = {x.key: x for x in cells}
    acc = (lambda r: r["test_acc"])
    mb = c.get(("MB-SGD", 1, 128, "sgd"))
    rows = [c.get(k) for k in (("MB-SGD", 1, 1024, "lars"), ("PL-SGD", 1, 1024, "lars"),
                               ("LAP-SGD", 4, 256, "sgd"), ("LPP-SGD", 4, 256, "sgd"))]
    if mb is None or any(r is None for r in rows):
        return []
    L = ["## Why the second claim {}\n".format("does not hold" if claims[1][2] == st.FAILS else "is inconclusive"),
         "Each row of the claim against the baseline every row shares, MB-SGD at B_loc 128 (test accuracy, "
         "paired by seed, points):\n",
         "| cell | Te.A.(cell) - Te.A.(MB-SGD B=128) |", "|---|---|"]
    d = [paired(r, mb, acc) for r in rows]
    for r, x in zip(rows, d):
        L.append("| {} | {} |".format(r.label, pp(x)))
    L.append("")
    gap = paper_t9_gap()
    paper = ("in the paper the LARS rows end {:.1f} to {:.1f} points below LAP/LPP".format(*gap) if gap else
             "in the paper the LARS rows end several points below LAP/LPP")
    m = ["{:+.2f}".format(100 * x[0]) for x in d]
    L.append("The paper's ordering needs LAP/LPP above the LARS rows; {}. Here, against the same baseline, the LARS "
             "rows are at {} (MB-SGD) and {} (PL-SGD) points and LAP/LPP at {} and {}. Two things can close the "
             "paper's gap, one on each side: the LARS rows run the alpha0 chosen on the validation split (the paper "
             "uses 0.1; the ablation below runs it), and the LAP/LPP rows are R7's cells, whose own claim (\"LAP/LPP "
             "keep the accuracy\", reports/lpp-table1.md) is tested there, with R7's ablation "
             "(`experiments/lpp/lpp_table1_plateau_ablation.json`: the schedule, the staleness of the concurrent "
             "updaters, the local averaging) taking their deficit apart.\n".format(paper, *m))
    return L


def table9_ablation(cells, abl, plateau=True, why="", moved=False, verdicts=None):
    """The LARS rows again at the paper's alpha0 (lpp_table9_plateau_ablation): each against the small
    batch (Table 9's first claim), against LAP/LPP (its second) and against the same row at the chosen alpha0;
    then the ablation's claims (table9_ablation_verdicts) and a reading generated from them by fixed rules.
    moved: table9_alpha0_check made the report's first claim INCONCLUSIVE (the reading says so); verdicts:
    table9_ablation_verdicts of these cells, when the caller has them."""
    if not abl:
        if not plateau:
            return []
        return ["## Ablation: the LARS rows at the paper's alpha0\n",
                "Not among this report's inputs: `experiments/lpp/lpp_table9_plateau_ablation.json` (5 seeds of MB-SGD and "
                "PL-SGD with LARS at B_loc 1024 at the paper's alpha0 0.1, the rest as the main runs) joins the "
                "target's specs once its runs are complete (experiments/lpp/README.md).\n"]
    c = {x.key: x for x in cells}
    acc = (lambda r: r["test_acc"])
    L = ["## Ablation: the LARS rows at the paper's alpha0\n",
         "`experiments/lpp/lpp_table9_plateau_ablation.json`: the main LARS rows again at alpha0 0.1 (Table 9's caption), "
         "5 seeds, paired by seed. The paper's LARS rows end {} points below LAP/LPP; if the paper's alpha0 is what "
         "made them lose, these rows fall further below the small batch and below LAP/LPP than the chosen alpha0's.\n"
         .format("{:.1f}-{:.1f}".format(*paper_t9_gap()) if paper_t9_gap() else "several"),
         "| cell | n | Tr.A. % | Te.A. % [95% CI] | - same row at the chosen alpha0 | - MB/PL-SGD B=128 | - LAP-SGD U=4 B=256 "
         "| - LPP-SGD U=4 B=256 |",
         "|---|---|---|---|---|---|---|---|"]
    lap, lpp_ = c.get(("LAP-SGD", 4, 256, "sgd")), c.get(("LPP-SGD", 4, 256, "sgd"))
    for a in abl:
        same = c.get((a.method, 1, 1024, "lars"))
        small = c.get((a.method, 1, 128, "sgd"))
        cols = [pp(paired(a, x, acc)) if x else "-" for x in (same, small, lap, lpp_)]
        L.append("| {} | {} | {} | {} | {} |".format(a.label, a.n, f(100 * a.mean("train_acc"), "{:.2f}"), acc_ci(a),
                                                     " | ".join(cols)))
    L.append("")
    L += table9_ablation_claims(table9_ablation_verdicts(c, abl) if verdicts is None else verdicts, c, abl, why, moved)
    return L


def table9_ablation_verdicts(c, abl):
    """The ablation's claims, {key: (claim, ours, verdict, means)}, verdicts undecorated:
    'lose': Table 9's first claim with the LARS rows at the paper's alpha0; 'order': its second claim so;
    'alpha': the paper's alpha0 costs the LARS rows accuracy against the alpha0 chosen on validation.
    means: the paired mean differences (fractions) behind the verdict."""
    acc = (lambda r: r["test_acc"])
    by = {a.method: a for a in abl}
    mba, pla = by.get("MB-SGD"), by.get("PL-SGD")
    mbl, pll = c.get(("MB-SGD", 1, 1024, "lars")), c.get(("PL-SGD", 1, 1024, "lars"))
    mb, pl = c.get(("MB-SGD", 1, 128, "sgd")), c.get(("PL-SGD", 1, 128, "sgd"))
    lap, lpp_ = c.get(("LAP-SGD", 4, 256, "sgd")), c.get(("LPP-SGD", 4, 256, "sgd"))
    out = {}
    if all([mba, pla, mb, pl]):
        ours, v = mb_pl_lose(mba, mb, pla, pl)
        out["lose"] = ("At the paper's alpha0 0.1, LARS does not stop MB-SGD and PL-SGD losing test accuracy at "
                       "B_loc 1024: Te.A.(MB+LARS, 0.1) - Te.A.(MB 128) < 0 and Te.A.(PL+LARS, 0.1) - Te.A.(PL 128) < 0",
                       ours, v, [paired(mba, mb, acc)[0], paired(pla, pl, acc)[0]])
    if all([mba, pla, lap, lpp_]):
        ds = [(a, b, paired(a, b, acc)) for a in (lap, lpp_) for b in (mba, pla)]
        out["order"] = ("At the paper's alpha0 0.1, LAP-SGD and LPP-SGD (U 4, B_loc 256) generalize better than "
                        "MB-SGD and PL-SGD with LARS at B_loc 1024: every Te.A.(LAP/LPP) - Te.A.(MB/PL+LARS, alpha0 "
                        "0.1) > 0",
                        "; ".join("{} - {}: {}".format(a.label, b.label, pp(d)) for a, b, d in ds),
                        st.combine(st.decide(d[1], d[2], 0.0, "above") for _, _, d in ds), [d[0] for _, _, d in ds])
    if all([mba, pla, mbl, pll]):
        d2 = [(a, paired(a, b, acc)) for a, b in ((mba, mbl), (pla, pll))]
        out["alpha"] = ("The paper's alpha0 0.1 costs the LARS rows test accuracy against the alpha0 chosen on the "
                        "validation split: Te.A.(MB/PL+LARS, 0.1) - Te.A.(same row, chosen alpha0) < 0",
                        "; ".join("{}: {}".format(a.label, pp(d)) for a, d in d2),
                        st.combine(st.decide(d[1], d[2], 0.0, "below") for _, d in d2), [d[0] for _, d in d2])
    return out


def table9_alpha0_check(claims, a):
    """Table 9's first claim rests on LARS's alpha0 when the paper's alpha0 decides it otherwise and is not
    decidedly worse than the chosen one at the plateau (the ablation's 'alpha' claim does not hold or is open):
    the claim is INCONCLUSIVE then, the chosen alpha0's verdict kept as what the data alone say.
    a: table9_ablation_verdicts. Returns (claims, whether the first claim moved).
    (This rule was written on 2026-11-29, after the ablation's first seeds were in; the claims and their
    thresholds were fixed before the runs. The reading says so when it fires.)"""
    if not claims or "lose" not in a or "alpha" not in a:
        return claims, False
    claim, ours, v = claims[0]
    v0, va = a["lose"][2], a["alpha"][2]
    if v not in (st.HOLDS, st.FAILS) or v0 == v or va == st.HOLDS:
        return claims, False
    why = ("at the alpha0 chosen on the validation split it {}, but at the paper's alpha0 0.1, which ends {} at "
           "the plateau (ablation below), the claim {}: {}; the verdict rests on LARS's alpha0".format(
               "holds" if v == st.HOLDS else "does not hold",
               "higher" if va == st.FAILS else "no lower", "holds" if v0 == st.HOLDS else
               "does not hold" if v0 == st.FAILS else "is not decided", a["lose"][1]))
    return [(claim, ours, "{} ({}; the data alone: {})".format(st.INCONCLUSIVE, why, v))] + list(claims[1:]), True


def table9_ablation_claims(a, c, abl, why="", moved=False):
    """The ablation's claims a (table9_ablation_verdicts) as a verdict table under the Ablation heading (the
    index labels them 'Ablation: ') and a reading generated from them by fixed rules; moved: the report's first
    claim was made INCONCLUSIVE by table9_alpha0_check."""
    if not a:
        return []
    mb = c.get(("MB-SGD", 1, 128, "sgd"))
    mbl, pll = c.get(("MB-SGD", 1, 1024, "lars")), c.get(("PL-SGD", 1, 1024, "lars"))
    L = ["| claim (ablation) | ours (paired differences, mean [95% interval]) | verdict |", "|---|---|---|"]
    L += ["| {} | {} | **{}** |".format(a[k][0], a[k][1], not_tested(a[k][2], why)) for k in ("lose", "order", "alpha")
          if k in a]
    L.append("")
    # The reading: fixed rules over the verdicts and the means, so that it cannot say more than the data.
    R = []
    pts = (lambda xs: " and ".join("{:+.2f}".format(100 * x) for x in xs))
    if "alpha" in a:
        v2, m = a["alpha"][2], pts(a["alpha"][3])
        if v2 == st.HOLDS:
            R.append("The paper's alpha0 costs the LARS rows accuracy ({} points against the chosen alpha0): part of "
                     "the paper's gap can come from its alpha0.".format(m))
        elif v2 == st.FAILS:
            R.append("The paper's alpha0 does not make the LARS rows lose: against the same rows at the alpha0 "
                     "chosen on the validation split they end {} points (MB-SGD, PL-SGD), at least one above 0 by "
                     "its interval, so the short selection's choice did not carry to the plateau.".format(m))
        else:
            R.append("The two alpha0s give no decided difference ({} points).".format(m))
    if "lose" in a:
        v0 = a["lose"][2]
        if v0 != st.HOLDS:
            R.append("At 0.1 the LARS rows {} against their own small batch ({} points, MB-SGD and PL-SGD): with "
                     "the paper's alpha0, LARS {} the large batch's loss here.{}".format(
                         "end within their intervals of 0" if v0 == st.INCONCLUSIVE else "end above",
                         pts(a["lose"][3]), "may stop" if v0 == st.INCONCLUSIVE else "stops",
                         " Table 9's first claim is therefore INCONCLUSIVE above: it holds only at the alpha0 chosen "
                         "on validation (a rule written after this ablation's first seeds were in; the claim and its "
                         "threshold were fixed before the runs)." if moved else ""))
    if "order" in a and mb is not None:
        acc = (lambda r: r["test_acc"])
        by = {x.method: x for x in abl}
        big = [paired(by[k], mb, acc)[0] for k in ("MB-SGD", "PL-SGD")]
        asy = [paired(x, mb, acc)[0] for x in (c[("LAP-SGD", 4, 256, "sgd")], c[("LPP-SGD", 4, 256, "sgd")])]
        gap = paper_t9_gap()
        if a["order"][2] == st.HOLDS:
            R.append("At the paper's alpha0 Table 9's ordering appears: LAP/LPP end above both LARS rows.")
        else:
            R.append("At the paper's alpha0 too, LAP/LPP are not above both LARS rows by their intervals. Against "
                     "MB-SGD 128, the LARS rows at 0.1 end {:+.2f} and {:+.2f} points and LAP/LPP {:+.2f} and {:+.2f}."
                     .format(*(100 * x for x in big + asy)))
            chosen = [paired(x, mb, acc)[0] for x in (mbl, pll) if x is not None]
            if max(abs(x) for x in big + asy + chosen) <= 0.02:
                R.append("Both sides end within two points of the small batch, {}. ".format(
                             "the LARS rows at either alpha0 (at the chosen one: {})".format(pts(chosen))
                             if chosen else "the LARS rows at 0.1") +
                         "The paper's ordering needs the large batch to lose {} points more than the asynchronous "
                         "rows, and {} produces that: on this model and data the gap is not there. The "
                         "LAP/LPP side's loss is taken apart by R7's ablation (reports/lpp-table1.md)."
                         .format("{:.1f}-{:.1f}".format(*gap) if gap else "several",
                                 "neither alpha0" if chosen else "the paper's alpha0 never"))
    if R:
        L.append("**Reading** (generated from the verdicts and means above by fixed rules in psgd_analysis/lpp.py): "
                 + " ".join(R) + "\n")
    return L


def table9(paths):
    """R13, LPP Table 9: MB-SGD and PL-SGD with LARS at B_loc 1024 beside Table 1's MB/PL at 128 and
    LAP/LPP at U 4, B_loc 256 (plateau protocol: the probe, LARS1024's own alpha0 selection)."""
    runs, _ = load_runs(paths)
    probe = [r for r in runs if role(r) == "probe"]
    select = [r for r in runs if role(r) == "select" and family(r).startswith("LARS")]
    main = [r for r in runs if role(r) == "main" and r["mode"] != "real" and not _is_abl(r)]
    lars = [r for r in main if r["opt"] == "lars"]
    abl = group([r for r in runs if _is_abl(r) and r["opt"] == "lars"], lambda r: (r["method"], r["lr"]),
                lambda r: "{}+LARS B={}, alpha0 {:g} (ablation)".format(r["method"], r["B"], alpha0(r)))

    def key(r):
        k = (r["method"], r["U"] if r["method"] in ASYNC else 1, r["B"], r["opt"])
        return k if k in T9_CELLS else None

    cells = group(main, key, lambda r: "{}{} {}B={}".format(
        r["method"], "+LARS" if r["opt"] == "lars" else "", "U={} ".format(r["U"]) if r["method"] in ASYNC else "",
        r["B"]))
    cells.sort(key=lambda c: T9_CELLS.index(c.key))
    E = lars[0]["epochs"] if lars else None
    L = ["# LPP-SGD Table 9 (R13): LARS does not rescue the large local batch\n"]
    L.append("Ours: LeCun's LeNet-5 on Fashion-MNIST, 2 workers, **{} epochs per run: the training-accuracy plateau "
             "measured by the probe below**; MB-SGD and PL-SGD with LARS (eta 0.001) at B_loc 1024 with their own "
             "alpha0 chosen on a validation split (selection below), beside R7's MB-SGD/PL-SGD at 128 and LAP/LPP at "
             "U 4, B_loc 256 (same seeds, paired). Specs `experiments/lpp/lpp_plateau_select_lars.json`, "
             "`experiments/lpp/lpp_table9_plateau.json` and R7's `lpp_table1_plateau_*.json`. Paper: Chatterjee et al., "
             "arXiv:2203.06638 Table 9 (ResNet-20 / CIFAR-10, S1, mean of 5 runs; LR alpha0 x B_loc x Q / 128 with "
             "alpha0 = 0.1). Absolute numbers do not compare; the orderings do.\n".format(f(E, "{:g}")))
    L.append(seeds_line(cells) + " " + runtime_line(runs) + "\n")
    pl, why = protocol_checks(probe, select, lars, float(E) if E else float("nan"))
    L += pl
    L.append("Te.A. = final test accuracy, mean [95% interval] over seeds; Tr.A. on the first {} training samples.\n"
             .format(int(main[0]["config"].get("metrics", {}).get("train_eval_samples", 1000)) if main else 1000))
    L.append("| cell | n | alpha0 | Tr.A. % | Te.L. | Te.A. % [95% CI] || paper Tr.A. | Te.A. |")
    L.append("|---|---|---|---|---|---||---|---|")
    for c in cells:
        p = next((x for x in PAPER_T9 if x[0] == c.method + ("+LARS" if c.opt == "lars" else "") and x[2] == c.B),
                 None)
        L.append("| {} | {} | {} | {} | {} | {} || {} | {} |".format(
            c.label, c.n, f(alpha0(c.runs[0]), "{:g}"), f(100 * c.mean("train_acc"), "{:.2f}"),
            f(c.mean("test_loss")), acc_ci(c), p[3] if p else "", p[4] if p else ""))
    L.append("")
    L.append("## Does the paper's claim hold? (claims and thresholds fixed in psgd_analysis/lpp.py before the runs)\n")
    L.append("| claim (paper) | ours (paired differences, mean [95% interval]) | verdict |")
    L.append("|---|---|---|")
    claims, moved = table9_claims(cells, why), False
    abl_v = table9_ablation_verdicts({x.key: x for x in cells}, abl)
    if not why:  # a failed protocol check already makes every claim NOT TESTED
        claims, moved = table9_alpha0_check(claims, abl_v)
    for cl, ours, v in claims:
        L.append(f"| {cl} | {ours} | **{v}** |")
    L.append("")
    L += table9_reading(cells, claims)
    L += table9_ablation(cells, abl, plateau=bool(probe), why=why, moved=moved, verdicts=abl_v)
    return to_report("lpp-table9", L[0].lstrip("# ").strip(), L, cells, runs, paths, cells_frame(cells),
                     plot_table9(cells))


#: Table 9's cells: (method, U, B_loc, optimizer)
T9_CELLS = [("MB-SGD", 1, 1024, "lars"), ("PL-SGD", 1, 1024, "lars"), ("MB-SGD", 1, 128, "sgd"),
            ("PL-SGD", 1, 128, "sgd"), ("LAP-SGD", 4, 256, "sgd"), ("LPP-SGD", 4, 256, "sgd")]


def plot_table9(cells):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for i, c in enumerate(cells):
        m, lo, hi, n = c.ci("test_acc")
        err = [[100 * (m - lo)], [100 * (hi - m)]] if np.isfinite(lo) else None
        ax.errorbar(100 * m, i, xerr=err, fmt="o", color="C3" if c.opt == "lars" else "C0", capsize=3)
        ax.scatter([100 * x for x in c.v("test_acc")], [i] * c.n, s=8, color="gray", zorder=3)
    ax.set_yticks(range(len(cells)))
    ax.set_yticklabels([c.label for c in cells], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("final test accuracy % (mean, 95% CI, seeds as dots); red: with LARS")
    fig.tight_layout()
    return fig
