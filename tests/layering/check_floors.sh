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
#   floor 5  app/                         the application, itself on floors, bottom up:
#              app/experiment/              the spec: its text, the run config's JSON, the sweep
#              app/results/                 what a run produced and the results file's writer
#              app/metrics/                 the metric plugins and the diagnostics that feed them
#              app/plan/                    one run's plan, the sweep's plan and pre-flight
#              app/exec/                    the training loop and the runner
#              app/calibrate/               `workbench calibrate` / `validate-profile`
#              app/cli/                     main() and the commands
# tests/ and bench/ sit above everything and are not checked.
#
# Inside every folder, its rooms (a file's name without .h/.cpp/.cu/.cuh: a header and its
# source are one room) must not include each other in a circle: the includes between the rooms
# of one folder order them on floors of their own (tsort finds the circles).
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
    app/*) echo 5 ;;
    *) echo "" ;;
  esac
}
app_floor_of() {  # app/<room folder>/... -> its floor inside app/
  case "$1" in
    app/experiment/*) echo 0 ;; app/results/*) echo 1 ;; app/metrics/*) echo 2 ;; app/plan/*) echo 3 ;;
    app/exec/*) echo 4 ;; app/calibrate/*) echo 5 ;; app/cli/*) echo 6 ;; *) echo "" ;;
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
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while IFS= read -r f; do
  ff=$(floor_of "$f")
  [[ -z "$ff" ]] && continue
  checked=$((checked + 1))
  if ((ff == 5)) && [[ -z "$(app_floor_of "$f")" ]]; then
    echo "layering: $f: every file of app/ lives in one of its folders (experiment, results, metrics, plan, exec, calibrate, cli)"
    bad=$((bad + 1))
  fi
  # Only project includes ("dir/file.h"); system and generated headers are not floors.
  while IFS=: read -r line inc; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$inc")
    tf=$(floor_of "$target")
    [[ -z "$tf" ]] && continue
    if ((tf > ff)); then
      echo "layering: $f:$line includes \"$target\": floor $tf ($(name_of "$tf")) is above" \
           "floor $ff ($(name_of "$ff")); an include may only point down (DESIGN.md section 3)"
      bad=$((bad + 1))
    elif ((tf == ff && ff == 5)); then
      af=$(app_floor_of "$f"); at=$(app_floor_of "$target")
      if [[ -n "$af" && -n "$at" ]] && ((at > af)); then
        echo "layering: $f:$line includes \"$target\": $(dirname "$target")/ is above $(dirname "$f")/ inside app/" \
             "(experiment < results < metrics < plan < exec < calibrate < cli); an include may only point down"
        bad=$((bad + 1))
      fi
    fi
    # a room (file name without its extension) that includes another room of its own folder
    if [[ "$(dirname "$target")" == "$(dirname "$f")" && "${target%.*}" != "${f%.*}" ]]; then
      echo "${f%.*} ${target%.*}" >>"$edges"
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(git ls-files -- '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp' | sed 's|^\./||')

# tsort lists the rooms of each circle it meets on stderr ("input contains a loop:").
loops=$(tsort "$edges" 2>&1 >/dev/null | grep -v 'input contains a loop' | sed -E 's/^tsort: //' || true)
if [[ -n "$loops" ]]; then
  echo "layering: rooms of one folder that include each other in a circle (move what both need into a room below them):"
  sed 's/^/  /' <<<"$loops"
  bad=$((bad + 1))
fi

if ((checked == 0)); then
  echo "layering: no source file found under $src (wrong directory?)"
  exit 1
fi
if ((bad > 0)); then
  echo "layering: $bad problem(s) in $checked files"
  exit 1
fi
echo "layering: $checked files, every include points down or across its own floor, no circle inside a folder"
