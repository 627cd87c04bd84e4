"""Intervals, exact tests and the verdict rule of every reproduction report (DESIGN.md
section 11, "How a verdict is earned").

Five verdict classes, counted separately in the index (VERDICTS):

    HOLDS / DOES NOT HOLD   the data decide the claim at the 95% level
    INCONCLUSIVE            they do not (the interval straddles the threshold, too few seeds
                            for an exact test to reach the level, ...)
    NOT TESTED              our protocol deviates from the paper's in a way that can decide
                            the claim (the report names the deviation)
    BY CONSTRUCTION         the outcome follows from the cost model's formula and hand-set
                            parameters, not from a calibrated clock (the report shows the
                            formula's prediction)

The rules, one per kind of data (each has known-answer tests in tests/analysis/test_stats.py):

* A mean over seeds of a continuous value: ``mean_interval``. With n >= N_BOOT seeds a BCa
  bootstrap interval (Efron 1987, "Better bootstrap confidence intervals"; B = 10,000
  resamples, fixed RNG seed, so a report regenerates identically); with 2 <= n < N_BOOT the
  Student-t interval (a percentile bootstrap of n = 3 is the data's [min, max], whose
  coverage is about 75%, not 95%). Either is clipped to the value's bounds (an accuracy
  stays in [0, 1]).
* A rate (divergence, reaching a target): ``clopper_pearson`` (exact) or ``wilson``.
* A discrete outcome per seed (which LR was chosen, which arm ranked first): an exact
  binomial sign test (``decide_exact``). It needs n >= ``min_n_exact`` seeds to reach the
  level at all (6 for 95% two-sided): with fewer the verdict is INCONCLUSIVE, whatever the
  seeds say, and the report says how many it needs.
* Divergence, one rule for every target (``split_diverged``): a diverged run is neither 0%
  nor chance accuracy; the report gives the divergence rate (Clopper-Pearson) beside the
  accuracy of the runs that did not diverge.
* A claim over many cells (``combine_cells``): HOLDS when every cell holds at the 95% level
  (an intersection-union test, which needs no multiplicity correction); DOES NOT HOLD when a
  Holm step-down over the cells' one-sided p-values against the claim rejects at least one
  cell at family-wise 5% (one cell falling on the wrong side by chance among 16 no longer
  decides it); INCONCLUSIVE otherwise. ``combine_parts`` is the same rule for parts that
  each have their own threshold and side (a time below 0 and an accuracy above 0, or an
  equivalence 'within +-tol').
* A statistic constant across seeds (``is_constant``: a zero-width interval measures nothing
  about the spread) or across the arms a claim compares (``constant_across_arms``: every arm
  gives the same mean, so the comparison could not have come out otherwise) is flagged, and
  the claim is not decided on it (report.classify).
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy import stats as _st

HOLDS, FAILS, INCONCLUSIVE = "HOLDS", "DOES NOT HOLD", "INCONCLUSIVE"
NOT_TESTED, BY_CONSTRUCTION = "NOT TESTED", "BY CONSTRUCTION"
#: the five verdict classes, in the index's order
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_TESTED, BY_CONSTRUCTION)
LEVEL = 0.95
ALPHA = 1 - LEVEL
#: from this many seeds on, a mean's interval is a BCa bootstrap (below: Student-t)
N_BOOT = 10
BOOT_B = 10_000
BOOT_SEED = 20260101
METHOD = (f"95% interval of the mean over seeds: BCa bootstrap ({BOOT_B} resamples) from "
          f"n >= {N_BOOT} seeds, Student-t below that; clipped to the value's bounds")


def verdict_class(verdict: str) -> str:
    """The class of a verdict string ('NOT TESTED (deviation: ...)' -> 'NOT TESTED'); any
    other word ('partly holds', '-') is INCONCLUSIVE."""
    v = (verdict or "").strip().strip("*").upper()
    for c in (FAILS, BY_CONSTRUCTION, NOT_TESTED, INCONCLUSIVE, HOLDS):
        if v.startswith(c):
            return c
    return INCONCLUSIVE


def _finite(values: Iterable[float]) -> np.ndarray:
    return np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)


def _clip(lo: float, hi: float, bounds: tuple[float, float] | None) -> tuple[float, float]:
    if bounds is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return lo, hi
    return max(lo, bounds[0]), min(hi, bounds[1])


def is_constant(values: Iterable[float], rel: float = 1e-12) -> bool:
    """True when >= 2 finite values are all equal (a zero-width interval: nothing measured)."""
    v = _finite(values)
    return len(v) >= 2 and float(v.max() - v.min()) <= rel * max(1.0, float(np.abs(v).max()))


def constant_across_arms(arms: Mapping[str, Iterable[float]], rel: float = 1e-12) -> bool:
    """True when >= 2 arms (the things a claim compares: combiners, algorithms, worker
    counts) each have finite values and every arm's mean is the same: the statistic does
    not depend on the arm, so a comparison of arms measures nothing (e.g. a simulated time
    that the cost model fixes for every arm, or an LR every arm chooses alike), whatever
    the spread over seeds."""
    means = [float(v.mean()) for v in (_finite(a) for a in arms.values()) if len(v)]
    if len(means) < 2 or len(means) < len(arms):
        return False
    return max(means) - min(means) <= rel * max(1.0, max(abs(m) for m in means))


def t_interval(values: Iterable[float], level: float = LEVEL,
               bounds: tuple[float, float] | None = None) -> tuple[float, float, float, int]:
    """(mean, lo, hi, n): mean +- t_{(1+level)/2, n-1} s / sqrt(n), clipped to ``bounds``;
    lo = hi = NaN when n == 1, everything NaN when n == 0."""
    v = _finite(values)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n == 1:
        return m, math.nan, math.nan, 1
    half = float(_st.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    lo, hi = _clip(m - half, m + half, bounds)
    return m, lo, hi, n


def bootstrap_interval(values: Iterable[float], level: float = LEVEL, method: str = "bca",
                       bounds: tuple[float, float] | None = None, B: int = BOOT_B,
                       seed: int = BOOT_SEED) -> tuple[float, float, float, int]:
    """(mean, lo, hi, n): percentile or BCa bootstrap interval of the mean (fixed RNG seed:
    deterministic), clipped to ``bounds``. Constant data give a zero-width interval."""
    v = _finite(values)
    n = len(v)
    if n < 2:
        return (float(v.mean()) if n else math.nan), math.nan, math.nan, n
    m = float(v.mean())
    if is_constant(v):
        return m, m, m, n
    rng = np.random.default_rng(seed)
    boot = v[rng.integers(0, n, size=(B, n))].mean(axis=1)
    a_lo, a_hi = (1 - level) / 2, (1 + level) / 2
    if method == "bca":
        prop = (np.sum(boot < m) + 0.5 * np.sum(boot == m)) / B
        z0 = float(_st.norm.ppf(min(max(prop, 1.0 / B), 1 - 1.0 / B)))
        jack = (v.sum() - v) / (n - 1)
        d = jack.mean() - jack
        den = 6.0 * float(np.sum(d ** 2)) ** 1.5
        acc = float(np.sum(d ** 3)) / den if den > 0 else 0.0
        adj = []
        for a in (a_lo, a_hi):
            z = _st.norm.ppf(a)
            adj.append(float(_st.norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))))
        a_lo, a_hi = adj
    elif method != "percentile":
        raise ValueError(f"bootstrap method {method!r}: 'bca' or 'percentile'")
    lo, hi = (float(x) for x in np.quantile(boot, [a_lo, a_hi]))
    lo, hi = _clip(lo, hi, bounds)
    return m, lo, hi, n


def mean_interval(values: Iterable[float], bounds: tuple[float, float] | None = None,
                  level: float = LEVEL) -> tuple[float, float, float, int]:
    """The engine's interval of a mean over seeds (module doc): BCa from N_BOOT seeds on,
    Student-t below, both clipped to ``bounds``."""
    v = _finite(values)
    if len(v) >= N_BOOT:
        return bootstrap_interval(v, level, "bca", bounds)
    return t_interval(v, level, bounds)


def t_pvalues(values: Iterable[float], threshold: float = 0.0) -> tuple[float, float]:
    """One-sided p-values (p_above, p_below) of a one-sample t-test of mean vs threshold:
    small p_above = evidence that the mean is above. (NaN, NaN) with < 2 values; a constant
    sample gives 0 or 1 (or 1, 1 when it equals the threshold)."""
    v = _finite(values)
    if len(v) < 2:
        return math.nan, math.nan
    if is_constant(v):
        x = float(v[0])
        return (0.0, 1.0) if x > threshold else (1.0, 0.0) if x < threshold else (1.0, 1.0)
    t = (float(v.mean()) - threshold) / (float(v.std(ddof=1)) / math.sqrt(len(v)))
    return float(_st.t.sf(t, len(v) - 1)), float(_st.t.cdf(t, len(v) - 1))


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float, float]:
    """(k/n, lo, hi): Wilson score interval of a binomial rate."""
    if n <= 0:
        return math.nan, math.nan, math.nan
    z = float(_st.norm.ppf(0.5 + level / 2))
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return p, max(0.0, c - h), min(1.0, c + h)


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float, float]:
    """(k/n, lo, hi): exact (Clopper-Pearson) interval of a binomial rate."""
    if n <= 0:
        return math.nan, math.nan, math.nan
    a = 1 - level
    lo = 0.0 if k == 0 else float(_st.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1 - a / 2, k + 1, n - k))
    return k / n, lo, hi


def sign_test(k: int, n: int) -> float:
    """Exact two-sided binomial (sign) test of k successes in n against p = 1/2."""
    if n <= 0:
        return math.nan
    return float(_st.binomtest(k, n, 0.5, alternative="two-sided").pvalue)


def binom_less(k: int, n: int) -> float:
    """Exact one-sided binomial p-value of k or fewer successes in n against p = 1/2 (the
    p-value against a claim that most of n outcomes go one way)."""
    if n <= 0:
        return math.nan
    return float(_st.binomtest(k, n, 0.5, alternative="less").pvalue)


def min_n_exact(alpha: float = ALPHA) -> int:
    """The fewest seeds with which a two-sided sign test can reach ``alpha`` at all
    (all n agree: p = 2 / 2^n); 6 at the 5% level."""
    n = 1
    while 2.0 * 0.5 ** n >= alpha:
        n += 1
    return n


def decide_exact(k: int, n: int, alpha: float = ALPHA) -> str:
    """A discrete outcome observed in k of n seeds (e.g. 'Adasum's chosen LR is above Sum's'):
    HOLDS when the sign test rejects p = 1/2 with k > n/2, DOES NOT HOLD when it rejects with
    k < n/2, else INCONCLUSIVE (always so below min_n_exact(alpha) seeds). Ties (neither
    side) are dropped from n by the caller."""
    if n <= 0:
        return INCONCLUSIVE
    p = sign_test(k, n)
    if p < alpha:
        return HOLDS if 2 * k > n else FAILS
    return INCONCLUSIVE


def combine_exact(parts: Sequence[tuple[int, int]], alpha: float = ALPHA) -> str:
    """A claim over several parts, each a discrete outcome seen in k of n seeds (the claimed
    way): HOLDS when every part's sign test holds (intersection-union, as combine_cells),
    DOES NOT HOLD when Holm over the parts' one-sided p-values against the claim (k or fewer
    of n) rejects one, else INCONCLUSIVE. Each part is one independent outcome per seed:
    pairs from several parts are never pooled into one test (a seed's parts share its run)."""
    if not parts:
        return INCONCLUSIVE
    if all(decide_exact(k, n, alpha) == HOLDS for k, n in parts):
        return HOLDS
    p_against = [binom_less(k, n) for k, n in parts]
    return FAILS if any(holm(p_against, alpha)) else INCONCLUSIVE


def fisher_exact(table: Sequence[Sequence[int]]) -> float:
    """Two-sided Fisher exact test of a 2x2 table of counts (e.g. diverged / not per arm)."""
    return float(_st.fisher_exact(np.asarray(table, dtype=int), alternative="two-sided")[1])


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected at family-wise level ``alpha`` (NaN
    p-values are never rejected)."""
    p = [1.0 if (x is None or not np.isfinite(x)) else float(x) for x in pvalues]
    order = sorted(range(len(p)), key=lambda i: p[i])
    out = [False] * len(p)
    m = len(p)
    for rank, i in enumerate(order):
        if p[i] * (m - rank) < alpha:
            out[i] = True
        else:
            break
    return out


def split_diverged(values: Sequence[float | None], statuses: Sequence[str]
                   ) -> tuple[tuple[int, int], list[float]]:
    """The one divergence rule: ((diverged, runs), values of the runs that did not diverge)."""
    k = sum(1 for s in statuses if s == "diverged")
    kept = [float(v) for v, s in zip(values, statuses)
            if s != "diverged" and v is not None and np.isfinite(v)]
    return (k, len(statuses)), kept


def fmt_rate(k: int, n: int) -> str:
    """'k/n (p% [lo, hi])' with the Clopper-Pearson interval."""
    if n <= 0:
        return "-"
    p, lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} ({100 * p:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}])"


def decide(lo: float, hi: float, threshold: float = 0.0, better: str = "below") -> str:
    """The claim is 'the quantity is below (better='below') / above the threshold': HOLDS
    when the whole interval is on the claimed side, DOES NOT HOLD when the whole interval is
    on the other side, INCONCLUSIVE otherwise (or without an interval)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return INCONCLUSIVE
    if better == "below":
        return HOLDS if hi < threshold else FAILS if lo > threshold else INCONCLUSIVE
    return HOLDS if lo > threshold else FAILS if hi < threshold else INCONCLUSIVE


def decide_mean(values: Iterable[float], threshold: float = 0.0, better: str = "above",
                bounds: tuple[float, float] | None = None) -> tuple[str, tuple[float, float, float, int]]:
    """decide() on mean_interval(values); a sample constant across seeds is never decided
    (INCONCLUSIVE, flagged by the caller with is_constant)."""
    ci = mean_interval(values, bounds)
    if is_constant(values):
        return INCONCLUSIVE, ci
    return decide(ci[1], ci[2], threshold, better), ci


def fmt_ci(m: float, lo: float, hi: float, spec: str = ".4f", scale: float = 1.0) -> str:
    """'m [lo, hi]' (or 'm' alone without an interval, '-' without data)."""
    if m is None or not np.isfinite(m):
        return "-"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return format(m * scale, spec)
    return f"{format(m * scale, spec)} [{format(lo * scale, spec)}, {format(hi * scale, spec)}]"


def combine(verdicts: Iterable[str]) -> str:
    """A claim over several cells decided by their verdicts alone: HOLDS when every cell
    holds (intersection-union), DOES NOT HOLD when any does not, else INCONCLUSIVE. Prefer
    combine_cells when the cells' p-values are at hand (Holm for the DOES NOT HOLD side)."""
    v = list(verdicts)
    if not v:
        return INCONCLUSIVE
    if any(x == FAILS for x in v):
        return FAILS
    return HOLDS if all(x == HOLDS for x in v) else INCONCLUSIVE


def combine_cells(cells: Sequence[Sequence[float]], threshold: float = 0.0,
                  better: str = "above", bounds: tuple[float, float] | None = None,
                  alpha: float = ALPHA) -> str:
    """A claim that must hold in every cell (each cell: per-seed values of the quantity):
    HOLDS when each cell's interval is on the claimed side (intersection-union test), DOES
    NOT HOLD when Holm over the cells' one-sided p-values against the claim rejects at least
    one cell at family-wise ``alpha``, else INCONCLUSIVE (module doc)."""
    if not cells:
        return INCONCLUSIVE
    each = [decide_mean(c, threshold, better, bounds)[0] for c in cells]
    if all(v == HOLDS for v in each):
        return HOLDS
    p_against = [t_pvalues(c, threshold)[1 if better == "above" else 0] for c in cells]
    return FAILS if any(holm(p_against, alpha)) else INCONCLUSIVE


def _part_verdict_p(values: Sequence[float], threshold: float, better: str,
                    bounds: tuple[float, float] | None) -> tuple[str, float]:
    """One part of combine_parts: (its verdict on the 95% interval, its one-sided p-value against
    the claim). 'within': the claim is |mean| < threshold; the p-value against it is the smaller of
    the two one-sided tests beyond +threshold and below -threshold (at most one of them can be
    small). A part constant across seeds is not decided and gets no p-value (NaN: never rejected)."""
    if better == "within":
        ci = mean_interval(values, bounds)
        if is_constant(values) or not (np.isfinite(ci[1]) and np.isfinite(ci[2])):
            v = INCONCLUSIVE
        elif -threshold < ci[1] and ci[2] < threshold:
            v = HOLDS
        elif ci[1] > threshold or ci[2] < -threshold:
            v = FAILS
        else:
            v = INCONCLUSIVE
        p = min(t_pvalues(values, threshold)[0], t_pvalues(values, -threshold)[1])
    elif better in ("above", "below"):
        v = decide_mean(values, threshold, better, bounds)[0]
        p = t_pvalues(values, threshold)[1 if better == "above" else 0]
    else:
        raise ValueError(f"combine_parts: better {better!r}: 'above', 'below' or 'within'")
    return v, (math.nan if is_constant(values) else p)


def combine_parts(parts: Sequence[tuple[Sequence[float], float, str, tuple[float, float] | None]],
                  alpha: float = ALPHA) -> str:
    """A claim that needs every one of several parts, each with its own per-seed values, threshold
    and side: parts = [(values, threshold, better, bounds)], better 'above', 'below' or 'within'
    (the mean inside +-threshold). combine_cells with a threshold and a side per part: HOLDS when
    every part's interval is on the claimed side (intersection-union), DOES NOT HOLD when Holm over
    the parts' one-sided p-values against the claim rejects one at family-wise ``alpha``, else
    INCONCLUSIVE. A part constant across seeds decides nothing either way (module doc)."""
    if not parts:
        return INCONCLUSIVE
    vp = [_part_verdict_p(list(v), thr, better, bounds) for v, thr, better, bounds in parts]
    if all(v == HOLDS for v, _ in vp):
        return HOLDS
    return FAILS if any(holm([p for _, p in vp], alpha)) else INCONCLUSIVE


def best_mean_key(vals) -> float:
    """The key (a learning rate, a factor) whose values have the highest mean; ties: the smaller
    key; NaN when vals is empty. A selection rule: the caller counts a diverged run as 0."""
    best, best_v = math.nan, -math.inf
    for k in sorted(vals):
        v = float(np.mean(vals[k])) if len(vals[k]) else -math.inf
        if v > best_v:
            best, best_v = k, v
    return best
