#!/usr/bin/env bash
# Bad input: each case must exit 2, print ONE line on stderr naming
# the file and the JSON path (or line), and leave no output file behind.
# usage: test_bad_input.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0

# expect_error NAME EXPECTED_SUBSTRING SPEC_JSON [OUT]
expect_error() {
  local name=$1 want=$2 spec=$3
  local f="$tmp/$name.json" out=${4:-$tmp/$name.h5}
  printf '%s\n' "$spec" > "$f"
  "$WB" run "$f" -o "$out" > "$tmp/stdout" 2> "$tmp/stderr"
  local rc=$?
  local lines; lines=$(wc -l < "$tmp/stderr")
  local msg; msg=$(cat "$tmp/stderr")
  if [[ $rc -ne 2 ]]; then echo "FAIL $name: exit $rc, want 2: $msg"; fail=$((fail+1)); return; fi
  if [[ $lines -ne 1 ]]; then echo "FAIL $name: $lines lines on stderr, want 1: $msg"; fail=$((fail+1)); return; fi
  if [[ "$msg" != *"$want"* ]]; then echo "FAIL $name: message lacks '$want': $msg"; fail=$((fail+1)); return; fi
  if [[ "$msg" != *"$f"* && "$want" != "-o "* ]]; then echo "FAIL $name: message does not name the file: $msg"; fail=$((fail+1)); return; fi
  if ls "$tmp"/*.h5* > /dev/null 2>&1; then echo "FAIL $name: output left behind: $(ls "$tmp"/*.h5*)"; fail=$((fail+1)); rm -f "$tmp"/*.h5*; return; fi
  echo "ok   $name: $msg"; pass=$((pass+1))
}

expect_error malformed_json ':3:' '{"name": "t",
 "base": {"lr": 0.1,
 }}'
expect_error unknown_key '$.base.learning_rate: unknown key' '{"name": "t", "base": {"learning_rate": 0.1}}'
expect_error wrong_type '$.base.workers: expected an integer, got string "eight"' '{"name": "t", "base": {"workers": "eight"}}'
expect_error negative_lr '$.base.lr: must be > 0' '{"name": "t", "base": {"lr": -0.5}}'
expect_error zero_lr '$.base.lr: must be > 0' '{"name": "t", "base": {"lr": 0}}'
expect_error zero_workers '$.base.workers: must be >= 1' '{"name": "t", "base": {"workers": 0}}'
expect_error negative_workers '$.base.workers: must be >= 1' '{"name": "t", "base": {"workers": -4}}'
expect_error zero_batch '$.base.batch_size: must be >= 1' '{"name": "t", "base": {"batch_size": 0}}'
expect_error negative_batch '$.base.batch_size: must be >= 1' '{"name": "t", "base": {"batch_size": -32}}'
expect_error unknown_algorithm 'unknown algorithm "adasun" (known: ' '{"name": "t", "base": {"algorithm": "adasun"}}'
expect_error unknown_model 'unknown model "lenet" (known: ' '{"name": "t", "base": {"model": {"name": "lenet"}}}'
expect_error sweep_bad_key '$.sweep["model.xmax"]: no such key' '{"name": "t", "base": {}, "sweep": {"model.xmax": [1, 2]}}'
expect_error sweep_bad_value '$.sweep.workers[1]: must be >= 1' '{"name": "t", "base": {}, "sweep": {"workers": [2, 0]}}'
expect_error out_dir_missing '-o /nonexistent-dir/x.h5: output directory /nonexistent-dir does not exist' '{"name": "t", "base": {"steps": 2}}' /nonexistent-dir/x.h5
# not writable (root bypasses permissions, so use a directory nobody can create files in)
printf '%s\n' '{"name": "t", "base": {"steps": 2}}' > "$tmp/ro.json"
"$WB" run "$tmp/ro.json" -o /proc/x.h5 > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 && $(wc -l < "$tmp/stderr") -eq 1 && "$(cat "$tmp/stderr")" == *"not writable"* ]]; then
  echo "ok   out_dir_not_writable: $(cat "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL out_dir_not_writable: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi
# R > W: 2 ranks for 1 worker (mpirun; never more ranks than cores)
printf '%s\n' '{"name": "t", "base": {"workers": 1, "steps": 2}}' > "$tmp/rw.json"
mpirun -n 2 "$WB" run "$tmp/rw.json" -o "$tmp/rw.h5" > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 && $(grep -c 'workbench: error' "$tmp/stderr") -eq 1 && "$(cat "$tmp/stderr")" == *'$.base.workers: workers = 1 is fewer than the 2 MPI ranks'* && ! -e "$tmp/rw.h5" ]]; then
  echo "ok   ranks_gt_workers: $(grep 'workbench: error' "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL ranks_gt_workers: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi
# existing output without --resume/--force
printf '%s\n' '{"name": "t", "base": {"steps": 2}}' > "$tmp/ex.json"
"$WB" run "$tmp/ex.json" -o "$tmp/ex.out" --quiet > /dev/null 2>&1
"$WB" run "$tmp/ex.json" -o "$tmp/ex.out" > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 && "$(cat "$tmp/stderr")" == *"already exists: pass --resume"* ]]; then
  echo "ok   output_exists: $(cat "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL output_exists: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi
rm -f "$tmp/ex.out"
# missing spec file
"$WB" run "$tmp/nope.json" > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 && "$(cat "$tmp/stderr")" == *"nope.json: no such file"* ]]; then
  echo "ok   missing_spec: $(cat "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL missing_spec: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
