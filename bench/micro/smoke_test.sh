#!/usr/bin/env bash
# Smoke test of one kernel micro-benchmark binary (ctest: micro_*_smoke): runs every
# benchmark briefly with JSON output and checks that the JSON parses, lists at least one
# benchmark, and that every benchmark reported a positive rate and no error (a benchmark whose
# kernel disagrees with its reference calls SkipWithError: "error_occurred": true).
#   bench/micro/smoke_test.sh build/micro_gemm [extra benchmark flags]
set -euo pipefail
bin=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Google Benchmark 1.7.1: --benchmark_min_time is a plain number of seconds.
"$bin" --benchmark_min_time=0.01 --benchmark_format=json "$@" >"$out"
/usr/bin/python3 - "$out" "$bin" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        doc = json.load(f)
except ValueError as e:
    sys.exit(f"{name}: the JSON output does not parse: {e}")
runs = doc.get("benchmarks", [])
if not runs:
    sys.exit(f"{name}: no benchmark in the JSON output")
bad = 0
for r in runs:
    if r.get("error_occurred"):
        print(f"{name}: {r['name']}: {r.get('error_message', 'error')}")
        bad += 1
        continue
    rates = {k: r[k] for k in ("flops", "bytes_per_second", "items_per_second") if k in r}
    if not rates or not all(v > 0 for v in rates.values()):
        print(f"{name}: {r['name']}: no positive rate (flops, bytes_per_second, items_per_second)")
        bad += 1
if bad:
    sys.exit(f"{name}: {bad} of {len(runs)} benchmarks failed")
print(f"{name}: {len(runs)} benchmarks reported, none failed")
PY
