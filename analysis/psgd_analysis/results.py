"""Load workbench HDF5 results files (docs/results.md: the HDF5 layout) into tidy pandas
DataFrames.

    import psgd_analysis as pa
    res = pa.load("reports/lenet_sweep.h5")            # or a list of files: one table
    res.runs        # one row per run: run_id, file, the swept config keys, status, summary
    res.curves      # long: run_id, step, epoch, samples, wall_s, sim_s, lr, train_loss,
                    #       test_loss, test_accuracy (NaN between evaluations)
    res.metrics     # long: run_id, metric, step, tensor, value (orthogonality, diversity,
                    #       seq_error, ...; 'tensor' is the column of the metric's dataset)
    res.swept       # the config keys (dotted) that differ between runs: columns of res.runs
    res.curve(run_id)                    # one run's curves, one row per logged step
    res.metric(run_id, "orthogonality")  # wide: step + one column per tensor + mean

Several files (a sweep split over jobs, or related specs) concatenate into one Results;
``runs.file`` says where each run came from. Run ids are the workbench's (e.g.
``algorithm=adasum,workers=8``); only when two files hold the same id are those ids
qualified as ``<file>:<id>``, where <file> is the shortest name that tells the files apart
(the stem, else the base name, else the path: ``job1/o.h5:lr=0.1``). Every run of every
file is a row. The raw nested dicts of analysis/wbread.py stay
available as ``res.raw`` (one per file) and ``res.run(run_id)``.
"""
from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter
from functools import cached_property
from typing import Any, Sequence

import numpy as np
import pandas as pd

# wbread.py lives one directory up (analysis/): the plain HDF5 reader, kept for scripts that
# want nested dicts; this module builds the tables on it instead of re-reading HDF5.
_HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(_HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(_HERE))
import wbread  # noqa: E402

def _schema_columns(file_attrs: Sequence[dict[str, Any]], runs: dict[str, dict[str, Any]]
                    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The summary fields and curve columns of the files, in their declared order.

    Every results file carries the workbench's declaration of its result columns in the
    root attribute ``result_schema_json`` (``workbench list --json`` prints the same as
    "results"). A file written before it existed: the summary keys and curve datasets its
    runs hold, in the order they first appear."""
    summary: list[str] = []
    curves: list[str] = []
    for attrs in file_attrs:
        try:
            schema = json.loads(attrs.get("result_schema_json", "") or "{}")
        except json.JSONDecodeError:
            schema = {}
        # wall_s, sim_s are run attributes; id, index, status come from the run group itself.
        summary += [f["name"] for f in schema.get("summary", [])
                    if f.get("when") != "run" and f["name"] not in ("wall_s", "sim_s")]
        curves += [c["name"] for c in schema.get("curves", [])]
    for run in runs.values():
        summary += [k for k in run.get("summary", {}) if k not in ("wall_s", "sim_s", "index")]
        curves += list(run.get("curves", {}))
    return tuple(dict.fromkeys(summary)), tuple(dict.fromkeys(curves))


def algorithm_label(alg: dict[str, Any]) -> str:
    """A short human label for a resolved algorithm config.

    sync_sgd + combine sum is the Adasum papers' "Sum" baseline; + average is "Average"
    (Horovod's default op). Adasum on optimizer deltas is "Adasum (delta)"
    (Maleki et al., MLSys 2021 4.1: DistributedOptimizer with op=Adasum).
    A non-default lr_scaling / local_steps is appended so labels stay unique.
    """
    name = alg.get("name", "?")
    if name == "sync_sgd":
        label = {"sum": "Sum", "average": "Average"}.get(alg.get("combine", "average"), name)
    elif name == "adasum":
        label = "Adasum" if alg.get("apply", "gradient") == "gradient" else "Adasum (delta)"
        if alg.get("granularity", "tensor") != "tensor":
            label += f" [{alg['granularity']}]"
    else:
        label = name
    if alg.get("lr_scaling", "none") not in ("none", None):
        label += f", LR x {alg['lr_scaling']}"
    if int(alg.get("local_steps", 1) or 1) != 1:
        label += f", k={alg['local_steps']}"
    return label


def _name(v: Any) -> str:
    return v.get("name", "?") if isinstance(v, dict) else str(v)


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys; lists become tuples (hashable, so groupby works)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, prefix + k + "."))
        else:
            out[prefix + k] = tuple(v) if isinstance(v, list) else v
    return out


def _sweep_keys(file_attrs: list[dict[str, Any]], flats: dict[str, dict[str, Any]],
                file_of: dict[str, str], varied: list[str]) -> list[str]:
    keys: list[str] = []
    for attrs in file_attrs:
        try:
            sweep = json.loads(attrs.get("experiment_json", "{}") or "{}").get("sweep") or {}
        except (json.JSONDecodeError, AttributeError):
            sweep = {}
        for k, vals in sweep.items():
            vals = vals if isinstance(vals, list) else [vals]
            if any(isinstance(v, dict) for v in vals):
                subs = ["name"] + [s for v in vals if isinstance(v, dict) for s in v]
                keys += [f"{k}.{s}" for s in subs]
            else:
                keys.append(k)
    if len(file_attrs) > 1:  # keys constant within each file that differ between files
        for k in varied:
            per_file: dict[str, set] = {}
            for rid, f in flats.items():
                per_file.setdefault(file_of[rid], set()).add(repr(f.get(k)))
            if all(len(v) == 1 for v in per_file.values()):
                keys.append(k)
    present = set().union(*flats.values()) if flats else set()
    return [k for k in dict.fromkeys(keys) if k in present]


def _file_labels(paths: Sequence[str]) -> list[str]:
    """The shortest name that tells each file apart: its stem ("sweep" for sweep.h5), else
    its base name ("a.h5" and "a.hdf5"), else its path ("job1/o.h5" and "job2/o.h5"). A run
    id held by several files is qualified with it as ``<label>:<id>``."""
    for name in (lambda p: os.path.splitext(os.path.basename(p))[0], os.path.basename,
                 lambda p: os.path.normpath(p), lambda p: os.path.realpath(p)):
        labels = [name(p) for p in paths]
        if len(set(labels)) == len(labels):
            return labels
    dup = next(p for p in paths if sum(os.path.realpath(q) == os.path.realpath(p) for q in paths) > 1)
    raise ValueError(f"psgd_analysis.load: {dup} is given twice")


class Results:
    """One or more results files as tables. See the module docstring."""

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike]):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        if not self.paths:
            raise ValueError("psgd_analysis.load: no results file given")
        # One file given twice under two names (a symbolic or hard link, "./a.h5" and "a.h5")
        # would count every run twice: one file is one inode.
        seen: dict[tuple[int, int], str] = {}
        for p in self.paths:
            st = os.stat(p)
            if (st.st_dev, st.st_ino) in seen:
                raise ValueError(f"psgd_analysis.load: {p} is the same file as "
                                 f"{seen[(st.st_dev, st.st_ino)]} (a link, or one path given "
                                 "twice): give it once")
            seen[(st.st_dev, st.st_ino)] = p
        self.raw = [wbread.load(p) for p in self.paths]
        #: the first file's root attributes (git_commit, mpi_ranks, experiment_json, ...);
        #: every file's are in file_attrs
        self.attrs: dict[str, Any] = self.raw[0]["attrs"]
        self.file_attrs = [r["attrs"] for r in self.raw]
        try:
            self.experiment = json.loads(self.attrs.get("experiment_json", "{}") or "{}")
        except json.JSONDecodeError:
            self.experiment = {}
        ids = Counter(rid for r in self.raw for rid in r["runs"])
        labels = _file_labels(self.paths)
        self._runs: dict[str, dict[str, Any]] = {}
        self._file_of: dict[str, str] = {}
        for p, label, r in zip(self.paths, labels, self.raw):
            for rid, run in r["runs"].items():
                key = f"{label}:{rid}" if ids[rid] > 1 else rid
                self._runs[key] = run
                self._file_of[key] = label if label != os.path.splitext(os.path.basename(p))[0] \
                    else os.path.basename(p)
        # One row per run of every file, whatever the files are called (two jobs' o.h5).
        total = sum(len(r["runs"]) for r in self.raw)
        if len(self._runs) != total:
            raise ValueError(f"psgd_analysis.load: {total} runs in {len(self.paths)} files but "
                             f"only {len(self._runs)} distinct run keys (is a file given twice?)")
        flats = {rid: _flat(run["config"]) for rid, run in self._runs.items()}
        keys = sorted(set().union(*flats.values())) if flats else []
        #: every dotted config key whose resolved value differs between the runs (this
        #: includes defaults that follow from a swept choice, e.g. algorithm.combine)
        self.varied = [k for k in keys if len({repr(f.get(k)) for f in flats.values()}) > 1]
        #: the swept keys: those of the specs' "sweep" objects (a swept dict or algorithm
        #: name contributes its dotted fields), then, across several files, the keys that
        #: tell the files apart. They are columns of ``runs``.
        self.swept = _sweep_keys([r["attrs"] for r in self.raw], flats, self._file_of, self.varied)
        #: the summary fields (run table columns) and curve columns, as the files declare them
        self.summary_columns, self.curve_columns = _schema_columns(self.file_attrs, self._runs)
        self.runs = self._run_table(flats)

    # --- the run table ------------------------------------------------------------
    def _run_table(self, flats: dict[str, dict[str, Any]]) -> pd.DataFrame:
        rows = []
        for rid, r in self._runs.items():
            c = r["config"]
            s = r["summary"]
            alg = c.get("algorithm", {})
            model = c.get("model", {})
            row = {
                "run_id": rid,
                "file": self._file_of[rid],
                "index": r["index"],
                "status": r["status"],
                "algorithm": algorithm_label(alg) if isinstance(alg, dict) else str(alg),
                "algorithm_name": _name(alg),
                "model": _name(model),
                "x_max": float(model.get("x_max", math.nan)) if isinstance(model, dict) else math.nan,
                "optimizer": _name(c.get("optimizer")),
                "schedule": _name(c.get("schedule")),
                "workers": int(c.get("workers", 1)),
                "batch_size": int(c.get("batch_size", 0)),
                "global_batch": int(c.get("workers", 1)) * int(c.get("batch_size", 0)),
                "lr": float(c.get("lr", math.nan)),
                "seed": int(c.get("seed", 0)),
                "wall_s": r["wall_s"],
                "sim_s": r["sim_s"],
                "error": r.get("error", ""),
            }
            for k in self.summary_columns:
                v = s.get(k)
                row[k] = math.nan if v is None else v
            for k in self.swept:
                if k not in row:
                    row[k] = flats[rid].get(k)
            row["config"] = c
            rows.append(row)
        if not rows:
            return pd.DataFrame(columns=["run_id", "file", "index", "status", *self.summary_columns])
        return pd.DataFrame(rows)

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        return (f"Results({', '.join(os.path.basename(p) for p in self.paths)}: {len(self)} runs, "
                f"swept {', '.join(self.swept) or 'nothing'})")

    def run_ids(self) -> list[str]:
        return list(self._runs)

    def provenance(self) -> pd.DataFrame:
        """Who computed each run: one row per run (run_id, file, from, workbench_version,
        git_commit, mpi_ranks, devices, host, finished_utc). A file that ``--resume`` extended
        can hold runs of several binaries and rank counts; its root attributes (``attrs``) are
        only its first writer's. ``from`` is "writer" (stamped when the run was journaled), or
        "file header" for a run written before per-run provenance (the file's root attributes,
        then its only writer's)."""
        cols = ["from", "workbench_version", "git_commit", "mpi_ranks", "devices", "host",
                "finished_utc"]
        rows = []
        for rid, r in self._runs.items():
            p = r.get("provenance", {})
            rows.append({"run_id": rid, "file": self._file_of[rid],
                         **{k: p.get(k) for k in cols}})
        return pd.DataFrame(rows, columns=["run_id", "file", *cols])

    def ranks_label(self) -> str:
        """The rank counts the runs were computed with: "2", or "1 (27 runs), 2 (27 runs)"
        when they differ (a file extended by ``--resume`` at another rank count)."""
        prov = self.provenance()
        counts = Counter("?" if v is None or (isinstance(v, float) and math.isnan(v)) else str(int(v))
                         for v in prov["mpi_ranks"])
        if len(counts) <= 1:
            return next(iter(counts), "?")
        return ", ".join(f"{k} ({n} runs)" for k, n in sorted(counts.items()))

    def run(self, run_id: str) -> dict[str, Any]:
        """The run as wbread reads it: config, status, summary, curves, metrics, workers."""
        return self._runs[run_id]

    def config(self, run_id: str) -> dict[str, Any]:
        return self._runs[run_id]["config"]

    # --- curves -------------------------------------------------------------------------
    def curve(self, run_id: str) -> pd.DataFrame:
        """One run's /curves: one row per logged step (NaN where not evaluated)."""
        cur = self._runs[run_id]["curves"]
        cols = [k for k in self.curve_columns if k in cur] + sorted(k for k in cur if k not in self.curve_columns)
        return pd.DataFrame({k: np.asarray(cur[k]) for k in cols})

    @cached_property
    def curves(self) -> pd.DataFrame:
        """Every run's curves stacked (long format), run_id first."""
        parts = []
        for rid in self._runs:
            c = self.curve(rid)
            c.insert(0, "run_id", rid)
            parts.append(c)
        if not parts:
            return pd.DataFrame(columns=["run_id", *self.curve_columns])
        df = pd.concat(parts, ignore_index=True)
        for k in self.curve_columns:
            if k not in df:
                df[k] = np.nan
        return df[["run_id", *self.curve_columns] + [k for k in df.columns
                                                      if k not in self.curve_columns and k != "run_id"]]

    # --- diagnostics -------------------------------------------------------------------
    def metric(self, run_id: str, name: str) -> pd.DataFrame | None:
        """/runs/<id>/metrics/<name>: 'step' plus one column per named column, or None.

        orthogonality / diversity columns are the tensor names plus 'mean' / 'total';
        seq_error columns are listed in the dataset's 'columns' attribute (docs/guide.md "Metrics").
        """
        run = self._runs[run_id]
        m = run.get("metrics", {})
        if name not in m:
            return None
        data = np.asarray(m[name], dtype=float)
        if data.ndim == 1:
            data = data[:, None]
        attrs = run.get("metrics_attrs", {}).get(name, {})
        cols = attrs.get("tensor_names") or attrs.get("columns") or [f"c{i}" for i in
                                                                         range(data.shape[1])]
        if isinstance(cols, str):
            cols = [cols]
        steps = np.asarray(m.get(name + "_step", np.arange(data.shape[0])), dtype=float).ravel()
        if np.all(np.isfinite(steps)) and np.all(steps == np.round(steps)):
            steps = steps.astype(np.int64)
        out = {"step": steps}
        for j, c in enumerate(cols):
            out[str(c)] = data[:, j]
        return pd.DataFrame(out)

    def metric_names(self, run_id: str) -> list[str]:
        """The metrics a run recorded (the datasets under metrics/ other than *_step)."""
        m = self._runs[run_id].get("metrics", {})
        return [k for k in m if not k.endswith("_step")]

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """Every run's metrics, long: run_id, metric, step, tensor, value."""
        parts = []
        for rid in self._runs:
            for name in self.metric_names(rid):
                w = self.metric(rid, name)
                if w is None:
                    continue
                long = w.melt(id_vars="step", var_name="tensor", value_name="value")
                long.insert(0, "metric", name)
                long.insert(0, "run_id", rid)
                parts.append(long)
        if not parts:
            return pd.DataFrame(columns=["run_id", "metric", "step", "tensor", "value"])
        return pd.concat(parts, ignore_index=True)


def load(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> Results:
    """Load one results file, or several as one set of tables (see Results)."""
    return Results(paths)
