"""Seeds and intervals (issue 20; DESIGN.md section 11 "How a verdict is earned").

Every interval in the reports is a two-sided 95% Student-t interval for the mean over
seeds: mean +- t_{0.975, n-1} * s / sqrt(n) (s the sample standard deviation). A verdict
compares an interval with a threshold fixed before the runs:

    decide(lo, hi, threshold, better="below")  ->  "HOLDS" | "DOES NOT HOLD" | "INCONCLUSIVE"

HOLDS only when the whole interval is on the claimed side of the threshold, DOES NOT HOLD
only when the whole interval is on the other side, INCONCLUSIVE otherwise (the report then
shows the interval's width). With fewer than 2 seeds there is no interval: INCONCLUSIVE.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np
from scipy import stats as _st

HOLDS, FAILS, INCONCLUSIVE = "HOLDS", "DOES NOT HOLD", "INCONCLUSIVE"
METHOD = "95% Student-t interval over seeds (mean +- t_0.975,n-1 s/sqrt(n))"


def t_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, lo, hi, n) of the finite values; lo = hi = mean when n == 1, NaN when n == 0."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n == 1:
        return m, math.nan, math.nan, 1
    half = float(_st.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half, n


def decide(lo: float, hi: float, threshold: float = 0.0, better: str = "below") -> str:
    """The claim is 'the quantity is below (better='below') / above the threshold'."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return INCONCLUSIVE
    if better == "below":
        return HOLDS if hi < threshold else FAILS if lo > threshold else INCONCLUSIVE
    return HOLDS if lo > threshold else FAILS if hi < threshold else INCONCLUSIVE


def fmt_ci(m: float, lo: float, hi: float, spec: str = ".4f", scale: float = 1.0) -> str:
    """'m [lo, hi]' (or 'm' alone without an interval, '-' without data)."""
    if m is None or not np.isfinite(m):
        return "-"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return format(m * scale, spec)
    return f"{format(m * scale, spec)} [{format(lo * scale, spec)}, {format(hi * scale, spec)}]"


def combine(verdicts: Iterable[str]) -> str:
    """A claim over several cells: HOLDS when every cell holds, DOES NOT HOLD when any cell
    does not, else INCONCLUSIVE."""
    v = list(verdicts)
    if not v:
        return INCONCLUSIVE
    if any(x == FAILS for x in v):
        return FAILS
    return HOLDS if all(x == HOLDS for x in v) else INCONCLUSIVE
