#!/usr/bin/python3
"""Reproduction smoke: every reproduction target of DESIGN.md section 11
through the whole pipeline (spec -> HDF5 -> report files) in a tiny mode, into a temporary
directory (never reports/). Checks that the files exist and parse, not the verdicts.

usage: repro_smoke.py [--out DIR] [--wb build/workbench] [--bench build/bench_collectives]
                      [--mpirun mpirun.mpich] [--np 2] [--only TARGET ...] [--keep]

Tiny mode rewrites each spec (shrink()): a budget of SMOKE_STEPS steps instead of the
epochs/steps, one seed, lr lists cut to their first and last value, other sweep lists longer
than 3 cut to first/middle/last except the arms (algorithm/optimizer/model lists stay
whole, so a report still sees every arm and the single-worker reference), diagnostics every step. The report scripts are the ones the make targets call.
Exit 0 when every target produced parseable .md/.csv/.png files, 1 otherwise (naming them).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
SMOKE_STEPS = 3
# Per-spec extra overrides of the base where 3 steps are not tiny enough: the exact-Hessian
# sequential emulation costs ~W Hessian-vector products per logged step.
OVERRIDES = {"seq_emulation": {"workers": 8, "steps": 2}}
# Per-spec sweep overrides: the Adaptive targets' arms x workers are the largest sweeps; the
# largest worker count keeps every arm (the 1-worker row is the lr-search spec, cut as usual).
SWEEP_OVERRIDES = {"adaptive_xml": {"workers": [4]}, "adaptive_xml_lr_all": {"workers": [4]},
                   "adaptive_xml_bibtex": {"workers": [4]},
                   # R12's zipped (workers, arm, lr, eval_every) list cut to its ends would leave no W
                   # with both arms: keep W = 2's pair (the first two entries), whatever the key's name
                   "adasum_guide": lambda sw: {k: v[:2] for k, v in sw.items() if k.startswith("workers+")}}

sys.path.insert(0, os.path.join(ROOT, "analysis"))
from psgd_analysis import catalog  # noqa: E402  (the one table of targets)

# Every target of the catalog (PSGD_EXTRA_TARGETS adds more, e.g. the how-to's toy target):
# its specs, ranks and report files; the report is written by analysis/reproduce.py, the
# command the make rules call.
TARGETS = {t.name: t for t in catalog.TARGETS}


def _cut(v, key):
    if not isinstance(v, list):
        return v
    if key == "seed" or key.endswith(".seed"):
        return v[:1]
    if key.split(".")[0] in ("algorithm", "optimizer", "model"):
        return v  # the arms of the comparison: every one stays
    if key == "lr" and len(v) > 2:
        return [v[0], v[-1]]
    if len(v) > 3:
        return [v[0], v[len(v) // 2], v[-1]]
    return v


def _metrics_every(m):
    if isinstance(m, dict):
        for k, v in m.items():
            if k == "every" and isinstance(v, int) and v > 0:
                m[k] = 1
            else:
                _metrics_every(v)


def shrink(spec, steps=SMOKE_STEPS):
    """The tiny-mode spec (see the module doc)."""
    s = json.loads(json.dumps(spec))
    b = s["base"]
    b["steps"] = steps
    b.update(OVERRIDES.get(s.get("name", ""), {}))
    steps = b["steps"]
    if "epochs" in b:
        b["epochs"] = 1
    if b.get("eval_every", 0) > steps:
        b["eval_every"] = 0
    _metrics_every(b.get("metrics"))
    full = spec.get("sweep", {})
    s["sweep"] = {k: _cut(v, k) for k, v in s.get("sweep", {}).items() if k not in ("steps", "epochs")}
    over = SWEEP_OVERRIDES.get(s.get("name", ""), {})
    for k, v in (over(full) if callable(over) else over).items():
        if k in s["sweep"]:
            s["sweep"][k] = v
    s["description"] = "[smoke] " + s.get("description", "")
    return s


def ranks_for(spec, np_):
    """The ranks a shrunk spec can use: the workbench refuses more ranks than a sweep can keep
    busy (W < ranks needs at least as many runs as rank groups), and tiny mode's one seed can
    leave a single-worker reference (R1's sequential run) with one run."""
    sweep = spec.get("sweep", {})
    runs = 1
    for v in sweep.values():
        runs *= len(v) if isinstance(v, list) else 1
    workers = [spec.get("base", {}).get("workers", 1)]
    for k, v in sweep.items():
        if "workers" in k.split("+") and isinstance(v, list):
            i = k.split("+").index("workers")
            workers += [x[i] if "+" in k else x for x in v]
    workers = [w for w in workers if isinstance(w, int)]
    return 1 if workers and max(workers) < np_ and runs < np_ else np_


def check_files(out, name):
    """Problems with out/name.{md,csv,png} (empty list when all exist and parse)."""
    bad = []
    md, csvp, png = (os.path.join(out, name + e) for e in (".md", ".csv", ".png"))
    if not os.path.exists(md) or os.path.getsize(md) == 0:
        bad.append(f"{md}: missing or empty")
    else:
        with open(md) as fh:
            text = fh.read()
        if not text.lstrip("<!-").strip() or "# " not in text:
            bad.append(f"{md}: no heading")
        if text.startswith("<!-- index:"):
            try:
                json.loads(text.split("<!-- index: ", 1)[1].split(" -->", 1)[0])
            except ValueError as e:
                bad.append(f"{md}: index record does not parse ({e})")
    if os.path.exists(csvp):
        with open(csvp, newline="") as fh:
            rows = list(csv.reader(fh))
        if len(rows) < 2:
            bad.append(f"{csvp}: no data rows")
    elif not name.endswith("latency"):
        bad.append(f"{csvp}: missing")
    if os.path.exists(png):
        with open(png, "rb") as fh:
            if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                bad.append(f"{png}: not a PNG")
    else:
        bad.append(f"{png}: missing")
    return bad


def check_engine(out, name):
    """Problems with what the engine adds to every report: the protocol table, the
    provenance and a five-class verdict per claim in the index record."""
    md = os.path.join(out, name + ".md")
    if not os.path.exists(md):
        return []
    with open(md) as fh:
        text = fh.read()
    bad = []
    for need in ("## Protocol: paper | ours | deviation and why", "## Provenance", "commit this report was generated at"):
        if need not in text:
            bad.append(f"{md}: no '{need}'")
    try:
        rec = json.loads(text.split("<!-- index: ", 1)[1].split(" -->", 1)[0])
        from psgd_analysis import stats as st
        for c in rec.get("claims", []):
            if c["verdict"].split(" (")[0] not in st.VERDICTS:
                bad.append(f"{md}: claim {c['claim'][:40]!r} has verdict {c['verdict']!r}, not one of the five classes")
    except (IndexError, ValueError) as e:
        bad.append(f"{md}: no index record ({e})")
    return bad


def selftest():
    """The verdict rule itself (psgd_analysis.stats), checked against hand-computed values
    before any target runs: a wrong interval or decision would pass every file check."""
    from psgd_analysis import stats as st
    m, lo, hi, n = st.t_interval([1.0, 2.0, 3.0])  # s = 1, t_0.975,2 = 4.302653 -> 2.484138
    assert n == 3 and abs(m - 2) < 1e-12 and abs(hi - 2 - 2.484138) < 1e-5 and abs(2 - lo - 2.484138) < 1e-5, (m, lo, hi)
    assert st.decide(-1.0, -0.5, 0.0, "below") == st.HOLDS
    assert st.decide(0.1, 0.5, 0.0, "below") == st.FAILS
    assert st.decide(-0.1, 0.5, 0.0, "below") == st.INCONCLUSIVE
    assert st.decide(0.2, 0.4, 0.1, "above") == st.HOLDS
    assert st.decide(float("nan"), float("nan")) == st.INCONCLUSIVE
    assert st.combine([st.HOLDS, st.INCONCLUSIVE]) == st.INCONCLUSIVE
    assert st.combine([st.HOLDS, st.FAILS]) == st.FAILS
    sp = shrink({"name": "x", "base": {"epochs": 4}, "sweep": {"seed": [1, 2, 3], "lr": [1, 2, 3, 4],
                 "algorithm": [1, 2, 3, 4, 5, 6], "workers": [1, 2, 4, 8, 16]}})
    assert sp["sweep"] == {"seed": [1], "lr": [1, 4], "algorithm": [1, 2, 3, 4, 5, 6], "workers": [1, 4, 16]}, sp
    assert sp["base"]["steps"] == SMOKE_STEPS


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="work directory (default: a fresh temp dir, removed on success)")
    ap.add_argument("--wb", default="build/workbench")
    ap.add_argument("--bench", default="build/bench_collectives")
    ap.add_argument("--mpirun", default="mpirun.mpich" if shutil.which("mpirun.mpich") else "mpirun")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(TARGETS))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    os.chdir(ROOT)
    selftest()
    # the report functions read C++ defaults through `workbench list --json` (psgd_analysis.adaptive_runs)
    os.environ["PSGD_WB"] = os.path.abspath(a.wb)
    out = a.out or tempfile.mkdtemp(prefix="repro-smoke-")
    rep = os.path.join(out, "reports")
    os.makedirs(rep, exist_ok=True)
    failures, t_all = [], time.time()
    done = 0
    for target in a.only or TARGETS:
        t = TARGETS[target]
        t0 = time.time()
        np_ = min(t.ranks, a.np)
        if not t.available():
            print(f"smoke: skip {target} (needs {t.needs})")
            continue
        try:
            if t.bench:
                if not os.path.exists(a.bench):
                    print(f"smoke: skip {target} ({a.bench} not built)")
                    continue
                txt = os.path.join(rep, "adasum-latency.txt")
                with open(txt, "w") as fh:
                    subprocess.run([a.mpirun, "-n", "2", a.bench, "--smoke"], stdout=fh, check=True)
                subprocess.run([PY, "analysis/reproduce.py", target, txt, "--out", rep, "--elapsed", "1"],
                               check=True, stdout=subprocess.DEVNULL)
            else:
                h5 = []
                catalog.ensure_specs(t.specs)  # the generated ones, as make writes them
                for sp in t.specs:
                    with open(catalog.spec_path(sp)) as fh:
                        s = shrink(json.load(fh))
                    name = catalog.spec_name(sp)
                    p = os.path.join(out, name + ".json")
                    with open(p, "w") as fh:
                        json.dump(s, fh, indent=1)
                    h = os.path.join(out, name + ".h5")
                    subprocess.run([a.mpirun, "-n", str(ranks_for(s, np_)), a.wb, "run", p, "-o", h, "--force", "--quiet"],
                                   check=True, stdout=subprocess.DEVNULL)
                    h5.append(h)
                subprocess.run([PY, "analysis/reproduce.py", target, *h5, "--out", rep],
                               check=True, stdout=subprocess.DEVNULL)
        except subprocess.CalledProcessError as e:
            failures.append(f"{target}: {' '.join(map(str, e.cmd))} exited {e.returncode}")
            print(f"smoke: FAIL {target} ({time.time() - t0:.1f} s)")
            continue
        bad = check_files(rep, target)
        bad += check_engine(rep, target)
        failures += [f"{target}: {b}" for b in bad]
        done += 1
        print(f"smoke: {'ok  ' if not bad else 'FAIL'} {target} ({time.time() - t0:.1f} s)")
    # the index over the smoke reports parses too
    subprocess.run([PY, "analysis/reproduce.py", "index", "--out", rep], check=False, stdout=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(rep, "README.md")):
        failures.append("index: README.md not written")
    print(f"smoke: {done} of {len(a.only or TARGETS)} targets in {time.time() - t_all:.0f} s, work dir {out}")
    for f in failures:
        print("smoke: " + f, file=sys.stderr)
    if not failures and not a.keep and a.out is None:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
