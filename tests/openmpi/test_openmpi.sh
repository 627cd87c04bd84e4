#!/usr/bin/env bash
# The Open MPI family (mk/openmpi.mk): run against a build configured with
# -DWORKBENCH_MPI=openmpi, next to the default MPICH build.
#   1. the MPI unit tests (mpi_tests) at -n 2 under Open MPI's mpirun;
#   2. the determinism CLI test (tests/cli/test_determinism.sh) with MPIRUN = Open MPI's;
#   3. rank invariance at -n 4 with --oversubscribe (2 cores) on short runs: LeNet-5 (sync SGD,
#      Adasum) and the sparse MLP under every algorithm, against -n 1;
#   4. the same specs at -n 2 under MPICH (the default build) and Open MPI: the results
#      files agree bit for bit (every curve but wall_s, and final_params).
# usage: test_openmpi.sh OPENMPI_BUILD_DIR MPICH_WORKBENCH SOURCE_DIR
#   OMPIRUN (default: mpirun.openmpi --allow-run-as-root), MPICHRUN (default: mpirun.mpich)
set -u
OB=$1; MWB=$2; SRC=$3
OWB=$OB/workbench
read -r -a OMPIRUN <<< "${OMPIRUN:-mpirun.openmpi --allow-run-as-root}"
read -r -a MPICHRUN <<< "${MPICHRUN:-mpirun.mpich}"
PY=/usr/bin/python3
CMP="$PY $SRC/tests/openmpi/compare_h5.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0
ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }
step() { echo "--- $1 ($(( $(date +%s) - t0 )) s)"; }
t0=$(date +%s)

step "1. mpi_tests -n 2, Open MPI"
if "${OMPIRUN[@]}" -n 2 "$OB/mpi_tests" > "$tmp/mpi.log" 2>&1; then
  ok "mpi_tests -n 2 (Open MPI): $(grep -a 'test cases:' "$tmp/mpi.log" | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
else
  tail -30 "$tmp/mpi.log"; bad "mpi_tests -n 2 (Open MPI)"
fi

step "2. determinism CLI test, Open MPI"
if MPIRUN="${OMPIRUN[*]}" bash "$SRC/tests/cli/test_determinism.sh" "$OWB" "$SRC"; then
  ok "test_determinism.sh (Open MPI, -n 2)"
else
  bad "test_determinism.sh (Open MPI, -n 2)"
fi

# Short runs: LeNet-5 on Fashion-MNIST (dense conv net, per-tensor Adasum), and the sparse
# MLP under every algorithm (test_determinism.sh's sweep, fewer steps).
cat > "$tmp/lenet.json" <<'J'
{"name": "openmpi_lenet",
 "base": {"model": {"name": "lenet5", "test_limit": 500}, "algorithm": "adasum",
          "optimizer": {"name": "sgd", "momentum": 0.5}, "workers": 4, "batch_size": 16,
          "lr": 0.02, "steps": 30, "log_every": 5, "eval_every": 15, "seed": 1},
 "sweep": {"algorithm": [{"name": "sync_sgd", "combine": "average"}, "adasum"]}}
J
cat > "$tmp/mlp.json" <<'J'
{"name": "openmpi_mlp",
 "base": {"model": {"name": "sparse_mlp", "hidden": [16],
                    "synthetic": {"train_size": 400, "test_size": 100, "features": 200,
                                  "labels": 20, "nnz": 12}},
          "workers": 4, "batch_size": 8, "lr": 0.05, "steps": 8, "eval_every": 4, "seed": 5},
 "sweep": {"algorithm": ["sync_sgd", {"name": "sync_sgd", "combine": "sum"}, "adasum",
                         {"name": "adasum", "apply": "delta", "local_steps": 2},
                         {"name": "local_sgd", "H": 3}, {"name": "post_local_sgd", "H": 3},
                         "elastic_sgd", {"name": "adaptive_sgd", "megabatch": 4},
                         {"name": "lap_sgd", "updaters": 2, "H": 2, "mode": "simulated"},
                         {"name": "lpp_sgd", "updaters": 2, "H": 2, "mode": "simulated"}]}}
J

step "3. rank invariance, Open MPI: -n 4 --oversubscribe vs -n 1"
for s in lenet mlp; do
  "$OWB" run "$tmp/$s.json" -o "$tmp/$s.ompi.n1.h5" --quiet || bad "$s: Open MPI -n 1"
  "${OMPIRUN[@]}" -n 4 --oversubscribe "$OWB" run "$tmp/$s.json" -o "$tmp/$s.ompi.n4.h5" --quiet ||
    bad "$s: Open MPI -n 4 --oversubscribe"
  if $CMP tol "$tmp/$s.ompi.n1.h5" "$tmp/$s.ompi.n4.h5" "$s, Open MPI -n 1 vs -n 4 --oversubscribe"; then
    ok "$s: rank invariance at -n 4 --oversubscribe (Open MPI)"
  else bad "$s: rank invariance at -n 4 --oversubscribe (Open MPI)"; fi
done

step "4. MPICH vs Open MPI, -n 2"
for s in lenet mlp; do
  "${MPICHRUN[@]}" -n 2 "$MWB" run "$tmp/$s.json" -o "$tmp/$s.mpich.n2.h5" --quiet || bad "$s: MPICH -n 2"
  "${OMPIRUN[@]}" -n 2 "$OWB" run "$tmp/$s.json" -o "$tmp/$s.ompi.n2.h5" --quiet || bad "$s: Open MPI -n 2"
  if $CMP exact "$tmp/$s.mpich.n2.h5" "$tmp/$s.ompi.n2.h5" "$s, MPICH -n 2 vs Open MPI -n 2"; then
    ok "$s: MPICH and Open MPI results files identical"
  else bad "$s: MPICH and Open MPI results differ"; fi
done

step "done"
echo "openmpi: $pass passed, $fail failed"
[[ $fail == 0 ]]
