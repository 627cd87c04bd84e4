#!/usr/bin/env bash
# make -f Makefile.experiments slurm-check (mk/slurm.mk): the Slurm recipe, tested on a real
# single-node Slurm started on this machine (scripts/slurm/local-slurm.sh).
#   1. installs slurm-wlm and munge from Debian when missing;
#   2. starts munged + slurmctld + slurmd (private config, ports and state in a temp dir);
#   3. job A: scripts/slurm/lenet_sweep.sbatch on a short LeNet-5 sweep (6 runs, 2 tasks,
#      srun), waited for; its HDF5 is checked (6 runs completed, 2 MPI ranks);
#   4. job B: the same through mpirun inside the allocation (LAUNCHER=mpirun); identical to A;
#   5. job C: the same via srun, preempted (scontrol requeue: SIGTERM, back to the queue)
#      once 2 runs are done; the requeued job resumes (--resume) and completes; its file
#      is identical to A's (every curve but wall_s, and final_params);
#   6. scripts/slurm/reproduce.sh on two shrunk targets (adasum-toy, adasum-seq-error: 3 specs,
#      a job array and the report job after it); every array task's file is bit-identical to
#      a plain mpirun run of the spec, and the reports and the index are written;
#   7. stops every daemon it started (also on failure or Ctrl-C).
# usage: check.sh WORKBENCH SOURCE_DIR      (KEEP=1 keeps the temp dir: logs, results)
set -u
WB=$(realpath "$1"); SRC=$(realpath "$2")
PY=/usr/bin/python3
CMP="$PY $SRC/tests/openmpi/compare_h5.py"
RECIPE=$SRC/scripts/slurm/lenet_sweep.sbatch
LOCAL=$SRC/scripts/slurm/local-slurm.sh
t0=$(date +%s)
say() { echo "slurm-check [$(( $(date +%s) - t0 )) s] $*"; }

# 1. packages
missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  say "installing ${missing[*]}"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null ||
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null; } ||
    { echo "slurm-check: could not install ${missing[*]}" >&2; exit 1; }
fi
say "slurm-wlm $(dpkg-query -W -f='${Version}' slurm-wlm), $(munged --version 2>&1 | head -1)"

# 2. the cluster; everything below runs with its daemons stopped on exit
D=$(mktemp -d /tmp/wb-slurm-check.XXXXXX)   # stands in for shared storage: results and logs
cleanup() {
  # Jobs first: cancel them and wait until they left (slurmstepd and the ranks outlive a
  # stopped slurmd); whatever step process is still there after 30 s is killed.
  if [[ -n ${SLURM_CONF:-} ]] && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
    scancel --quiet $(squeue -h -o %i) 2>/dev/null
    for _ in $(seq 30); do [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break; sleep 1; done
    local pids
    pids=$(scontrol listpids 2>/dev/null | awk 'NR > 1 {print $1}')
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
  fi
  "$LOCAL" stop "$D/cluster"
  if [[ ${KEEP:-0} == 1 ]]; then echo "slurm-check: kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$LOCAL" start "$D/cluster" || exit 1
export SLURM_CONF=$D/cluster/slurm.conf

# The workbench's MPI decides srun's PMI plugin and the mpirun to use inside the allocation.
if ldd "$WB" | grep -q libmpich; then
  MPI=MPICH; SRUN_MPI=pmi2; MPIRUN=$(command -v mpirun.mpich || echo mpirun)
else
  MPI="Open MPI"; SRUN_MPI=pmix; MPIRUN=$(command -v mpirun.openmpi || echo mpirun)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
say "workbench $WB: $MPI (srun --mpi=$SRUN_MPI; mpirun = $MPIRUN)"

# A short lenet_sweep: the same model, optimizer and schedule; 80 steps, 6 runs.
$PY - "$SRC/experiments/adasum/lenet_sweep.json" "$D/short.json" <<'P'
import json, sys
s = json.load(open(sys.argv[1]))
b = s["base"]
b.pop("epochs", None)
b.update(steps=80, eval_every=40, model={"name": "lenet5", "test_limit": 500})
s.update(name="lenet_sweep_short", output="lenet_sweep_short.h5",
         description="slurm-check: lenet_sweep.json cut to 80 steps, 6 runs")
s["sweep"] = {"seed": [1, 2, 3], "lr": s["sweep"]["lr"][:1], "algorithm": s["sweep"]["algorithm"], "workers": [4]}
json.dump(s, open(sys.argv[2], "w"), indent=1)
P

fail=0
bad() { echo "FAIL $*"; fail=1; }
submit() {  # $1 = name, $2 = LAUNCHER: prints the job id
  sbatch --parsable --job-name="$1" --ntasks=2 --chdir="$D" --output="$D/$1-%j.out" \
    --export=ALL,WB="$WB",SPEC="$D/short.json",RESULTS="$D/results/$1.h5",LAUNCHER="$2",SRUN_MPI="$SRUN_MPI",MPIRUN="$MPIRUN" \
    "$RECIPE"
}
field() { scontrol show job "$1" | grep -o -E "(^| )$2=[^ ]*" | head -1 | cut -d= -f2; }
wait_job() {  # $1 = id; waits (up to 15 min) until it left the queue
  local i
  for i in $(seq 900); do
    squeue -h -j "$1" 2>/dev/null | grep -q . || return 0
    sleep 1
  done
  bad "job $1 still queued after 15 min ($(field "$1" JobState))"
}
report() {  # $1 = id, $2 = name
  say "job $1 ($2): JobState=$(field "$1" JobState) Restarts=$(field "$1" Restarts) ExitCode=$(field "$1" ExitCode)"
  [[ $(field "$1" JobState) == COMPLETED ]] || { bad "job $1 ($2) did not complete"; cat "$D/$2-$1.out"; }
}
check_h5() {  # $1 = file: 6 runs completed, written by 2 ranks
  $PY - "$1" <<'P'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    st = {r: f["runs"][r].attrs["status"] for r in f["runs"]}
    assert len(st) == 6 and set(st.values()) == {"completed"}, st
    assert int(f.attrs["mpi_ranks"]) == 2, f.attrs["mpi_ranks"]
    n = len(f["runs"][sorted(st)[0]]["curves"]["step"])
print(f"{sys.argv[1]}: 6 runs completed, mpi_ranks 2, {n} curve points per run")
P
}

# 3. job A, srun
A=$(submit srun_A srun) || { bad "sbatch"; exit 1; }
say "submitted job $A (srun, 2 tasks)"
wait_job "$A"; report "$A" srun_A
check_h5 "$D/results/srun_A.h5" || bad "job $A results"

# 4. job B, mpirun inside the allocation
B=$(submit mpirun_B mpirun) || { bad "sbatch"; exit 1; }
say "submitted job $B (mpirun inside the allocation)"
wait_job "$B"; report "$B" mpirun_B
$CMP exact "$D/results/srun_A.h5" "$D/results/mpirun_B.h5" "job $A (srun) vs job $B (mpirun)" || bad "srun vs mpirun"

# 5. job C, preempted mid-sweep and requeued
C=$(submit requeue_C srun) || { bad "sbatch"; exit 1; }
say "submitted job $C (srun; to be preempted)"
for i in $(seq 3000); do
  grep -q '^\[2/6\]' "$D/requeue_C-$C.out" 2>/dev/null && break
  sleep 0.2
done
say "job $C: $(grep -c 'completed, ' "$D/requeue_C-$C.out") runs done; scontrol requeue $C (what preemption with PreemptMode=REQUEUE does)"
scontrol requeue "$C" || bad "scontrol requeue"
# Slurm holds a requeued job for a while (Reason=BeginTime); release it now.
for i in $(seq 60); do
  [[ $(field "$C" JobState) == PENDING ]] && break
  sleep 1
done
say "job $C: JobState=$(field "$C" JobState) Reason=$(field "$C" Reason) Restarts=$(field "$C" Restarts); releasing the requeue hold"
scontrol update JobId="$C" StartTime=now || true
wait_job "$C"; report "$C" requeue_C
[[ $(field "$C" Restarts) == 1 ]] || bad "job $C: Restarts=$(field "$C" Restarts), expected 1"
echo "--- job $C's log (both attempts):"
grep -a -E 'sbatch:|interrupted|resume:|CANCELLED|wrote' "$D/requeue_C-$C.out"
grep -q ': interrupted, ' "$D/requeue_C-$C.out" || bad "job $C: no run was interrupted (it ended before the requeue?)"
grep -q '^resume: ' "$D/requeue_C-$C.out" || bad "job $C did not resume"
check_h5 "$D/results/requeue_C.h5" || bad "job $C results"
$CMP exact "$D/results/srun_A.h5" "$D/results/requeue_C.h5" \
  "job $A (uninterrupted) vs job $C (preempted, requeued, resumed)" || bad "requeued results differ"

# 6. the reproduction targets as a job array (scripts/slurm/reproduce.sh) on shrunk specs
#    (repro-smoke's tiny mode): one array task per spec, then the report job; every results
#    file must equal the one a plain `mpirun -n <ranks> workbench run` of the spec writes, and
#    every target's report and the index must be there.
TGT=(adasum-toy adasum-seq-error)
mkdir -p "$D/specs" "$D/local"
$PY - "$SRC" "$D/specs" "${TGT[@]}" <<'P' > "$D/specs.txt"
import json, os, sys
src, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, os.path.join(src, "scripts")); sys.path.insert(0, os.path.join(src, "analysis"))
import repro_smoke
from psgd_analysis import catalog
for n in names:
    t = catalog.get(n)
    catalog.ensure_specs(t.specs)
    for s in t.specs:
        spec = repro_smoke.shrink(json.load(open(catalog.spec_path(s))))
        json.dump(spec, open(os.path.join(out, s + ".json"), "w"), indent=1)
        print(s, t.ranks)
P
sub=$(REPORTS="$D/reports" SPEC_DIR="$D/specs" WB="$WB" SRUN_MPI="$SRUN_MPI" MPIRUN="$MPIRUN" \
      LAUNCHER_BENCH="srun --mpi=$SRUN_MPI -n 2" bash "$SRC/scripts/slurm/reproduce.sh" "${TGT[@]}") ||
  { bad "reproduce.sh: $sub"; exit 1; }
echo "$sub"
ARR=$(sed -n 's/^reproduce.sh: job array \([0-9]*\).*/\1/p' <<< "$sub")
REP=$(sed -n 's/^reproduce.sh: report job \([0-9]*\).*/\1/p' <<< "$sub")
say "submitted job array $ARR and report job $REP"
wait_job "$ARR"
say "job array $ARR left the queue; report job $REP: $(field "$REP" JobState) ($(field "$REP" Reason))"
for i in $(seq 600); do
  squeue -h -j "$REP" 2>/dev/null | grep -q . || break
  [[ $(field "$REP" Reason) == DependencyNeverSatisfied ]] && { bad "an array task failed: the report job cannot run"; scancel "$REP"; break; }
  sleep 1
done
say "report job $REP: JobState=$(field "$REP" JobState) ExitCode=$(field "$REP" ExitCode)"
[[ $(field "$REP" JobState) == COMPLETED ]] ||
  { bad "report job $REP did not complete"; tail -n 20 "$D"/reports/slurm-*.out; }
compared=0
while read -r s ranks; do
  "$MPIRUN" -n "$ranks" "$WB" run "$D/specs/$s.json" -o "$D/local/$s.h5" --quiet < /dev/null > /dev/null 2>&1 ||
    bad "local run of $s"
  $CMP exact "$D/local/$s.h5" "$D/reports/$s.h5" "$s: plain mpirun -n $ranks vs the Slurm array task" ||
    bad "$s: the array task's file differs"
  compared=$((compared + 1))
done < "$D/specs.txt"
[[ $compared == $(wc -l < "$D/specs.txt") ]] || bad "compared $compared of $(wc -l < "$D/specs.txt") specs"
for n in "${TGT[@]}"; do
  [[ -s "$D/reports/$n.md" ]] && grep -q "## Verdicts" "$D/reports/$n.md" || bad "no report $n.md"
done
grep -q "^# Reports" "$D/reports/README.md" && say "array: $(wc -l < "$D/specs.txt") specs, reports ${TGT[*]} and the index written" ||
  bad "no index"

say "done: $([[ $fail == 0 ]] && echo PASSED || echo FAILED)"
exit $fail
