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
pass=0; fail=0
for f in "$SRC"/experiments/*.json; do
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
