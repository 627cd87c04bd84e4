#!/usr/bin/env bash
# The result columns are declared once (app/results/result_schema.cpp): every curve column and
# summary field that `workbench list --json` exports ("results") is named in the HDF5 layout
# of docs/results.md, and a results file carries the same declaration in its root attribute
# result_schema_json. Every algorithm and model the binary registers has a row in README.md's
# tables, and every row names a registered one (PENDING: rows ahead of their models).
#   tests/cli/test_readme_columns.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1"); SRC=$(readlink -f "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$WB" list --json > list.json || { echo "FAIL: workbench list --json"; exit 1; }
echo '{"name": "t", "base": {"steps": 2}}' > s.json
"$WB" run s.json -o o.h5 --quiet || { echo "FAIL: run"; exit 1; }
/usr/bin/python3 - "$SRC/docs/results.md" "$SRC" <<'PY'
import json, os, re, sys
import h5py
doc = open(sys.argv[1]).read()
sec = doc.split("# Results: the HDF5 layout", 1)[1].split("\n## ", 1)[0]
block = sec.split("```", 2)[1]
listing = json.load(open("list.json"))
results = listing["results"]
missing = [c["name"] for part in ("curves", "summary") for c in results[part]
           if not re.search(r"\b%s\b" % re.escape(c["name"]), block)]
attr = json.loads(h5py.File("o.h5", "r").attrs["result_schema_json"])
bad = 0
if missing:
    print("FAIL: the HDF5 layout of docs/results.md does not name:", ", ".join(missing)); bad = 1
# README.md's algorithm and model tables against the registries. A row may precede its model
# only if named here (a model being added); every registered one must have a row.
PENDING = {"models": set(), "algorithms": set()}
readme = open(os.path.join(sys.argv[2], "README.md")).read()
for kind, title in (("algorithms", "## Algorithms"), ("models", "## Models")):
    if title not in readme:
        print(f"FAIL: README.md has no '{title}' table"); bad = 1; continue
    table = readme.split(title, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z0-9_]+)` \| (.*?) \|$", table, flags=re.M)
    named = [n for n, _ in rows]
    registered = set(listing[kind])
    for n in sorted(registered - set(named)):
        print(f"FAIL: {kind[:-1]} {n} is registered but README.md's table has no row for it"); bad = 1
    for n in named:
        if n not in registered and n not in PENDING[kind]:
            print(f"FAIL: README.md's {kind} table names {n}, which the workbench does not register"); bad = 1
    for n, what in rows:
        if not what.strip():
            print(f"FAIL: README.md's row for {n} says nothing"); bad = 1
    if len(named) != len(set(named)):
        print(f"FAIL: README.md's {kind} table repeats a row"); bad = 1
    print(f"readme_columns: {kind}: {len(registered)} registered, {len(named)} rows")
if attr != results:
    print("FAIL: result_schema_json in the file differs from workbench list --json"); bad = 1
curves = list(h5py.File("o.h5", "r")["runs/base/curves"])
undeclared = [c for c in curves if c not in [x["name"] for x in results["curves"]]]
if undeclared:
    print("FAIL: curves not declared:", undeclared); bad = 1
# psgd_analysis reads the declaration from the file, not from a list of its own.
sys.path.insert(0, os.path.join(sys.argv[2], "analysis"))
import psgd_analysis as pa
res = pa.load("o.h5")
want_curves = [c["name"] for c in results["curves"]]
if list(res.curve_columns) != want_curves or list(res.curves.columns[1:len(want_curves) + 1]) != want_curves:
    print("FAIL: psgd_analysis curve columns", list(res.curve_columns)); bad = 1
want_summary = [f["name"] for f in results["summary"] if f["when"] != "run" and f["name"] not in ("wall_s", "sim_s")]
if list(res.summary_columns) != want_summary or not set(want_summary) <= set(res.runs.columns):
    print("FAIL: psgd_analysis summary columns", list(res.summary_columns)); bad = 1
print("readme_columns: %d curve columns, %d summary fields, %d problem(s)"
      % (len(results["curves"]), len(results["summary"]), bad))
sys.exit(bad)
PY
