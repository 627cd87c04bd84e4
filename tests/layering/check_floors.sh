#!/usr/bin/env bash
# The floors (DESIGN.md section 3; docs/extending.md "Where code goes"): an #include may point down a floor or
# stay on its own floor, never up. Fails, naming file:line and both floors, on any include
# that points up. Run by `make test` (ctest: layering).
#
#   floor 0  ground       core/           error, params, registry, rng, progress, interrupt,
#                                         series
#   floor 1  simulator    sim/            the clock, the cost model, the timeline, the comm
#                                         ledger, the event kernel: what prices simulated time
#   floor 2  models/, comm/               models + CPU kernels + data sets; collectives + ALL MPI
#   floor 3  train/, cuda/                the run facts (RunConfig), optimizers, schedules, the
#                                         worker, the compute-device seam; the CUDA kernels and
#                                         device models beside them
#   floor 4  algorithms/                  one file per algorithm, the async engine
#   floor 5  runtime/                     the application: CLI, spec, sweep plan, runner,
#                                         recorder, diagnostics
# tests/ and bench/ sit above everything and are not checked.
#
#   tests/layering/check_floors.sh [SOURCE_DIR]
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src"

floor_of() {  # path (relative, e.g. "core/error.h") -> floor number, or "" if unchecked
  case "$1" in
    core/*) echo 0 ;;
    sim/*) echo 1 ;;
    models/* | comm/*) echo 2 ;;
    train/* | cuda/*) echo 3 ;;
    algorithms/*) echo 4 ;;
    runtime/*) echo 5 ;;
    *) echo "" ;;
  esac
}
name_of() {
  case "$1" in
    0) echo ground ;; 1) echo simulator ;; 2) echo "models+comm" ;; 3) echo "train+cuda" ;;
    4) echo algorithms ;; 5) echo application ;;
  esac
}

bad=0
checked=0
while IFS= read -r f; do
  ff=$(floor_of "$f")
  [[ -z "$ff" ]] && continue
  checked=$((checked + 1))
  # Only project includes ("dir/file.h"); system and generated headers are not floors.
  while IFS=: read -r line inc; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$inc")
    tf=$(floor_of "$target")
    [[ -z "$tf" ]] && continue
    if ((tf > ff)); then
      echo "layering: $f:$line includes \"$target\": floor $tf ($(name_of "$tf")) is above" \
           "floor $ff ($(name_of "$ff")); an include may only point down (DESIGN.md section 3)"
      bad=$((bad + 1))
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(git ls-files -- '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp' | sed 's|^\./||')

if ((checked == 0)); then
  echo "layering: no source file found under $src (wrong directory?)"
  exit 1
fi
if ((bad > 0)); then
  echo "layering: $bad upward include(s) in $checked files"
  exit 1
fi
echo "layering: $checked files, every include points down or across its own floor"
