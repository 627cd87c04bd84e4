#!/usr/bin/env bash
# Bad Extreme Classification Repository files (models/xml_data.h): each case must exit 2,
# print ONE line on stderr naming the data file and line, and leave no output file.
# `validate` does not load data, so a spec pointing at a missing directory validates.
# usage: test_xml_errors.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0

# expect_error NAME EXPECTED_SUBSTRING TRAIN_TEXT [TEST_TEXT]
expect_error() {
  local name=$1 want=$2 train=$3 test=${4:-$'1 6 3\n0 1:1\n'}
  local d="$tmp/$name"
  mkdir -p "$d"
  if [[ -n "${TRAIN_FORMAT:-}" ]]; then printf "$TRAIN_FORMAT" > "$d/train.txt"
  else printf '%s' "$train" > "$d/train.txt"; fi
  printf '%s' "$test" > "$d/test.txt"
  printf '%s\n' '{"name": "x", "base": {"model": {"name": "sparse_mlp", "data": "'"$d"'"},
    "algorithm": "adaptive_sgd", "workers": 1, "batch_size": 2, "steps": 1}}' > "$tmp/$name.json"
  "$WB" run "$tmp/$name.json" -o "$tmp/$name.h5" > "$tmp/stdout" 2> "$tmp/stderr"
  local rc=$?
  local lines; lines=$(wc -l < "$tmp/stderr")
  local msg; msg=$(cat "$tmp/stderr")
  if [[ $rc -ne 2 ]]; then echo "FAIL $name: exit $rc, want 2: $msg"; fail=$((fail+1)); return; fi
  if [[ $lines -ne 1 ]]; then echo "FAIL $name: $lines lines on stderr, want 1: $msg"; fail=$((fail+1)); return; fi
  if [[ "$msg" != *"$want"* ]]; then echo "FAIL $name: message lacks '$want': $msg"; fail=$((fail+1)); return; fi
  if ls "$tmp"/*.h5* > /dev/null 2>&1; then echo "FAIL $name: output left behind"; fail=$((fail+1)); rm -f "$tmp"/*.h5*; return; fi
  echo "ok   $name: $msg"; pass=$((pass+1))
}

expect_error malformed_feature "malformed_feature/train.txt:3: malformed feature index in \"x:1\"" $'2 6 3\n0 1:1\n1 x:1\n'
expect_error malformed_label "malformed_label/train.txt:2: malformed label \"a\"" $'1 6 3\na 1:1\n'
expect_error feature_range "feature_range/train.txt:3: feature 6 out of range [0, 6)" $'2 6 3\n0 1:1\n1 6:1\n'
expect_error label_range "label_range/train.txt:2: label 3 out of range [0, 3)" $'1 6 3\n3 1:1\n'
expect_error too_few_rows "too_few_rows/train.txt:1: header says N = 3 rows, the file has 2" $'3 6 3\n0 1:1\n1 2:1\n'
expect_error too_many_rows "too_many_rows/train.txt:3: more rows than the header's N = 1" $'1 6 3\n0 1:1\n1 2:1\n'
expect_error bad_header "bad_header/train.txt:1: malformed header" $'6 3\n0 1:1\n'
expect_error test_mismatch "test_mismatch/test.txt:1: header has F = 7" $'1 6 3\n0 1:1\n' $'1 7 3\n0 1:1\n'
expect_error test_malformed "test_malformed/test.txt:2: malformed feature value" $'1 6 3\n0 1:1\n' $'1 6 3\n0 1:zz\n'
# A NUL inside a row (bash strings cannot hold one: TRAIN_FORMAT writes train.txt through
# printf's format): the message shows it escaped, \u0000, and goes on past it.
TRAIN_FORMAT='1 6 3\n0 1:1.0\0x\n' expect_error nul_in_row \
  'nul_in_row/train.txt:2: malformed feature value in "1:1.0\u0000x": expected a finite number' ''
# missing data directory: run and validate fail with exit 2 naming the file
printf '%s\n' '{"name": "x", "base": {"model": {"name": "sparse_mlp", "data": "'"$tmp"'/nope"}, "steps": 1}}' > "$tmp/missing.json"
"$WB" run "$tmp/missing.json" -o "$tmp/missing.h5" > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 && $(wc -l < "$tmp/stderr") -eq 1 && "$(cat "$tmp/stderr")" == *"nope/train.txt: cannot open"* && ! -e "$tmp/missing.h5" ]]; then
  echo "ok   missing_dir: $(cat "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL missing_dir: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi
# validate makes the checks run makes before training: the missing data file too.
"$WB" validate "$tmp/missing.json" > /dev/null 2> "$tmp/stderr"; rc=$?
if [[ $rc -eq 2 ]] && grep -q "cannot open the XML data file" "$tmp/stderr"; then
  echo "ok   validate_without_data: $(cat "$tmp/stderr")"; pass=$((pass+1))
else echo "FAIL validate_without_data: exit $rc: $(cat "$tmp/stderr")"; fail=$((fail+1)); fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
