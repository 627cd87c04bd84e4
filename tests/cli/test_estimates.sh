#!/usr/bin/env bash
# The planner's estimates against what a run really takes: `run --dry-run` prints each run's
# memory estimate (its busiest rank) and the results file's size; the same spec then runs for
# real under /usr/bin/time (peak RSS) and the file is measured. Each case is chosen so that one
# term of the estimate dominates (logical workers' state, many tiny workers, curves held until
# written, the LAP updaters, the Adaptive mega-batch), so a term that is wrong shows.
# Stated factor: measured / estimated within [0.67, 1.5] for memory, [0.67, 1.5] for the file.
# usage: test_estimates.sh WORKBENCH SOURCE_DIR
set -u
WB=$(realpath "$1")
T=$(mktemp -d /tmp/wb-estimates.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
LO=0.67 HI=1.5

within() {  # within MEASURED ESTIMATED -> 0 when MEASURED/ESTIMATED is in [LO, HI]
  awk -v m="$1" -v e="$2" -v lo=$LO -v hi=$HI 'BEGIN { r = m / e; exit !(r >= lo && r <= hi) }'
}

check() {  # check NAME BASE_JSON
  local name=$1 base=$2
  printf '{"name": "%s", "base": %s}\n' "$name" "$base" > "$T/$name.json"
  local plan est_mb res_mb rss_kb file_b
  plan=$("$WB" run "$T/$name.json" -o "$T/$name.h5" --dry-run 2>&1) ||
    { echo "FAIL $name: --dry-run: $plan"; fail=1; return; }
  # The peak is the larger of the run's own (the `memory <run>:` line) and the fold of the
  # journal into the file at the end (the `memory fold:` line).
  est_mb=$(sed -n 's/^memory [^:]*: ~\([0-9.e+]*\) MB.*/\1/p' <<< "$plan" | sort -g | tail -1)
  res_mb=$(sed -n 's/^results: ~\([0-9.e+]*\) MB.*/\1/p' <<< "$plan" | head -1)
  [[ -n "$est_mb" ]] || { echo "FAIL $name: no memory line in: $plan"; fail=1; return; }
  rss_kb=$( { /usr/bin/time -f '%M' "$WB" run "$T/$name.json" -o "$T/$name.h5" --quiet > /dev/null 2> "$T/$name.err"; } 2>&1; tail -1 "$T/$name.err")
  [[ -s "$T/$name.h5" ]] || { echo "FAIL $name: the run wrote no file: $(cat "$T/$name.err")"; fail=1; return; }
  file_b=$(stat -c %s "$T/$name.h5")
  local rss_mb file_mb
  rss_mb=$(awk -v k="$rss_kb" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')
  file_mb=$(awk -v b="$file_b" 'BEGIN { printf "%.2f", b / 1e6 }')
  local verdict=ok
  within "$rss_mb" "$est_mb" || { verdict=FAIL; fail=1; }
  printf '%-4s %-22s memory: estimated %7s MB, peak RSS %7s MB (x%s)' "$verdict" "$name" "$est_mb" "$rss_mb" \
    "$(awk -v m="$rss_mb" -v e="$est_mb" 'BEGIN { printf "%.2f", m / e }')"
  if [[ -n "$res_mb" ]] && awk -v r="$res_mb" 'BEGIN { exit !(r >= 2) }'; then
    # Files under ~2 MB are mostly HDF5 structure and rounding: only larger ones are compared.
    if within "$file_mb" "$res_mb"; then printf ';  file: estimated %s MB, written %s MB' "$res_mb" "$file_mb"
    else printf ';  file: estimated %s MB, written %s MB  FAIL' "$res_mb" "$file_mb"; fail=1; fi
  fi
  echo
}

# Logical workers dominate: 256 LeNet-5 replicas with momentum on one rank.
check lenet_workers '{"model": "lenet5", "algorithm": "adasum", "optimizer": {"name": "sgd", "momentum": 0.5},
  "workers": 256, "batch_size": 8, "lr": 0.01, "steps": 2, "eval_every": 0, "seed": 1}'
# Many tiny workers: the per-worker object overhead, not the 2 parameters, is the cost.
check toy_workers '{"model": "quadratic", "algorithm": "adasum", "workers": 65536, "batch_size": 1,
  "lr": 0.01, "steps": 3, "seed": 1}'
# Curves dominate: 150,000 logged points held until the run is written, then the file.
check toy_curves '{"model": "quadratic", "algorithm": "sync_sgd", "workers": 4, "batch_size": 1,
  "lr": 0.01, "steps": 150000, "log_every": 1, "seed": 1}'
# LAP-SGD in simulated mode: the updaters' snapshots and shards.
check lap_updaters '{"model": "lenet5", "algorithm": {"name": "lap_sgd", "updaters": 6, "mode": "simulated"},
  "workers": 8, "batch_size": 16, "lr": 0.01, "steps": 2, "eval_every": 0, "seed": 1}'
# Adaptive SGD on the sparse MLP: the mega-batch and the per-worker models.
check adaptive_megabatch '{"model": {"name": "sparse_mlp", "hidden": [128]}, "algorithm": {"name": "adaptive_sgd",
  "megabatch": 50}, "workers": 4, "batch_size": 64, "lr": 0.1, "steps": 2, "eval_every": 0, "seed": 1}'

# --resume: the fold also reads the old file whole and copies it into the new image.
r='{"model": "quadratic", "algorithm": "sync_sgd", "workers": 4, "batch_size": 1, "lr": 0.01, "steps": 100000,
  "log_every": 1, "seed": 1}'
printf '{"name": "resume_fold", "base": %s, "sweep": {"seed": [1]}}\n' "$r" > "$T/r1.json"
printf '{"name": "resume_fold", "base": %s, "sweep": {"seed": [1, 2]}}\n' "$r" > "$T/r2.json"
"$WB" run "$T/r1.json" -o "$T/r.h5" --quiet > /dev/null 2>&1
est_mb=$("$WB" run "$T/r2.json" -o "$T/r.h5" --resume --dry-run 2>&1 | sed -n 's/^memory fold: ~\([0-9.e+]*\) MB.*/\1/p')
rss_kb=$( { /usr/bin/time -f '%M' "$WB" run "$T/r2.json" -o "$T/r.h5" --resume --quiet > /dev/null 2> "$T/r.err"; } 2>&1; tail -1 "$T/r.err")
rss_mb=$(awk -v k="$rss_kb" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')
if [[ -n "$est_mb" ]] && within "$rss_mb" "$est_mb"; then v=ok; else v=FAIL; fail=1; fi
printf '%-4s %-22s memory: estimated %7s MB, peak RSS %7s MB (fold of a --resume)\n' "$v" resume_fold "${est_mb:-?}" "$rss_mb"

if [[ $fail -ne 0 ]]; then echo "FAIL: an estimate is outside [$LO, $HI] x what the run took"; exit 1; fi
echo "ok   estimates: memory and results-file estimates within [$LO, $HI] x measured"
