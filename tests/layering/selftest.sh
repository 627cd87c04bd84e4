#!/usr/bin/env bash
# The floor check must fail where it should: on a made-up tree with an include that points up a
# floor, one that points up inside app/, a file of app/ outside its folders, and two rooms of one
# folder that include each other, check_floors.sh exits 1 and names each; on the same tree
# without them it passes. Run by `make test` (ctest: layering_selftest).
set -euo pipefail
check="$(cd "$(dirname "$0")" && pwd)/check_floors.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t"/core "$t"/models "$t"/app/results "$t"/app/plan
printf '#pragma once\n' >"$t"/core/error.h
printf '#pragma once\n#include "core/error.h"\n' >"$t"/models/net.h
printf '#pragma once\n#include "models/net.h"\n' >"$t"/app/results/run.h
printf '#pragma once\n#include "app/results/run.h"\n' >"$t"/app/plan/plan.h
printf '#pragma once\n#include "core/error.h"\n' >"$t"/core/params.h
printf '#include "core/params.h"\n' >"$t"/core/registry.cpp
printf '#pragma once\n' >"$t"/core/registry.h

out=$(bash "$check" "$t") || { echo "selftest: a clean tree failed:"; echo "$out"; exit 1; }
grep -q "no circle inside a folder" <<<"$out" || { echo "selftest: unexpected output: $out"; exit 1; }

printf '#include "models/net.h"\n' >>"$t"/core/error.h               # up a floor
printf '#include "app/plan/plan.h"\n' >"$t"/app/results/run.cpp      # up inside app/
printf '#include "core/error.h"\n' >"$t"/app/loose.cpp                # app/ outside its folders
printf '#include "core/registry.h"\n' >>"$t"/core/params.h            # params <-> registry
rc=0; out=$(bash "$check" "$t") || rc=$?
fail=0
expect() { grep -q -- "$1" <<<"$out" || { echo "selftest: expected \"$1\" in:"; echo "$out"; fail=1; }; }
((rc == 1)) || { echo "selftest: exit $rc, expected 1"; fail=1; }
expect 'core/error.h:2 includes "models/net.h": floor 2'
expect 'app/results/run.cpp:1 includes "app/plan/plan.h": app/plan/ is above app/results/'
expect 'app/loose.cpp: every file of app/ lives in one of its folders'
expect 'rooms of one folder that include each other in a circle'
expect '  core/params'
expect '  core/registry'
expect 'layering: 4 problem(s)'
((fail == 0)) && echo "selftest: the floor check finds all four problems of the made-up tree"
exit $fail
