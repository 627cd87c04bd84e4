#!/bin/bash
# Every reproduction target on a Slurm cluster: the same results files and reports as
# `make -f Makefile.experiments reproduce-all`, with the specs spread over a job array.
#
#   scripts/slurm/reproduce.sh [TARGET ...]       (default: every available target)
#
# Submits (from the repository root, on a login node):
#   1. a job array, one task per spec of the targets (scripts/slurm/reproduce.sbatch), each
#      writing $REPORTS/<spec>.h5 with --resume (--requeue: a preempted task resumes);
#   2. the report job, after every task ended well (--dependency=afterok): each target's report
#      from those files (analysis/reproduce.py, /usr/bin/python3 with h5py, numpy, pandas,
#      matplotlib on the node), then the index $REPORTS/README.md.
# The adasum-latency target (a benchmark, no spec) runs in the report job: it needs 2 ranks
# (the job's 2 tasks) and its report needs the benchmark's output.
# Environment: REPORTS (default reports/; use shared storage), WB, LAUNCHER (srun|mpirun),
# SRUN_MPI, MPIRUN as in scripts/slurm/lenet_sweep.sbatch; SPEC_DIR (default: each spec where
# the catalog's spec_path finds it; the check points it at one folder of shrunk specs);
# SBATCH_ARGS (extra sbatch options, e.g. a partition).
# Prints the two job ids; `squeue -u $USER` follows them.
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=$PWD
PY=${PY:-/usr/bin/python3}
REPORTS=$(realpath -m "${REPORTS:-$SRC/reports}")
SPEC_DIR=${SPEC_DIR:+$(realpath -m "$SPEC_DIR")}
WB=$(realpath -m "${WB:-$SRC/build/workbench}")
BENCH=${BENCH:-$(dirname "$WB")/bench_collectives}
[[ -x $WB ]] || { echo "reproduce.sh: $WB is not built (make -f Makefile.experiments build)" >&2; exit 2; }
command -v sbatch > /dev/null || { echo "reproduce.sh: no sbatch on PATH (run it on a Slurm login node)" >&2; exit 2; }
mkdir -p "$REPORTS"

# The targets and their specs, in the catalog's order ("name spec1,spec2 ranks"); a target
# whose data set is missing (adaptive-bibtex without ../shared) is left out, as make does.
mapfile -t rows < <($PY analysis/reproduce.py list)
want=("$@")
for w in "${want[@]}"; do  # a misspelt target is an error, not a silently smaller sweep
  printf '%s\n' "${rows[@]}" | grep -q "^$w " ||
    { echo "reproduce.sh: unknown target '$w' (analysis/reproduce.py list names them)" >&2; exit 2; }
done
list=$REPORTS/.slurm-specs.txt
targets=()
: > "$list"
for row in "${rows[@]}"; do
  read -r name specs ranks <<< "$row"
  if (( ${#want[@]} )) && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  if [[ $name == adaptive-bibtex && ! -e $SRC/../shared/data/xml/bibtex/train.txt ]]; then
    echo "reproduce.sh: $name skipped (../shared/data/xml/bibtex is absent)"; continue
  fi
  targets+=("$name")
  [[ $specs == - ]] && continue
  for s in ${specs//,/ }; do
    grep -q "^$s " "$list" && continue
    if [[ -n $SPEC_DIR ]]; then path=$SPEC_DIR/$s.json; else path=$($PY analysis/reproduce.py spec-path "$s"); fi
    echo "$s $ranks $path" >> "$list"
  done
done
(( ${#targets[@]} )) || { echo "reproduce.sh: no target matches: $*" >&2; exit 2; }
n=$(wc -l < "$list")
common=(--chdir="$SRC" --export=ALL,SRC="$SRC",WB="$WB",REPORTS="$REPORTS",SPEC_LIST="$list")
deps=""
if (( n > 0 )); then
  A=$(sbatch --parsable ${SBATCH_ARGS:-} "${common[@]}" --array=0-$((n - 1)) \
        --output="$REPORTS/slurm-%A_%a.out" scripts/slurm/reproduce.sbatch)
  echo "reproduce.sh: job array $A: $n specs of ${#targets[@]} targets"
  deps="--dependency=afterok:${A%%;*}"
fi
# The report job: each target's report from its files; the benchmark target runs here.
script=$REPORTS/.slurm-reports.sh
{
  echo "#!/bin/bash"
  echo "set -uo pipefail"
  echo "cd '$SRC'; fail=0"
  for name in "${targets[@]}"; do
    if [[ $name == adasum-latency ]]; then
      echo "s=\$(date +%s); ${LAUNCHER_BENCH:-srun --mpi=${SRUN_MPI:-pmi2} -n 2} '$BENCH' > '$REPORTS/adasum-latency.txt' &&" \
           "$PY analysis/reproduce.py adasum-latency '$REPORTS/adasum-latency.txt' --elapsed \$(( \$(date +%s) - s )) --out '$REPORTS' > /dev/null || fail=1"
    else
      files=$($PY -c "import sys; sys.path.insert(0, 'analysis'); from psgd_analysis import catalog
print(' '.join(catalog.h5_paths(catalog.get('$name'), '$REPORTS')))")
      echo "PSGD_WB='$WB' $PY analysis/reproduce.py $name $files --out '$REPORTS' > /dev/null || { echo 'report $name failed'; fail=1; }"
    fi
  done
  echo "$PY analysis/reproduce.py index --out '$REPORTS'"
  echo "exit \$fail"
} > "$script"
chmod +x "$script"
R=$(sbatch --parsable ${SBATCH_ARGS:-} "${common[@]}" $deps --job-name=psgd-reports --ntasks=2 \
      --output="$REPORTS/slurm-reports-%j.out" "$script")
echo "reproduce.sh: report job $R (after the array): ${targets[*]}"
echo "reproduce.sh: results and reports in $REPORTS"
