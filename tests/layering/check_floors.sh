#!/usr/bin/env bash
# The floors (DESIGN.md section 3; docs/extending.md "Where code goes"): an #include may point down a floor or
# stay on its own floor, never up. Fails, naming file:line and both floors, on any include
# that points up. Run by `make test` (ctest: layering).
#
#   floor 0  ground       core/           error, params, registry, rng, clock, progress,
#                                         interrupt, the run facts (RunConfig, Series)
#   floor 1  models/, comm/               models + CPU kernels + data sets; collectives + ALL MPI
#   floor 2  train/, cuda/                optimizers, schedules, the worker, the compute-device
#                                         seam; the CUDA kernels and device models beside them
#   floor 3  algorithms/                  one file per algorithm, the async engine
#   floor 4  runtime/                     the application: CLI, spec, sweep plan, runner,
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
    models/* | comm/*) echo 1 ;;
    train/* | cuda/*) echo 2 ;;
    algorithms/*) echo 3 ;;
    runtime/*) echo 4 ;;
    *) echo "" ;;
  esac
}
name_of() {
  case "$1" in
    0) echo ground ;; 1) echo "models+comm" ;; 2) echo "train+cuda" ;; 3) echo algorithms ;;
    4) echo application ;;
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
