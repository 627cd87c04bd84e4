"""Summary metrics of runs and curves: best/final values, steps/samples/time to a target,
best-per-group (the "tuned LR" of a grid), median over seeds.

All functions take pandas DataFrames (a run's curve, a run table) and return numbers,
dicts or DataFrames. Groups keep the order in which they first appear (sweep order).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .tables import is_nan, match, records


def _valid(curve: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions and values of the non-NaN points of a column (test metrics are NaN between
    evaluations, docs/results.md)."""
    if col not in curve:
        return np.array([], dtype=np.int64), np.array([], dtype=float)
    v = curve[col].to_numpy(dtype=float)
    idx = np.nonzero(~np.isnan(v))[0]
    return idx, v[idx]


def final_value(curve: pd.DataFrame, col: str) -> float:
    """The last non-NaN value of a curve column (NaN if none)."""
    _, v = _valid(curve, col)
    return float(v[-1]) if len(v) else math.nan


def best_value(curve: pd.DataFrame, col: str, maximize: bool = True) -> float:
    """Max (or min) over the non-NaN points of a curve column."""
    _, v = _valid(curve, col)
    if not len(v):
        return math.nan
    return float(v.max() if maximize else v.min())


def first_reach(curve: pd.DataFrame, col: str, target: float, maximize: bool = True
                ) -> dict[str, float]:
    """Where a curve first reaches ``target`` (>= if maximize, else <=).

    Returns {'step', 'samples', 'epoch', 'wall_s', 'sim_s'} of that logged point
    (NaN everywhere if never reached). Resolution is the logging interval: log_every
    for train_loss, eval_every for test_accuracy.
    """
    idx, v = _valid(curve, col)
    hit = np.nonzero(v >= target if maximize else v <= target)[0]
    keys = ("step", "samples", "epoch", "wall_s", "sim_s")
    if not len(hit):
        return {k: math.nan for k in keys}
    i = idx[hit[0]]
    return {k: float(curve[k].iloc[i]) if k in curve else math.nan for k in keys}


def run_metrics(res: Any, target_accuracy: float | None = None, target_loss: float | None = None
                ) -> pd.DataFrame:
    """One row per run: best/final test accuracy and train loss, and steps / samples /
    wall time / simulated time to reach the targets (NaN when not reached).

    ``res`` is a psgd_analysis.results.Results.
    """
    rows = []
    cols = ["run_id", "algorithm", "workers", "lr", "status"]
    if not len(res.runs):  # a file with no runs (a sweep interrupted before its first)
        return pd.DataFrame(columns=cols + ["final_accuracy", "best_accuracy", "final_train_loss",
                                            "min_train_loss"])
    for r in records(res.runs[cols]):
        c = res.curve(r["run_id"])
        row = dict(r, final_accuracy=final_value(c, "test_accuracy"),
                   best_accuracy=best_value(c, "test_accuracy", True),
                   final_train_loss=final_value(c, "train_loss"),
                   min_train_loss=best_value(c, "train_loss", False))
        if target_accuracy is not None:
            hit = first_reach(c, "test_accuracy", target_accuracy, True)
            row.update({f"acc_{k}_to_target": v for k, v in hit.items() if k != "epoch"})
        if target_loss is not None:
            hit = first_reach(c, "train_loss", target_loss, False)
            row.update({f"loss_{k}_to_target": v for k, v in hit.items() if k != "epoch"})
        rows.append(row)
    return pd.DataFrame(rows)


def groups(df: pd.DataFrame, keys: Sequence[str]) -> list[tuple[tuple, pd.DataFrame]]:
    """[(key values, rows)] in first-seen order; NaN keys form their own group."""
    if not len(df):
        return []
    out = []
    for kv, g in df.groupby(list(keys), sort=False, dropna=False):
        kv = kv if isinstance(kv, tuple) else (kv,)
        out.append((tuple(x.item() if isinstance(x, np.generic) else x for x in kv), g))
    return out


def best_per_group(df: pd.DataFrame, keys: Sequence[str], value: str, maximize: bool = True,
                   valid: Callable[[dict], bool] | None = None) -> pd.DataFrame:
    """For each group of ``keys``, the row with the best ``value`` (the tuned LR of an LR
    grid). NaN values and rows failing ``valid`` never win; a group with no valid row
    yields its first row with the value set to NaN. Ties go to the first row (sweep order)."""
    out = []
    for _, g in groups(df, keys):
        best, best_v = None, None
        for r in records(g):
            v = r[value]
            if is_nan(v) or (valid is not None and not valid(r)):
                continue
            if best_v is None or (v > best_v if maximize else v < best_v):
                best, best_v = r, v
        if best is None:
            best = records(g.iloc[:1])[0]
            best[value] = math.nan
        out.append(best)
    return pd.DataFrame(out, columns=list(df.columns))


def median_over(df: pd.DataFrame, keys: Sequence[str], value: str, none_value: float = math.inf
                ) -> pd.DataFrame:
    """Median of ``value`` over the rows of each group (e.g. over seeds).

    NaN inputs count as ``none_value`` (default +inf: a run that never converged is slower
    than any that did), so the median is finite only if more than half the seeds converged.
    Adds 'n' (rows) and 'n_valid' (non-NaN rows).
    """
    out = []
    for kv, g in groups(df, keys):
        v = g[value].to_numpy(dtype=float)
        med = float(np.median(np.where(np.isnan(v), none_value, v)))
        row = dict(zip(keys, kv))
        row[value] = med if math.isfinite(med) else math.nan
        row["n"] = len(v)
        row["n_valid"] = int(np.sum(~np.isnan(v)))
        out.append(row)
    return pd.DataFrame(out)


def pivot(df: pd.DataFrame, row_key: str, col_key: str, value: str, fmt: Callable[[Any], Any]
          | None = None, row_label: str | None = None) -> pd.DataFrame:
    """A wide table: one row per ``row_key`` value, one column per ``col_key`` value (the
    first matching row's value; NaN where none), in first-seen order."""
    rows_v = list(df[row_key].unique())
    cols_v = list(df[col_key].unique())
    out: dict[str, list] = {row_label or row_key: rows_v}
    for cv in cols_v:
        col = []
        for rv in rows_v:
            sub = match(df, **{row_key: rv, col_key: cv})
            x = sub[value].iloc[0] if len(sub) else math.nan
            col.append(fmt(x) if fmt else x)
        out[str(cv)] = col
    return pd.DataFrame(out)
