#!/usr/bin/python3
"""Read a psgd-workbench HDF5 results file (DESIGN.md section 9) into plain Python.

    import wbread
    res = wbread.load("out/quickstart.h5")
    res["attrs"]["git_commit"]                                     # the file's first writer
    res["runs"][run_id]["provenance"]["git_commit"]                # the binary that ran it
    for run_id, run in res["runs"].items():
        run["config"]["algorithm"]["name"], run["status"], run["summary"]["final_test_accuracy"]
        run["curves"]["step"], run["curves"]["train_loss"]        # numpy arrays
    res["summary"]                                                 # list of dicts, sweep order

Uses Debian's /usr/bin/python3 with python3-h5py and python3-numpy.
"""
import json
import os
import warnings

import h5py
import numpy as np


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _read_group(g):
    out = {}
    for k, v in g.items():
        if isinstance(v, h5py.Group):
            out[k] = _read_group(v)
        else:
            out[k] = v[()]
    return out


def _warn_unfolded(path):
    """A journal beside the file holds finished runs not yet folded into it (a sweep that
    is running, or one that was killed: `workbench run ... --resume` folds them)."""
    j = os.fspath(path) + ".journal"
    if os.path.exists(j) and os.path.getsize(j) > 0:
        warnings.warn(f"{j} exists: finished runs not yet folded into {path} (a sweep still "
                      f"running, or a killed one: `workbench run SPEC -o {path} --resume` folds "
                      f"them)", stacklevel=3)


def load(path):
    """Load a results file: {"attrs": {...}, "runs": {id: run}, "summary": [row, ...]}."""
    _warn_unfolded(path)
    with h5py.File(path, "r") as f:
        attrs = {k: _s(v) for k, v in f.attrs.items()}
        runs = {}
        for rid, g in f["runs"].items():
            run = {
                "id": rid,
                "config": json.loads(_s(g.attrs["config_json"])),
                "status": _s(g.attrs["status"]),
                "error": _s(g.attrs.get("error", "")),
                "wall_s": float(g.attrs["wall_s"]),
                "sim_s": float(g.attrs["sim_s"]),
                "index": int(g.attrs.get("index", -1)),
                "summary": json.loads(_s(g.attrs.get("summary_json", "{}"))),
                # who computed the run (binary, ranks, devices, host, time); a file from
                # before per-run provenance gets its root attributes (its only writer)
                "provenance": json.loads(_s(g.attrs["provenance_json"])) if "provenance_json" in g.attrs
                else {"from": "file header", **{k: attrs.get(k) for k in (
                    "workbench_version", "git_commit", "mpi_ranks", "devices", "host")},
                    "file_created_utc": attrs.get("created_utc")},
                "curves": {k: np.asarray(v[()]) for k, v in g["curves"].items()},
            }
            for sub in ("metrics", "workers"):
                if sub in g:
                    run[sub] = _read_group(g[sub])
                    run[sub + "_attrs"] = {
                        k: {a: _s(x) if not isinstance(x, np.ndarray) else [_s(y) for y in x]
                            for a, x in v.attrs.items()}
                        for k, v in g[sub].items()}
            if "final_params" in g:
                run["final_params"] = np.asarray(g["final_params"][()])
            runs[rid] = run
        summary = []
        if "summary" in f:
            rows = f["summary"][()]
            for r in rows:
                summary.append({n: _s(r[n]) if not isinstance(r[n], np.generic) else r[n].item()
                                for n in rows.dtype.names})
    runs = dict(sorted(runs.items(), key=lambda kv: kv[1]["index"]))
    return {"attrs": attrs, "runs": runs, "summary": summary}


def varied(res):
    """The config keys (dotted) whose values differ between runs."""
    def flat(d, p=""):
        out = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, p + k + "."))
            else:
                out[p + k] = json.dumps(v)
        return out
    flats = [flat(r["config"]) for r in res["runs"].values()]
    keys = set().union(*flats) if flats else set()
    return sorted(k for k in keys if len({f.get(k) for f in flats}) > 1)
