"""Claim decisions as pure functions of per-seed numbers (DESIGN.md section 11: a claim's test
is run on synthetic inputs where it must HOLD and where it must NOT, tests/analysis/
test_claims.py). The report functions compute the numbers from the results files and call
these; the thresholds are fixed here, before any run.

Each returns (verdict, evidence text).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from . import stats as st

#: R1 thresholds (percentage points of test accuracy, from the paper's wording), losses
#: against the sequential (W = 1) run at the same LR and epochs (arXiv 5.4)
R1_NEAR_PP = 1.0       # "stays near the sequential accuracy": loses less than 1 pp
R1_COLLAPSE_PP = 5.0   # "fails / collapses": loses more than 5 pp
#: R5: the guide's "2-2.5x" with one sqrt(2) grid step of slack either side
R5_LR_BAND = (2.0 / math.sqrt(2), 2.5 * math.sqrt(2))
#: the LR grid is written to 3 significant digits (0.057, 0.08, ...), so a ratio of grid
#: points one sqrt(2) step apart reads 1.40-1.43: a band edge on a grid step allows for it
R5_GRID_TOL = 0.02
PP = (-100.0, 100.0)   # bounds of a difference of two accuracies in points


def cell_decide(v: Sequence[float], threshold: float, better: str) -> tuple[str, float, str]:
    """One cell of an R1 claim: per-seed values of the quantity, where a diverged run is +inf
    or -inf (a diverged Sum run has lost everything: loss +inf; in 'Adasum minus Sum' it is
    +inf when Sum diverged, -inf when Adasum did; both diverged: NaN, dropped). Without an
    infinite value: the mean's interval against ``threshold`` (stats.decide_mean) and the
    t-test's one-sided p-value against the claim. With one: the per-seed outcome (on the
    claimed side of the threshold or not) goes to the exact sign test (stats.decide_exact),
    the p-value against the claim is binom_less. Returns (verdict, p against, text)."""
    x = [float(t) for t in v if t is not None and not math.isnan(t)]
    inf = sum(1 for t in x if math.isinf(t))
    if not inf:
        verdict, ci = st.decide_mean(x, threshold, better, PP)
        p = st.t_pvalues(x, threshold)[1 if better == "above" else 0]
        return verdict, p, f"{st.fmt_ci(*ci[:3], '+.1f')} pp (n = {len(x)})"
    side = [(t > threshold) if better == "above" else (t < threshold) for t in x]
    k, n = sum(side), len(side)
    fin = [t for t in x if math.isfinite(t)]
    rest = f", the others {st.fmt_ci(*st.mean_interval(fin, PP)[:3], '+.1f')} pp" if fin else ""
    return st.decide_exact(k, n), st.binom_less(k, n), (
        f"{inf} of {n} seeds diverged{rest}; {k} of {n} {better} {threshold:g}, exact sign test "
        f"p = {st.sign_test(k, n):.3g}")


def cells_decide(cells: Mapping[Any, Sequence[float]], threshold: float, better: str
                 ) -> tuple[str, str]:
    """A claim that must hold in every cell (cell_decide each): HOLDS when every cell holds
    (intersection-union), DOES NOT HOLD when Holm over the cells' p-values against the claim
    rejects one, else INCONCLUSIVE (stats.combine_cells with divergence)."""
    if not cells:
        return st.INCONCLUSIVE, ""
    dec = {c: cell_decide(v, threshold, better) for c, v in cells.items()}
    if all(d[0] == st.HOLDS for d in dec.values()):
        v = st.HOLDS
    else:
        v = st.FAILS if any(st.holm([d[1] for d in dec.values()])) else st.INCONCLUSIVE
    return v, "; ".join(f"{c}: {d[2]}" for c, d in dec.items())


def r1_untuned(sum_loss: Mapping[int, Sequence[float]], ada_loss: Mapping[int, Sequence[float]]
               ) -> tuple[str, str]:
    """R1 untuned (arXiv 5.4, Fig. 6): Sum loses more than R1_COLLAPSE_PP points against the
    sequential (W = 1) run at every W of ``sum_loss`` (the W > 8 cells) and Adasum less than
    R1_NEAR_PP at every W of ``ada_loss`` (per-seed losses in points, paired by seed; a
    diverged run loses +inf). Every cell must hold (intersection-union); DOES NOT HOLD when
    Holm over the cells rejects one (cells_decide)."""
    v_sum, e_sum = cells_decide({f"Sum W={w}": sum_loss[w] for w in sorted(sum_loss)}, R1_COLLAPSE_PP, "above")
    v_ada, e_ada = cells_decide({f"Adasum W={w}": ada_loss[w] for w in sorted(ada_loss)}, R1_NEAR_PP, "below")
    return st.combine([v_sum, v_ada]), (f"collapse (Sum, above {R1_COLLAPSE_PP:g} pp): {v_sum}; near "
                                        f"(Adasum, below {R1_NEAR_PP:g} pp): {v_ada}. Losses: {e_sum}; {e_ada}")


def r1_converges(sum_loss: Mapping[int, Sequence[float]], ada_loss: Mapping[int, Sequence[float]]
                 ) -> tuple[str, str]:
    """R1 untuned in the paper's words (arXiv 5.4: 'Sum fails to converge at more than 8 GPUs,
    while Adasum still converges at 32 GPUs'): Sum's loss against the sequential run above
    R1_COLLAPSE_PP at every W of ``sum_loss``, Adasum's below it at every W of ``ada_loss``
    (one threshold for 'fails' and 'converges'); cells combined as in r1_untuned."""
    v_sum, e_sum = cells_decide({f"Sum W={w}": sum_loss[w] for w in sorted(sum_loss)}, R1_COLLAPSE_PP, "above")
    v_ada, e_ada = cells_decide({f"Adasum W={w}": ada_loss[w] for w in sorted(ada_loss)}, R1_COLLAPSE_PP, "below")
    return st.combine([v_sum, v_ada]), (f"Sum fails (above {R1_COLLAPSE_PP:g} pp): {v_sum}; Adasum "
                                        f"converges (below {R1_COLLAPSE_PP:g} pp): {v_ada}. Losses: {e_sum}; {e_ada}")


def r1_ordering(diff: Mapping[int, Sequence[float]]) -> tuple[str, str]:
    """R1 weaker form: at every W > 8 Adasum's accuracy minus Sum's (points, per seed; +inf
    where only Sum diverged, -inf where only Adasum did) is above 0."""
    return cells_decide({f"W={w}": diff[w] for w in sorted(diff)}, 0.0, "above")


def higher_choice(pairs: Sequence[tuple[float, float]]) -> tuple[str, str]:
    """A discrete outcome per seed: in how many (a, b) pairs is a > b (ties dropped), decided
    by the exact sign test (stats.decide_exact; >= 6 untied pairs to reach 95%)."""
    untied = [(a, b) for a, b in pairs if not (math.isnan(a) or math.isnan(b)) and not math.isclose(a, b)]
    k = sum(1 for a, b in untied if a > b)
    n = len(untied)
    v = st.decide_exact(k, n)
    p = st.sign_test(k, n) if n else math.nan
    need = "" if n >= st.min_n_exact() else f"; {n} untied pairs cannot reach 95% (needs >= {st.min_n_exact()})"
    return v, (f"{k} of {n} untied pairs (ties: {len(pairs) - n}) point the claimed way, exact sign test "
               f"p = {p:.3g}{need}")


def r1_tuned_lrs(sum_small: Sequence[float], sum_large: Sequence[float],
                 ada_by_w: Mapping[int, Sequence[float]], sum_by_w: Mapping[int, Sequence[float]]
                 ) -> tuple[str, str]:
    """R1 tuned (arXiv 5.4 LR table): Sum's chosen LR falls from the smallest to the largest W,
    and Adasum's chosen LR is above Sum's at every W > 8. Per seed, the chosen LR is a grid
    point (a discrete outcome). Each part (Sum's fall; Adasum above Sum at each W) is its own
    exact sign test over seeds, the parts combined by stats.combine_exact: the pairs of one
    seed's parts come from the same tuned runs, so pooling them into one test would count a
    seed several times."""
    parts = [("Sum's LR falls", list(zip(sum_small, sum_large)))]
    parts += [(f"Adasum above Sum at W={w}", list(zip(ada_by_w[w], sum_by_w.get(w, [])))) for w in sorted(ada_by_w)]
    kn, ev = [], []
    for name, pairs in parts:
        untied = [(a, b) for a, b in pairs if not (math.isnan(a) or math.isnan(b)) and not math.isclose(a, b)]
        k, n = sum(1 for a, b in untied if a > b), len(untied)
        kn.append((k, n))
        ev.append(f"{name}: {k} of {n} untied (ties {len(pairs) - n}), p = {st.sign_test(k, n):.3g}")
    need = min(n for _, n in kn) < st.min_n_exact()
    return st.combine_exact(kn), ("; ".join(ev) + " (exact sign test per part, Holm over the parts against the claim"
                                  + (f"; a part with fewer than {st.min_n_exact()} untied pairs cannot reach 95%" if need
                                     else "") + ")")


def paired_above(diffs: Sequence[float], threshold: float = 0.0,
                 bounds: tuple[float, float] | None = None) -> tuple[str, str]:
    """A paired (by seed) difference is above ``threshold`` (R1 tuned accuracies, R2, R6, R9)."""
    v, ci = st.decide_mean(diffs, threshold, "above", bounds)
    flag = " (constant across seeds: not decided)" if st.is_constant(diffs) else ""
    return v, f"{st.fmt_ci(*ci[:3], '+.3g')}, n = {ci[3]}{flag}"


def r5_fewer_steps(reductions: Mapping[tuple, Sequence[float]]) -> tuple[str, str]:
    """R5: at its best LR Adasum converges in fewer steps than Average in every (model,
    x_max, W > 1) cell: the per-seed reduction 1 - Adasum/Average (at most 1) above 0."""
    cells = list(reductions)
    v = st.combine_cells([reductions[c] for c in cells], 0.0, "above", (-math.inf, 1.0))
    return v, "; ".join(f"{' '.join(map(str, c))}: {st.fmt_ci(*st.mean_interval(reductions[c], (-math.inf, 1.0))[:3], '+.2f')}"
                        for c in cells)


def r5_lr_ratio(ratios: Mapping[tuple, Sequence[float]], band: tuple[float, float] = R5_LR_BAND
                ) -> tuple[str, str]:
    """R5: Adasum's best LR over the single-worker best LR is about 2-2.5 (inside ``band``) in
    every (model, x_max, W >= 4) cell. The ratio is a ratio of grid points (discrete): per
    cell, each seed's ratio is inside or not, and the count goes to an exact binomial test
    against 1/2. Cells, not (cell, seed) pairs, are the unit: one seed's single-worker LR is
    shared by every cell of its panel, so pooled pairs are not independent. HOLDS when every
    cell has most seeds inside (sign test, intersection-union: each cell at 5%); DOES NOT
    HOLD when Holm over the cells' one-sided p-values (most seeds outside) rejects one cell;
    else INCONCLUSIVE. A cell needs >= 8 seeds before one-sided p can reach 0.05 / 12 (Holm's
    first threshold over 12 cells); the toys run 30."""
    lo, hi = band[0] * (1 - R5_GRID_TOL), band[1] * (1 + R5_GRID_TOL)
    cells = list(ratios)
    rows, each, p_out = [], [], []
    for c in cells:
        r = [x for x in ratios[c] if not math.isnan(x)]
        k = sum(1 for x in r if lo <= x <= hi)
        each.append(st.decide_exact(k, len(r)))
        p_out.append(st.binom_less(k, len(r)) if r else 1.0)
        rows.append(f"{' '.join(map(str, c))}: {k}/{len(r)} inside (median ratio "
                    f"{_median(r):.2f})")
    if cells and all(v == st.HOLDS for v in each):
        v = st.HOLDS
    elif cells and any(st.holm(p_out)):
        v = st.FAILS
    else:
        v = st.INCONCLUSIVE
    rej = sum(st.holm(p_out)) if cells else 0
    return v, (f"per cell, seeds whose ratio is inside [{band[0]:.2f}, {band[1]:.2f}] (grid values "
               f"within {100 * R5_GRID_TOL:g}% of an edge count as on it); cells with most seeds outside "
               f"after Holm: {rej} of {len(cells)}: " + "; ".join(rows))


def _median(v: Sequence[float]) -> float:
    return float(sorted(v)[len(v) // 2]) if len(v) % 2 else (
        (sorted(v)[len(v) // 2 - 1] + sorted(v)[len(v) // 2]) / 2 if v else math.nan)


def rate_above(k: int, n: int, p0: float = 0.5) -> tuple[str, str]:
    """A rate (e.g. perturbed merges, R10) above p0: Clopper-Pearson interval vs p0."""
    _, lo, hi = st.clopper_pearson(k, n)
    return st.decide(lo, hi, p0, "above"), st.fmt_rate(k, n)
