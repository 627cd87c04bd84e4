#!/usr/bin/env bash
# kill -9 torture test: a 24-run sweep is killed at >= 10 random moments (process
# start, runs in progress, journal appends, folds), restarted with --resume after each kill,
# then finished; the result must equal an uninterrupted run bit for bit (every dataset and
# attribute except wall-clock times), and no run reported completed may be lost: each
# restart must find at least as many finished runs as the killed process had reported.
# With NP=2 in the environment (test_torture_groups.sh) the sweep runs at mpirun -n 2 with
# W = 1, so the two ranks are two rank groups running different runs at once; each kill -9
# hits rank 0, rank 1 or mpirun at random; the reference is the uninterrupted -n 1 sweep.
# usage: [NP=2] test_torture.sh WORKBENCH SOURCE_DIR [SEED]
set -u
WB=$1
PY=/usr/bin/python3
NP=${NP:-1}
MPIRUN=$(command -v mpirun.mpich || command -v mpirun)
SEED=${3:-$(date +%s)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "torture seed $SEED, $NP rank(s) (rerun: NP=$NP test_torture.sh WB SRC $SEED)"
RANDOM=$SEED
# ~0.1-0.2 s per run here: the cubic toy, 4 workers, 15000 steps (at -n 2: 1 worker, 40000
# steps, two rank groups); 24 seeds.
if [[ $NP -gt 1 ]]; then W=1; STEPS=40000; MIN_KILLS=8; else W=4; STEPS=15000; MIN_KILLS=12; fi
cat > "$tmp/sweep.json" <<J
{"name": "torture", "base": {"model": "cubic", "workers": $W, "batch_size": 64, "lr": 0.01, "steps": $STEPS, "log_every": 1500},
 "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]}}
J
# exec: `launch ... &` runs in a subshell, whose pid ($!) must be the workbench's (or
# mpirun's) own, not a shell's that a kill -9 would leave the sweep running behind.
launch() { if [[ $NP -gt 1 ]]; then exec "$MPIRUN" -n "$NP" "$WB" "$@"; else exec "$WB" "$@"; fi; }
# The process to kill: with NP > 1, rank 0, rank 1 or mpirun itself, at random.
victim() {
  local pid=$1 r q
  [[ $NP -le 1 ]] && { echo "$pid"; return; }  # (no draw: -n 1 keeps its kill sequence)
  r=$((RANDOM % 3))
  [[ $r -eq 2 ]] && { echo "$pid"; return; }
  for q in $(pgrep -f -- "-o $tmp/k.h5"); do
    if { tr '\0' '\n' < "/proc/$q/environ"; } 2>/dev/null | grep -qx "PMI_RANK=$r"; then echo "$q"; return; fi
  done
  echo "$pid"
}
t0=$(date +%s%N)
"$WB" run "$tmp/sweep.json" -o "$tmp/ref.h5" --quiet || { echo "FAIL: reference run"; exit 1; }
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "uninterrupted reference: ${ref_ms} ms for 24 runs"
# The kill window is the length of the sweep being killed. At -n 1 that is the reference; at
# -n 2 the two rank groups finish in about half of it plus MPI start-up, a ratio that varies
# from machine to machine (a CI machine finished the whole -n 2 sweep before most kill points
# drawn from the -n 1 time), so the -n 2 sweep is timed uninterrupted too.
span_ms=$ref_ms
if [[ $NP -gt 1 ]]; then
  t0=$(date +%s%N)
  (launch run "$tmp/sweep.json" -o "$tmp/span.h5" --quiet) || { echo "FAIL: uninterrupted -n $NP run"; exit 1; }
  span_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "uninterrupted -n $NP sweep: ${span_ms} ms"
fi

fail=0; kills=0; lost=0; points=""; want=0
# check_found START_ERR_FILE LABEL: the start must have found every run the killed processes
# reported completed (only when it got as far as saying so: a process killed during MPI
# start-up says nothing).
check_found() {
  local found
  found=$(grep -o 'resume: [0-9]* of' "$1" | grep -o '[0-9]*')
  # (a run's line is "[i/n] id: ..."; mpirun's own diagnostics of a killed rank start with
  # "[proxy:0:0@host]" or "[mpiexec@host]" and say nothing about what the start found)
  local ran; ran=$(tr '\r' '\n' < "$1" | grep -cE '^\[[0-9]+/[0-9]+\] ' || true)
  if [[ -z "$found" && $ran -gt 0 ]]; then found=0; fi
  if [[ -n "$found" && $found -lt $want ]]; then
    echo "FAIL: $2 found $found finished runs; the killed processes had reported $want"; lost=$((lost+1))
  fi
  FOUND=${found:-?}
}
cat > "$tmp/compare.py" <<'P'
import json, sys
import h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
skip_attrs = {"wall_s", "created_utc"}
n = 0
def attrs(x, y, where):
    global n
    ka, kb = set(x.attrs) - skip_attrs, set(y.attrs) - skip_attrs
    assert ka == kb, (where, ka ^ kb)
    for k in ka:
        va, vb = x.attrs[k], y.attrs[k]
        if k == "summary_json":
            va, vb = json.loads(va), json.loads(vb)
            for k2 in ("wall_s", "eval_wall_s"):
                va.pop(k2, None); vb.pop(k2, None)
        if k == "provenance_json":  # the same writer; only the time a run finished differs
            va, vb = json.loads(va), json.loads(vb)
            # the reference may run at another rank count; the tortured runs, folded by
            # whichever process, must name the killed sweep's ranks (its file header's)
            assert va["from"] == vb["from"] == "writer", (where, va, vb)
            assert int(vb["mpi_ranks"]) == int(y.file.attrs["mpi_ranks"]), (where, vb)
            for p in (va, vb):
                p.pop("finished_utc"); p.pop("mpi_ranks")
        assert np.array_equal(va, vb) if not isinstance(va, dict) else va == vb, (where, k)
        n += 1
def walk(x, y, where):
    global n
    attrs(x, y, where)
    assert sorted(x) == sorted(y), (where, sorted(x), sorted(y))
    for k in x:
        if isinstance(x[k], h5py.Group):
            walk(x[k], y[k], where + "/" + k)
        elif k == "summary":
            ra, rb = x[k][()], y[k][()]
            for f in ra.dtype.names:
                if f != "wall_s":
                    assert np.array_equal(ra[f], rb[f], equal_nan=ra[f].dtype.kind == "f"), (where, f); n += 1
        elif k != "wall_s":
            assert np.array_equal(x[k][()], y[k][()], equal_nan=x[k].dtype.kind == "f"), (where, k)
            n += 1
walk(a["runs"], b["runs"], "/runs")
ra, rb = a["summary"][()], b["summary"][()]
for f in ra.dtype.names:
    if f != "wall_s":
        assert np.array_equal(ra[f], rb[f], equal_nan=ra[f].dtype.kind == "f"), ("summary", f); n += 1
assert all(b["runs"][r].attrs["status"] == "completed" for r in b["runs"]) and len(b["runs"]) == 24
print(f"comparison: {len(b['runs'])} runs, {n} datasets/attributes/summary columns bit-identical to the uninterrupted run (wall-clock times excluded)")
P
# Rounds until MIN_KILLS kills: on a fast machine one round's sweep can finish before them;
# each round starts a fresh file and ends with --resume and the bit-for-bit comparison.
round=0; rcs=0
while [[ $kills -lt $MIN_KILLS && $round -lt 16 ]]; do
  round=$((round+1)); want=0; rm -f "$tmp/k.h5"
  for i in $(seq 1 30); do
    [[ $kills -ge $MIN_KILLS || $want -ge 24 ]] && break
    launch run "$tmp/sweep.json" -o "$tmp/k.h5" --resume > "$tmp/run$round.$i.out" 2> "$tmp/run$round.$i.err" &
    pid=$!
    # A kill point uniform in [0.05 s, 0.05 s + f x the sweep's length]: kills land in MPI
    # start-up, the fold of the previous journal, runs in progress and journal appends.
    # f = 0.25 at -n 1; at -n 2 the window spans the part of the sweep still to run (each
    # restart has fewer runs left), so that most kill points land while it is running.
    delay=$(awk -v r=$RANDOM -v t=$span_ms -v np=$NP -v left=$((24 - want)) 'BEGIN {
              f = np > 1 ? 0.9 * (left < 8 ? 8 : left) / 24 : 0.25;
              printf "%.3f", 0.05 + t * f * (r % 1000) / 1000 / 1000 }')
    sleep "$delay"
    who=$(victim $pid)
    if kill -0 $pid 2> /dev/null && kill -9 "$who" 2> /dev/null; then kills=$((kills+1)); fi
    wait $pid 2> /dev/null  # mpirun takes the other rank down itself
    # ... but a kill -9 of mpirun leaves its proxy to do it: wait until no rank is left.
    for _ in $(seq 1 200); do pgrep -f -- "-o $tmp/k.h5" > /dev/null || break; sleep 0.05; done
    check_found "$tmp/run$round.$i.err" "start $i"
    reported=$(tr '\r' '\n' < "$tmp/run$round.$i.err" | grep -c ': completed' || true)
    [[ "$FOUND" != "?" ]] && want=$((FOUND + reported))
    points="$points ${delay}s"
    echo "round $round, kill $i at ${delay}s$([[ $NP -gt 1 ]] && { [[ $who == $pid ]] && echo ' (mpirun)' || echo " (rank pid $who)"; }): the start found $FOUND finished runs, then reported $reported more completed"
  done
  (launch run "$tmp/sweep.json" -o "$tmp/k.h5" --resume) 2> "$tmp/final$round.err"; rc=$?
  check_found "$tmp/final$round.err" "the final start"
  echo "round $round, final --resume: rc $rc; it found $FOUND of 24 runs finished by the killed processes and ran the rest"
  [[ $rc -ne 0 ]] && { rcs=$rc; echo "     final --resume said: $(tail -2 "$tmp/final$round.err")"; ls -la "$tmp"; }
  $PY "$tmp/compare.py" "$tmp/ref.h5" "$tmp/k.h5" || fail=1
done
rc=$rcs
left=$(ls "$tmp" | grep -c -E '\.tmp|\.journal|\.lock' || true)
echo "kill points:$points"
if [[ $rc -eq 0 && $fail -eq 0 && $lost -eq 0 && $kills -ge $((MIN_KILLS - 2)) && $left -eq 0 ]]; then
  echo "ok   torture ($NP rank(s)): $kills kill -9s, no completed run lost, result bit-identical, no companion files left"
else
  echo "FAIL torture: rc=$rc kills=$kills lost=$lost compare_failed=$fail leftover files=$left"; exit 1
fi
