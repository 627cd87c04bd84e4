#!/usr/bin/env bash
# Every shipped experiment spec parses, expands and passes the pre-flight that `run` makes
# before its first step (`validate` loads each distinct data set, checks shards and budgets).
# usage: test_experiments_validate.sh WORKBENCH SOURCE_DIR
set -u
WB=$(realpath "$1"); SRC=$2
# Paths inside a spec (data directories, "clock": {"profile": "calib/..."}) are relative to the
# directory the workbench runs in, the checkout's root for the shipped specs (make runs them there).
cd "$SRC" || exit 1
SRC=.
PY=/usr/bin/python3
gen=$(mktemp -d /tmp/wb-specs.XXXXXX)
trap 'rm -rf "$gen"' EXIT
# The folders that hold specs (catalog.SPEC_DIRS: examples/, experiments/<paper>/, tests/golden/specs/)
# and the generated specs (git-ignored), written here by their scripts with the catalog's arguments,
# as make writes them into the checkout.
mapfile -t dirs < <($PY - "$gen" <<'P'
import subprocess, sys
sys.path.insert(0, "analysis")
from psgd_analysis import catalog
for g in catalog.GENERATED:
    subprocess.run([sys.executable, *g.command(sys.argv[1])], check=True, stdout=subprocess.DEVNULL)
print("\n".join(catalog.SPEC_DIRS))
P
) || { echo "FAIL: the generated specs could not be written"; exit 1; }
files=()
for d in "${dirs[@]}"; do
  for f in "$SRC/$d"/*.json; do
    [[ -e $f && ! -e $gen/$(basename "$f") ]] && files+=("$f")  # a generated one is checked as written now
  done
done
files+=("$gen"/*.json)
(( ${#dirs[@]} >= 5 && ${#files[@]} > ${#dirs[@]} )) || { echo "FAIL: too few specs found: ${files[*]}"; exit 1; }
pass=0; fail=0
for f in "${files[@]}"; do
  if out=$("$WB" validate "$f" 2>&1); then
    echo "ok   $(basename "$f"): $(echo "$out" | tail -1)"; pass=$((pass+1))
  elif [[ "$out" == *"cannot open the XML data file"* || "$out" == *"data directory not found"* ]] &&
       out2=$("$WB" validate --spec-only "$f" 2>&1); then
    # Its data set is not installed here (scripts/install-deps.sh): the spec itself validates.
    echo "ok   $(basename "$f"): $(echo "$out2" | tail -1) (spec only: $(echo "$out" | head -c 120))"; pass=$((pass+1))
  else
    echo "FAIL $(basename "$f"): $out"; fail=$((fail+1))
  fi
done
echo "$pass passed, $fail failed"
[[ $fail -eq 0 && $pass -gt 0 ]]
