#!/usr/bin/python3
"""CI regression of convergence curves against tests/golden/*.json.

    regress.py check    [--wb build/workbench] [--mpirun mpirun] [--np 2] [--only NAME]
    regress.py generate [--wb ...] [--np 2] [--only NAME] [--why "reason"]
    regress.py compare  GOLDEN.json RESULTS.h5       (no run: check an existing results file)

Each golden file holds the spec it was made from (tests/golden/specs/golden_*.json; the spec is
also embedded, so a golden stays checkable if the experiment file changes - `check` warns
when they differ), the tolerance bands, and per run: status, the logged curve points and
final values. `check` re-runs the spec with the workbench into a temporary directory and
compares; it prints one line per run and, for a failure, the run id, the column, the first
step outside its band, the value, the golden value and the band, then exits 1.

Tolerance bands (per golden file, its "tolerance" object; why these values: the comments
of GOLDENS below and tests/golden/README.md):

  per point    columns.<col>: |y_t - g_t| <= rtol * |g_t| + atol at every logged step t
               where the golden has a value (train_loss every log_every steps, test_loss
               every eval_every steps); the first step outside fails the run
  drift        mean_rtol.<col>: |mean_t (y_t - g_t) / g_t| <= mean_rtol, a systematic shift
               smaller than the point band (the point bands of a chaotic run must be wide)
  final value  final.<key>: |y - g| <= rtol * |g| + atol for the /summary values
               final_train_loss, final_test_loss, final_test_accuracy
  status and logged steps must be identical

For a fixed binary the workbench is bit-deterministic (same config + seed = same curves,
for any rank count here), but another compiler or -march reorders float operations, and
LeNet-5 with Adasum amplifies such differences; the bands absorb that and still catch a real
change (a wrong Adasum coefficient, 0.5 -> 0.6 in comm/reference.h, falls outside them).
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
try:
    from psgd_analysis import load  # noqa: E402
    from psgd_analysis.tables import records  # noqa: E402
except ImportError as e:  # e.g. run with an interpreter without pandas: one clear line
    raise SystemExit(f"regress: {e}")

sys.stdout.reconfigure(line_buffering=True)  # keep our lines in order with the workbench's

GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")

#: The bands of each golden (written into the golden file by `generate`; `check` reads
#: them from the file). Sized from measurements on this machine, see tests/golden/README.md:
#: the LR was perturbed by a relative 1e-7..1e-4 (a stand-in for the float reassociation of
#: another compiler / -march: the workbench is bit-deterministic for a fixed binary, and
#: -n 1 vs -n 2 gave identical curves), and Adasum's coefficient was changed 0.5 -> 0.6.
GOLDENS = {
    "golden_toy": {
        "spec": "tests/golden/specs/golden_toy.json",
        # A convex, well-conditioned problem: perturbations shrink, the curves agree to
        # ~1e-5 relative under a 1e-5 LR perturbation; 0.6 moves step 2 by 18%.
        "tolerance": {
            "columns": {"train_loss": {"rtol": 1e-3, "atol": 1e-7}},
            "mean_rtol": {"train_loss": 1e-3},
            "final": {"final_train_loss": {"rtol": 1e-3, "atol": 1e-7},
                      "final_test_loss": {"rtol": 1e-3, "atol": 1e-7}},
        }},
    "golden_lenet": {
        "spec": "tests/golden/specs/golden_lenet.json",
        # LeNet-5 with Adasum is chaotic in float: a 1e-7 relative LR change already moves
        # single 128-sample batch losses by up to 1% after ~40 steps (sync SGD: < 1e-4).
        # Point bands are therefore wide (2.5x the worst noise seen) and a systematic change
        # is caught by the mean signed deviation of the smooth test loss (1000 images) and
        # by the final values: noise <= 0.3% / 0.4 pp there, Adasum 0.5 -> 0.6 gives +1.3%
        # / -1.4 pp.
        "tolerance": {
            "columns": {"train_loss": {"rtol": 0.05, "atol": 1e-4},
                        "test_loss": {"rtol": 0.03, "atol": 1e-4}},
            "mean_rtol": {"test_loss": 0.006},
            "final": {"final_test_loss": {"rtol": 0.01, "atol": 0.0},
                      "final_test_accuracy": {"rtol": 0.0, "atol": 0.01},
                      "final_train_loss": {"rtol": 0.05, "atol": 1e-4}},
        }},
    "golden_gpt": {
        "spec": "tests/golden/specs/golden_gpt.json",
        # A small GPT on the KJV Bible, 60 AdamW steps. Noise (LR perturbed by a relative
        # 1e-7, 1e-5, 1e-4 at -n 2): sync SGD < 6e-4 everywhere; local SGD (H = 10) up to
        # 7e-3 (train), 5.4e-3 (test points and final), mean test deviation <= 1.7e-3. LR
        # +20% moves the mean test deviation by 1.6% and the final test loss by 1.9-2.1%.
        "tolerance": {
            "columns": {"train_loss": {"rtol": 0.03, "atol": 1e-4},
                        "test_loss": {"rtol": 0.015, "atol": 1e-4}},
            "mean_rtol": {"test_loss": 0.006},
            "final": {"final_test_loss": {"rtol": 0.01, "atol": 0.0},
                      "final_train_loss": {"rtol": 0.03, "atol": 1e-4}},
        }},
}
FINAL_KEYS = ("final_train_loss", "final_test_loss", "final_test_accuracy", "converged_step")


def run_spec(spec_path: str, wb: str, mpirun: str, np_: int, outdir: str) -> str:
    """Run one spec with the workbench; returns the results file path."""
    out = os.path.join(outdir, os.path.basename(spec_path).replace(".json", ".h5"))
    cmd = shlex.split(mpirun) + ["-n", str(np_), wb, "run", spec_path, "-o", out, "--force", "--quiet"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"regress: {' '.join(cmd)} failed with exit code {p.returncode}")
    return out


def extract(h5: str, columns: list[str]) -> dict:
    """The per-run data a golden file stores."""
    res = load(h5)
    runs = {}
    for r in records(res.runs[["run_id", "status", *FINAL_KEYS]]):
        cur = res.curve(r["run_id"])
        runs[r["run_id"]] = {
            "status": r["status"],
            "step": [int(s) for s in cur["step"]],
            **{c: [_num(v) for v in cur[c]] for c in columns if c in cur},
            "final": {k: _num(r[k]) for k in FINAL_KEYS},
        }
    attrs = {k: res.attrs.get(k) for k in ("workbench_version", "git_commit", "mpi_ranks", "host")}
    attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in attrs.items()}
    return {"runs": runs, "attrs": attrs}


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def _band(g: float, rtol: float, atol: float) -> float:
    return rtol * abs(g) + atol


def _vals(xs):
    return [math.nan if x is None else float(x) for x in xs]


def compare(golden: dict, got: dict) -> list[str]:
    """Failures (empty list = pass): one message per failing run and check, naming the run,
    the column and the first step outside the band."""
    tol = golden["tolerance"]
    fails = []
    for rid, g in golden["runs"].items():
        r = got["runs"].get(rid)
        if r is None:
            fails.append(f"{rid}: missing from the new results (runs: {', '.join(got['runs'])})")
            continue
        if r["status"] != g["status"]:
            fails.append(f"{rid}: status {r['status']} (golden {g['status']})")
            continue
        if r["step"] != g["step"]:
            fails.append(f"{rid}: logged steps differ (golden {len(g['step'])} points up to step "
                         f"{g['step'][-1] if g['step'] else '-'}, now {len(r['step'])} up to "
                         f"{r['step'][-1] if r['step'] else '-'})")
            continue
        for col, band in tol["columns"].items():
            if col not in g:
                continue
            gv, rv = _vals(g[col]), _vals(r.get(col, [None] * len(g[col])))
            rels, steps, first_bad = [], [], None
            for step, a, b in zip(g["step"], rv, gv):
                if math.isnan(a) and math.isnan(b):
                    continue  # no evaluation at this step, in both
                if math.isnan(a) or math.isnan(b):
                    first_bad = first_bad or f"{rid}: {col} at step {step} = {a}, golden {b}"
                    continue
                rels.append((a - b) / abs(b) if b else 0.0)
                steps.append(step)
                if first_bad is None and abs(a - b) > _band(b, band["rtol"], band["atol"]):
                    first_bad = (f"{rid}: {col} at step {step} = {a:.6g}, golden {b:.6g}, outside "
                                 f"the band +-{_band(b, band['rtol'], band['atol']):.3g} (rtol "
                                 f"{band['rtol']}, atol {band['atol']}; deviation {100 * (a - b) / abs(b):+.2f}%)")
            if first_bad:
                fails.append(first_bad)
            mr = tol.get("mean_rtol", {}).get(col)
            if mr is not None and rels:
                m = sum(rels) / len(rels)
                if abs(m) > mr:
                    fails.append(f"{rid}: {col} drifted: mean relative deviation over its "
                                 f"{len(rels)} points (steps {steps[0]}-{steps[-1]}) is "
                                 f"{100 * m:+.2f}%, band +-{100 * mr:.2f}%")
        for k, band in tol.get("final", {}).items():
            a, b = r.get("final", {}).get(k), g.get("final", {}).get(k)
            if a is None and b is None:
                continue
            if a is None or b is None or abs(a - b) > _band(b, band["rtol"], band["atol"]):
                fails.append(f"{rid}: {k} (step {g['step'][-1]}) = {a!r}, golden {b!r}, band "
                             f"+-{_band(b, band['rtol'], band['atol']) if b is not None else 0:.3g}")
        conv = tol.get("converged_step_atol")
        if conv is not None:
            a, b = r.get("final", {}).get("converged_step"), g.get("final", {}).get("converged_step")
            if (a is None) != (b is None) or (a is not None and abs(a - b) > conv):
                fails.append(f"{rid}: converged_step {a}, golden {b} (+-{conv})")
    return fails


def max_deviation(golden: dict, got: dict) -> dict[str, str]:
    """Largest |relative deviation| per run and column (for the log line)."""
    out = {}
    for rid, g in golden["runs"].items():
        r = got["runs"].get(rid)
        if not r or r["step"] != g["step"]:
            continue
        parts = []
        for col in golden["tolerance"]["columns"]:
            m = 0.0
            for a, b in zip(_vals(r.get(col, [])), _vals(g.get(col, []))):
                if not (math.isnan(a) or math.isnan(b)) and b:
                    m = max(m, abs(a - b) / abs(b))
            parts.append(f"{col} {m:.2g}")
        out[rid] = ", ".join(parts)
    return out


def dumps_compact(obj) -> str:
    """JSON with nesting indented but every flat list on one line (reviewable diffs of a
    regenerated golden: one line per curve)."""
    import re
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: re.sub(r"\s*\n\s*", " ", m.group(0))
                  .replace("[ ", "[").replace(" ]", "]"), text)


def golden_files(only: str | None) -> list[str]:
    files = sorted(glob.glob(os.path.join(GOLDEN_DIR, "*.json")))
    if only:
        files = [f for f in files if os.path.basename(f)[:-5] in only.split(",")]
    return files


def cmd_check(a) -> int:
    files = golden_files(a.only)
    if not files:
        print(f"regress: no golden files in {GOLDEN_DIR}")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="wb-regress-") as tmp:
        for path in files:
            with open(path) as fh:
                golden = json.load(fh)
            spec_file = os.path.join(ROOT, golden["spec"])
            spec_path = spec_file
            if os.path.exists(spec_file):
                with open(spec_file) as fh:
                    if json.load(fh) != golden["spec_json"]:
                        print(f"regress: warning: {golden['spec']} differs from the spec embedded in "
                              f"{os.path.relpath(path, ROOT)}; checking the embedded one "
                              "(regenerate with `make -f Makefile.experiments golden` if intended)")
                        spec_path = None
            else:
                spec_path = None
            if spec_path is None:
                spec_path = os.path.join(tmp, os.path.basename(golden["spec"]))
                with open(spec_path, "w") as fh:
                    json.dump(golden["spec_json"], fh)
            h5 = run_spec(spec_path, a.wb, a.mpirun, a.np, tmp)
            got = extract(h5, list(golden["tolerance"]["columns"]))
            fails = compare(golden, got)
            dev = max_deviation(golden, got)
            name = os.path.basename(path)
            for rid in golden["runs"]:
                bad = [f for f in fails if f.startswith(rid + ":")]
                print(f"regress: {'FAIL' if bad else 'ok  '} {name}: {rid} "
                      f"(max rel. deviation: {dev.get(rid, '-')})")
                for f in bad:
                    print(f"regress:      {f}")
            other = [f for f in fails if not any(f.startswith(r + ":") for r in golden["runs"])]
            for f in other:
                print(f"regress:      {f}")
            failed += len(fails) > 0
    n = len(files)
    if failed:
        print(f"regress: FAILED: {failed} of {n} golden files have curves outside their bands "
              "(if the change is intended: make -f Makefile.experiments golden, and say why in "
              "the commit)")
        return 1
    print(f"regress: all {n} golden files within their bands")
    return 0


def cmd_generate(a) -> int:
    names = a.only.split(",") if a.only else list(GOLDENS)
    with tempfile.TemporaryDirectory(prefix="wb-golden-") as tmp:
        for name in names:
            g = GOLDENS[name]
            out_path = os.path.join(GOLDEN_DIR, name + ".json")
            tol = g["tolerance"]
            with open(os.path.join(ROOT, g["spec"])) as fh:
                spec_json = json.load(fh)
            h5 = run_spec(os.path.join(ROOT, g["spec"]), a.wb, a.mpirun, a.np, tmp)
            data = extract(h5, list(tol["columns"]))
            golden = {
                "name": name,
                "about": "Golden convergence curves for analysis/regress.py; regenerate only "
                         "deliberately (make -f Makefile.experiments golden) and say why in the commit.",
                "spec": g["spec"],
                "spec_json": spec_json,
                "tolerance": tol,
                "generated": {"utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                              "np": a.np, "why": a.why, **data["attrs"]},
                "runs": data["runs"],
            }
            os.makedirs(GOLDEN_DIR, exist_ok=True)
            with open(out_path + ".tmp", "w") as fh:
                fh.write(dumps_compact(golden) + "\n")
            os.replace(out_path + ".tmp", out_path)
            print(f"regress: wrote {os.path.relpath(out_path, ROOT)} ({len(data['runs'])} runs)")
    return 0


def cmd_compare(a) -> int:
    with open(a.golden) as fh:
        golden = json.load(fh)
    fails = compare(golden, extract(a.results, list(golden["tolerance"]["columns"])))
    for f in fails:
        print(f"regress: FAIL {f}")
    print("regress: " + ("FAILED" if fails else "ok"))
    return 1 if fails else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("check", "generate"):
        p = sub.add_parser(name)
        p.add_argument("--wb", default=os.path.join(ROOT, "build", "workbench"))
        p.add_argument("--mpirun", default="mpirun")
        p.add_argument("--np", type=int, default=2)
        p.add_argument("--only", default=None, help="comma-separated golden names")
        if name == "generate":
            p.add_argument("--why", default="", help="recorded in the golden file")
    p = sub.add_parser("compare")
    p.add_argument("golden")
    p.add_argument("results")
    a = ap.parse_args(argv)
    if a.cmd != "compare":
        a.wb = os.path.abspath(a.wb)
        if not os.path.exists(a.wb):
            raise SystemExit(f"regress: {a.wb} not found (build first)")
    return {"check": cmd_check, "generate": cmd_generate, "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
