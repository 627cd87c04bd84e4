#!/usr/bin/env bash
# The result columns are declared once (runtime/result_schema.cpp): every curve column and
# summary field that `workbench list --json` exports ("results") is named in the README's
# HDF5 layout section, and a results file carries the same declaration in its root
# attribute result_schema_json.
#   tests/cli/test_readme_columns.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1"); SRC=$(readlink -f "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$WB" list --json > list.json || { echo "FAIL: workbench list --json"; exit 1; }
echo '{"name": "t", "base": {"steps": 2}}' > s.json
"$WB" run s.json -o o.h5 --quiet || { echo "FAIL: run"; exit 1; }
/usr/bin/python3 - "$SRC/README.md" "$SRC" <<'PY'
import json, os, re, sys
import h5py
readme = open(sys.argv[1]).read()
sec = readme.split("## Results: the HDF5 layout", 1)[1].split("\n## ", 1)[0]
block = sec.split("```", 2)[1]
results = json.load(open("list.json"))["results"]
missing = [c["name"] for part in ("curves", "summary") for c in results[part]
           if not re.search(r"\b%s\b" % re.escape(c["name"]), block)]
attr = json.loads(h5py.File("o.h5", "r").attrs["result_schema_json"])
bad = 0
if missing:
    print("FAIL: the README's HDF5 layout does not name:", ", ".join(missing)); bad = 1
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
