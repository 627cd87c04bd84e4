"""What the Adasum reproduction targets R1-R6 of DESIGN.md section 11 share (one module per
report: adasum_lenet, adasum_seq_error, adasum_orthogonality, adasum_latency, adasum_toy,
adasum_optimizers): the divergence rule every target states, the LR-grid look-ups of the
targets that choose an LR on validation (R1, R6: per-seed values of a cell, a grid table's
cell), and small formatting and runtime functions.

The checks of every target are fixed before and independently of any data: thresholds are
stated in the report text, and a disagreement is reported with the numbers, never hidden.
Absolute values differ from the papers (Fashion-MNIST instead of MNIST, 2 CPU cores instead
of GPU clusters); the claim checked is the shape (ordering, ratio, trend).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .results import Results
from .tables import match, py, records


def _pp(x: float) -> str:
    """Accuracy as percent with one decimal ('-' for NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _uniq(col: pd.Series) -> list[Any]:
    """A column's distinct values in first-seen order, as Python scalars."""
    return [py(v) for v in col.unique()]


def _lr_is(df: pd.DataFrame, lr: float, rel_tol: float = 1e-9) -> pd.DataFrame:
    """The rows whose lr is ``lr`` (relative tolerance), with a fresh index."""
    return df[[math.isclose(x, lr, rel_tol=rel_tol) for x in df["lr"]]].reset_index(drop=True)


def _runtime_from_results(res: Results) -> dict[str, str]:
    """Compute time recorded in the file: the sum of the runs' wall times (each run's wall
    time is the whole run on its ranks), and the rank count it ran with."""
    total = float(np.nansum(res.runs["wall_s"].to_numpy(dtype=float)))
    return {"experiment": f"{total / 60:.1f} min ({len(res)} runs, sum of run wall times, "
                          f"mpirun -n {res.ranks_label()})"}


#: The one divergence rule of every target (psgd_analysis.stats.split_diverged): a diverged
#: run has no accuracy; the tables give the diverged count beside the accuracy of the runs
#: that did not diverge, and an LR is chosen among those with the most runs that did not
#: diverge (then the best mean validation accuracy).
DIVERGED_RULE = ("a diverged run has no accuracy: intervals are over the runs that did not diverge, "
                 "with the diverged count beside them; an LR is chosen among those with the most "
                 "non-diverged seeds")


def _seed_values(runs: pd.DataFrame, col: str, diverged: float | None, **cell: Any) -> dict[int, float]:
    """seed -> ``col`` of the runs matching ``cell`` (lr matched with a tolerance): completed
    runs their value; diverged runs are left out (``diverged`` None, DIVERGED_RULE) or, for
    an old caller, scored ``diverged``; runs that did not finish are left out. Shared by the
    LR-grid targets (R1, R6)."""
    out: dict[int, float] = {}
    s = match(runs, **{k: v for k, v in cell.items() if k != "lr"})
    if "lr" in cell:
        s = _lr_is(s, cell["lr"])
    for r in records(s):
        if r["status"] == "completed" and not (r[col] is None or math.isnan(r[col])):
            out[int(r["seed"])] = float(r[col])
        elif r["status"] == "diverged" and diverged is not None:
            out[int(r["seed"])] = diverged
    return out


def _lr_grid_values(runs: pd.DataFrame, col: str, diverged: float,
                    cells: Mapping[tuple, Mapping[str, Any]], grid: Sequence[float]
                    ) -> dict[tuple, dict[int, float]]:
    """(*cell key, lr) -> seed -> ``col`` for every cell (its filter) and grid LR (R1, R6)."""
    return {(*k, lr): _seed_values(runs, col, diverged, lr=lr, **flt)
            for k, flt in cells.items() for lr in grid}


def _grid_cell(s: pd.DataFrame, v: Mapping[int, float], lr: float, chosen_lr: float,
               fmt: Any) -> str:
    """One cell of an LR-grid table: '-' without runs, the statuses without values, else
    fmt(v) with the diverged count, bold when lr is the chosen LR (R1, R6)."""
    if not len(s):
        return "-"
    if not v:
        return ", ".join(sorted(set(map(str, s["status"]))))
    cell = fmt(v)
    bad = int((s["status"] == "diverged").sum())
    cell += f" ({bad} diverged)" if bad else ""
    return f"**{cell}**" if math.isclose(lr, chosen_lr) else cell
