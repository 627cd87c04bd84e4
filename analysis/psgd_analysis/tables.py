"""The reports' text form of pandas DataFrames, and two selection helpers.

pandas' own ``to_markdown`` needs the ``tabulate`` package and its ``to_csv`` prints floats
with full ``repr`` precision; the reports have always printed numbers in fixed formats
(Markdown: ``.4g`` unless the table says otherwise, NaN/None as ``-``, booleans as yes/no;
CSV: ``.6g``, NaN as an empty field), so their files stay comparable across versions.
These functions keep exactly that format::

    from psgd_analysis.tables import to_markdown, to_csv, match
    print(to_markdown(res.runs[["algorithm", "workers", "final_test_accuracy"]]))
    to_csv(df, "out.csv")
    match(res.runs, algorithm="Adasum", workers=16)   # rows equal to the values, floats isclose
"""
from __future__ import annotations

import csv
import io
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd


def py(v: Any) -> Any:
    """A numpy scalar as the Python scalar it holds; anything else unchanged."""
    return v.item() if isinstance(v, np.generic) else v


def is_nan(v: Any) -> bool:
    """None or a float NaN."""
    v = py(v)
    return v is None or (isinstance(v, float) and math.isnan(v))


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as dicts of Python scalars (in column order)."""
    cols = list(df.columns)
    return [{c: py(v) for c, v in zip(cols, row)} for row in df.itertuples(index=False, name=None)]


def fmt(v: Any, spec: str, na: str = "-") -> str:
    """One cell: ``na`` for None/NaN, yes/no for booleans, ints exactly under a 'g' spec,
    other numbers through ``spec``, everything else through str()."""
    v = py(v)
    if is_nan(v):
        return na
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)) and spec:
        if isinstance(v, int) and "g" in spec:
            return str(v)
        return format(v, spec)
    return str(v)


def to_markdown(df: pd.DataFrame, floatfmt: str | Mapping[str, str] = ".4g",
                headers: Mapping[str, str] | None = None) -> str:
    """A GitHub Markdown table; ``floatfmt`` is one spec or one per column (default .4g);
    ``headers`` renames columns in the header line only."""
    headers = headers or {}
    cols = [str(c) for c in df.columns]
    fmts = {c: (floatfmt.get(c, ".4g") if isinstance(floatfmt, Mapping) else floatfmt) for c in cols}
    lines = ["| " + " | ".join(headers.get(c, c) for c in cols) + " |",
             "| " + " | ".join("---" for _ in cols) + " |"]
    for r in records(df):
        lines.append("| " + " | ".join(fmt(v, fmts[c]) for c, v in zip(cols, r.values())) + " |")
    return "\n".join(lines)


def to_csv(df: pd.DataFrame, path_or_buf: Any = None, floatfmt: str = ".6g") -> str:
    """CSV text (numbers through ``floatfmt``, NaN empty), also written to a path or buffer."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([str(c) for c in df.columns])
    for r in records(df):
        w.writerow([fmt(v, floatfmt, na="") for v in r.values()])
    text = buf.getvalue()
    if isinstance(path_or_buf, str):
        with open(path_or_buf, "w") as fh:
            fh.write(text)
    elif path_or_buf is not None:
        path_or_buf.write(text)
    return text


def _equal(col: pd.Series, value: Any) -> np.ndarray:
    if isinstance(value, float) and pd.api.types.is_numeric_dtype(col) and \
            not pd.api.types.is_bool_dtype(col):
        return np.isclose(col.to_numpy(dtype=float), value, rtol=1e-12, atol=0.0)
    return (col == value).to_numpy(dtype=bool)


def match(df: pd.DataFrame, **equal: Any) -> pd.DataFrame:
    """The rows whose columns equal the given values (a float compares with a relative
    tolerance of 1e-12, so an LR read back from a file matches the spec's literal), with a
    fresh 0..n-1 index so ``.iloc[0]`` / ``[col].iloc[0]`` read the first match."""
    m = np.ones(len(df), dtype=bool)
    for k, v in equal.items():
        m &= _equal(df[k], v)
    return df[m].reset_index(drop=True)


def first(df: pd.DataFrame, col: str, default: Any = math.nan) -> Any:
    """The column's value in the first row (as a Python scalar), or ``default`` if empty."""
    return py(df[col].iloc[0]) if len(df) else default


def sort(df: pd.DataFrame, *keys: str) -> pd.DataFrame:
    """Stable sort by the keys (NaN last), with a fresh index."""
    return df.sort_values(list(keys), kind="mergesort", na_position="last").reset_index(drop=True)
