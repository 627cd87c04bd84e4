"""The runs of the Adaptive SGD reproduction targets (DESIGN.md section 11, R9 and R10; Ma et
al., arXiv:2110.07029, section 5): the algorithms' parameter defaults read from the C++
registry (`workbench list --json`), each run of a results file as a row dict with its label
and arm (the paper's three arms and labelled extras), curve look-ups on the simulated clock
(best, first reach, time to a target within a budget), what prices the runs' time
(clock_text), and the report assembly on the shared engine (_to_report). The reports:
adaptive_figures (R9), adaptive_sensitivity (R10); their rules: adaptive_rules.
"""
import json
import math
import os

import numpy as np

from .report import Report
from .tables import records


def _parse_default(text):
    """A default as `workbench list` prints it -> a Python value."""
    t = str(text).strip().strip('"')
    if t in ("true", "false"):
        return t == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def cpp_defaults(algorithm="adaptive_sgd", wb=None):
    """An algorithm's parameter defaults from `workbench list --json` (the C++ registry is
    the one source; nothing is retyped here). The binary: ``wb``, else $PSGD_WB, else
    build/workbench."""
    import json
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wb = wb or os.environ.get("PSGD_WB") or os.path.join(root, "build", "workbench")
    try:
        out = subprocess.run([wb, "list", "--json"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"{wb}: cannot read the C++ defaults with `list --json` ({e}); build the "
                         "workbench or set PSGD_WB")
    params = json.loads(out)["algorithms"][algorithm]["params"]
    return {k: _parse_default(v["default"]) for k, v in params.items()}


class _Defaults(dict):
    """ADAPTIVE_DEFAULTS, read from the binary on first use."""

    def _load(self):
        if not dict.__len__(self):
            self.update(cpp_defaults("adaptive_sgd"))

    def get(self, k, d=None):
        self._load()
        return dict.get(self, k, d)

    def __getitem__(self, k):
        self._load()
        return dict.__getitem__(self, k)


ADAPTIVE_DEFAULTS = _Defaults()


def algo_label(cfg):
    a = cfg["algorithm"]
    name = a["name"]
    if name == "adaptive_sgd":
        return "Adaptive"
    if name == "elastic_sgd":
        if a.get("local_steps") == 1 and a.get("split_batch"):
            return "Grad. aggregation"
        if a.get("gamma", 0) > 0:
            return "Elastic+momentum"
        return "Elastic"
    return name


def adaptive_variant(cfg, base_megabatch=None):
    """Parameters of an adaptive_sgd run that differ from the paper defaults (except the
    mega-batch size of the spec's base, passed as base_megabatch)."""
    a = cfg["algorithm"]
    diff = []
    for k, v in a.items():
        if k == "name":
            continue
        ref = base_megabatch if (k == "megabatch" and base_megabatch) else ADAPTIVE_DEFAULTS.get(k)
        if v != ref:
            diff.append(f"{k}={v}")
    return ", ".join(diff) if diff else "defaults"


def nanmax(a):
    a = np.asarray(a, dtype=float)
    return float(np.nanmax(a)) if np.any(np.isfinite(a)) else float("nan")


def first_reach(curves, target):
    """(simulated seconds, mega-batch) when test_accuracy first reaches target, or None."""
    acc = np.asarray(curves["test_accuracy"], dtype=float)
    for i, a in enumerate(acc):
        if np.isfinite(a) and a >= target - 1e-12:
            return float(curves["sim_s"][i]), int(curves["step"][i])
    return None


def fmt(x, spec=".4f"):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-"
    return format(x, spec)


def fmt_t(r):
    return "never" if r is None else f"{r[0] * 1e3:.1f} ms (mb {r[1]})"


def run_rows(res):
    rows = []
    for r in records(res.runs[["run_id"]]):
        rid = r["run_id"]
        run = res.run(rid)
        cfg = run["config"]
        c = run["curves"]
        acc = np.asarray(c["test_accuracy"], dtype=float)
        best = nanmax(acc)
        ib = int(np.nanargmax(acc)) if np.isfinite(best) else -1
        rows.append({
            "id": rid, "run": run, "lr": cfg["lr"], "workers": cfg["workers"],
            "label": algo_label(cfg), "status": run["status"], "best": best,
            "best_mb": int(c["step"][ib]) if ib >= 0 else -1,
            "best_t": float(c["sim_s"][ib]) if ib >= 0 else float("nan"),
            "final": float(acc[-1]) if len(acc) else float("nan"),
            "sim_s": run["sim_s"], "wall_s": run["wall_s"],
            "megabatches": int(c["step"][-1]) if len(c["step"]) else 0,
        })
    return rows


def per_worker(run, key):
    """A workers/<key> series as (mega-batches x W); 1-D in the file when W = 1."""
    W = int(run["config"]["workers"])
    return np.asarray(run["workers"][key], dtype=float).reshape(-1, W)


PAPER_ARMS = ("Adaptive", "Elastic (paper, gamma 0.9)", "Grad. aggregation")


def arm_label(cfg, base_megabatch=50):
    """The R9 arms: the paper's three (Adaptive with the paper-literal defaults, the paper's
    Elastic with the same merge momentum, gradient aggregation) and labelled extras."""
    a = cfg["algorithm"]
    if a["name"] == "adaptive_sgd":
        v = adaptive_variant(cfg, base_megabatch)
        return "Adaptive" if v == "defaults" else f"Adaptive [{v}] (ablation)"
    if a["name"] == "elastic_sgd":
        if a.get("local_steps") == 1 and a.get("split_batch"):
            return "Grad. aggregation"
        if a.get("gamma", 0) > 0:
            return "Elastic (paper, gamma 0.9)" if a.get("gamma") == 0.9 else f"Elastic gamma {a['gamma']}"
        return "Elastic, gamma 0 (extra)"
    return a["name"]


def within(curves, budget):
    """Indices of the curve points within the simulated-time budget (common time axis)."""
    return np.asarray(curves["sim_s"], dtype=float) <= budget * (1 + 1e-12)


def time_to(curves, target, budget):
    """Simulated seconds until test P@1 first reaches target within budget; None if never."""
    acc = np.asarray(curves["test_accuracy"], dtype=float)
    t = np.asarray(curves["sim_s"], dtype=float)
    for i in range(len(acc)):
        if t[i] > budget * (1 + 1e-12):
            break
        if np.isfinite(acc[i]) and acc[i] >= target - 1e-12:
            return float(t[i])
    return None


MINIBATCH = "Mini-batch SGD (every method at 1 worker)"


def clock_text(spec):
    """What prices a batch and a merge in these runs (issue: claims about time say what decides
    them): the spec's clock, a calibrated profile or the formula's hand-set rate."""
    clk = (spec or {}).get("base", {}).get("clock") or {}
    prof = clk.get("profile")
    if prof:
        # the profile says where it was measured (its "machine"); its validation is docs/validation.md
        machine = "?"
        try:
            with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                   prof)) as fh:
                machine = str(json.load(fh).get("machine", "?"))
        except (OSError, ValueError):
            pass
        return (f"simulated on the cost profile `{prof}` (its machine: {machine}; how far to trust it: "
                "docs/validation.md): a batch costs the sparse MLP's fixed cost plus its per-sample cost as "
                "the profile measured them, times the batch's non-zeros over the mean, divided by the worker's speed "
                "(Fig. 1's spread) and jittered; a merge costs the profile's weighted average. The workers' speeds are "
                "the paper's, not a measurement: time-to-accuracy is that machine's per-batch costs under the paper's "
                "heterogeneity")
    return ("simulated on the formula clock (sim/clock.h: hand-set flops_per_s, no per-batch latency, so a small "
            "batch costs no more per sample than a large one; speeds, jitter, the batch's non-zeros, alpha-beta "
            "merges): time claims on it are decided by those parameters")


def _to_report(record, md, inputs):
    """The report of md (its first line the title) on the shared engine, with record's
    claims, seeds and measured runtime."""
    rep = Report(record["target"], record["title"])
    rep.inputs = list(inputs)
    rep.seeds = record.get("seeds")
    rep.runtime = record.get("runtime", {})
    for c in record["claims"]:
        rep.claim_verdict(c["claim"], c["verdict"], "see below")
    body = md[1:] if md and md[0].startswith("# ") else md
    rep.text("\n".join(body))
    return rep
