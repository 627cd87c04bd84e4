#!/usr/bin/env bash
# The GPU checks of the CUDA build staged by scripts/gpu/pack.sh, in one call on a GPU
# machine (the repository root is the working directory; $OUT, if set, receives the logs
# and the results file):
#   info    the GPU, the CPU, the staged binaries' libraries
#   ctest   ctest -L cuda (cuda_tests: every kernel vs its CPU reference, the device models,
#           runs swept over device cpu/cuda; bench_gpu --smoke)
#   bench   build-gpu/bench_gpu (RESULT line)
#   device  tests/cli/test_device.sh (2 MPI ranks on the GPU vs the CPU run)
#   sweep   experiments/adasum/lenet_sweep.json with "device": "cuda", one rank: wall time and the
#           results file ($OUT/lenet_sweep_cuda.h5, to compare with the CPU run's)
#   ranks   8 of its cells for 100 steps at -n 1 and -n 2: curves bit-identical
#   calibrate  workbench calibrate --device cuda (2 ranks), then --validate with that profile
#           (not in the default list: name it)
#   lapu    LAP-SGD real mode on the GPU over U = 1..8 updaters (not in the default list)
#   r1      R1's five specs on the GPU, results back for the report engine (not in the default list)
#   ncu     Nsight Compute on the in-process Adasum's cluster kernel (not in the default list)
# usage: scripts/gpu/device_check.sh [STAGE...]   (default: all, in this order)
# Each stage has its own time limit, so a slow one cannot starve the others.
set -u
root=$(pwd)
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
# pack.sh's archive: .gpu/lib, .gpu/bin and the build tree's executables.
if [[ -f .gpu/stage.tar.xz && ! -d .gpu/lib ]]; then
  tar -xJf .gpu/stage.tar.xz -C .gpu lib bin && tar -xJf .gpu/stage.tar.xz build-gpu
fi
export LD_LIBRARY_PATH=$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$root/.gpu/bin:$PATH
export WB_PYTHON=${WB_PYTHON:-$(command -v python3)}
# The build tree's CTest file names /work/main (where it was configured).
# Link it there when that path is free; otherwise ctest falls back to the binary itself.
if [[ $root != /work/main && ! -e /work/main ]]; then mkdir -p /work && ln -s "$root" /work/main; fi
# The workbench's default data directory (Debian's dataset-fashion-mnist).
if [[ ! -e /usr/share/datasets/fashion-mnist ]]; then
  mkdir -p /usr/share/datasets && ln -s "$root/.gpu/fashion-mnist" /usr/share/datasets/fashion-mnist
fi
stages=("$@")
[[ ${#stages[@]} -eq 0 ]] && stages=(info ctest bench device ranks sweep)
t0=$(date +%s)
stamp() { echo "== $1 ($(( $(date +%s) - t0 )) s since start)"; }
# cuda_spec SRC DST [PYTHON]: the spec SRC with "device": "cuda" (and the statements PYTHON
# applied to it, as `s`) written to DST.
cuda_spec() {
  "$WB_PYTHON" - "$1" "$2" "${3:-}" <<'P'
import json, sys
s = json.load(open(sys.argv[1]))
s["base"]["device"] = "cuda"
exec(sys.argv[3])
json.dump(s, open(sys.argv[2], "w"), indent=1)
P
}
for s in "${stages[@]}"; do
  stamp "$s"
  case $s in
    info)
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
      lscpu | grep -E 'Model name|^CPU\(s\)'
      ldd build-gpu/workbench | grep 'not found' && echo "MISSING LIBRARIES"
      build-gpu/workbench --version
      ;;
    ctest)
      if [[ $(readlink -f /work/main) == "$root" ]] && command -v ctest > /dev/null; then
        (cd /work/main/build-gpu && timeout "${CTEST_LIMIT:-200}" ctest -L cuda --output-on-failure -V) \
          > "$out/ctest_cuda.log" 2>&1
        echo "ctest -L cuda rc=$?"
      else  # what ctest -L cuda runs
        { timeout "${CTEST_LIMIT:-200}" build-gpu/cuda_tests; echo "cuda_tests rc=$?";
          bash bench/smoke_test.sh build-gpu/bench_gpu --smoke; echo "bench_gpu_smoke rc=$?"; } \
          > "$out/ctest_cuda.log" 2>&1
        grep ' rc=' "$out/ctest_cuda.log"
      fi
      grep -E '^[0-9]+% tests passed|Test +#|\[doctest\] (test cases|assertions)|ok: RESULT|FAIL|ERROR' "$out/ctest_cuda.log" | head -n 40
      ;;
    bench)
      timeout "${BENCH_LIMIT:-150}" build-gpu/bench_gpu > "$out/bench_gpu.log" 2>&1
      echo "bench_gpu rc=$?"
      grep -vE '^check ' "$out/bench_gpu.log" | tail -n 30
      ;;
    device)
      timeout "${DEVICE_LIMIT:-90}" bash tests/cli/test_device.sh build-gpu/workbench "$root" > "$out/test_device.log" 2>&1
      echo "test_device rc=$?"
      tail -n 12 "$out/test_device.log"
      ;;
    sweep)
      cuda_spec "$root/experiments/adasum/lenet_sweep.json" /tmp/lenet_sweep_cuda.json
      start=$(date +%s%N)
      timeout "${SWEEP_LIMIT:-240}" build-gpu/workbench run /tmp/lenet_sweep_cuda.json \
        -o "$out/lenet_sweep_cuda.h5" --force > "$out/sweep.log" 2>&1
      rc=$?
      end=$(date +%s%N)
      echo "lenet_sweep (cuda, 1 rank) rc=$rc wall_ms=$(( (end - start) / 1000000 ))"
      tail -n 5 "$out/sweep.log"
      ;;
    ranks)
      # Rank invariance of the grouped passes: 8 lenet_sweep cells (seed 1, 100 steps) at
      # -n 1 (each run's W workers one group) and -n 2 (two groups of W/2): bit-identical
      # curves expected.
      cuda_spec "$root/experiments/adasum/lenet_sweep.json" /tmp/ranks.json \
        's["base"].pop("epochs", None); s["base"]["steps"] = 100; s["sweep"]["seed"] = [1]'
      timeout 100 build-gpu/workbench run /tmp/ranks.json -o /tmp/ranks1.h5 --force --quiet
      echo "ranks -n 1 rc=$?"
      timeout 100 mpirun -n 2 build-gpu/workbench run /tmp/ranks.json -o /tmp/ranks2.h5 --force --quiet
      echo "ranks -n 2 rc=$?"
      "$WB_PYTHON" - /tmp/ranks1.h5 /tmp/ranks2.h5 <<'P'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
same = differ = 0
for k, g in a["runs"].items():
    ca, cb = g["curves"], b["runs"][k]["curves"]
    for col in ("train_loss", "sim_s", "test_accuracy"):
        if col not in ca: continue
        x, y = ca[col][:], cb[col][:]
        if x.shape == y.shape and np.array_equal(x, y, equal_nan=True): same += 1
        else: differ += 1; print("differs:", k, col)
print(f"rank invariance (cuda, grouped passes): {same} curves bit-identical at -n 1 and -n 2, {differ} differ")
P
      ;;
    calibrate)
      # The cost profile of this machine with the training passes on its GPU (2 ranks share
      # it, as in the validation runs), then simulated vs measured step times with it.
      timeout "${CALIB_LIMIT:-240}" mpirun -n 2 build-gpu/workbench calibrate --device cuda \
        -o "$out/calib-gpu.json" > "$out/calibrate.log" 2>&1
      echo "calibrate rc=$?"
      grep -A12 '^compute' "$out/calibrate.log" | head -n 30
      timeout "${VALIDATE_LIMIT:-150}" mpirun -n 2 build-gpu/workbench calibrate --device cuda \
        --validate "$out/calib-gpu.json" --steps "${VALIDATE_STEPS:-200}" > "$out/validate.log" 2>&1
      echo "validate rc=$?"
      grep -E '^\| (lenet5|sparse_mlp) |^steps:|^collective|^RESULT' "$out/validate.log"
      ;;
    lapu)
      # LAP-SGD real mode on the GPU, U = 1..8 updaters per worker (LPP-SGD Table 3's U sweep:
      # do concurrent updaters saturate the device?): lpp_frequency.json's recipe, 2 workers
      # in one rank, 400 steps, seeds 1-3; the wall time per step comes back in the results file.
      cuda_spec "$root/experiments/lpp/lpp_frequency.json" /tmp/lapu.json \
        's["base"]["algorithm"]["mode"] = "real"; s["base"].pop("epochs", None)
s["base"]["steps"] = 400; s["base"]["log_every"] = 20
s["sweep"] = {"seed": [1, 2, 3], "batch_size": [128, 256], "algorithm.updaters": [1, 2, 4, 6, 8]}'
      timeout "${LAPU_LIMIT:-120}" build-gpu/workbench run /tmp/lapu.json -o "$out/lapu_cuda.h5" --force > "$out/lapu.log" 2>&1
      echo "lapu rc=$?"
      grep -E '^\[' "$out/lapu.log" | tail -n 10
      ;;
    r1)
      # R1 (adasum-lenet) on the GPU: its five specs with "device": "cuda", one rank; the
      # results files come back xz-compressed ($OUT/<spec>.h5.xz) for the report engine here
      # (analysis/reproduce.py adasum-lenet ... --out DIR): do the verdicts replicate?
      mkdir -p /tmp/r1
      for spec in lenet_sweep lenet_seq_ref lenet_ablation_apply lenet_sweep_tuned lenet_seq_lr; do
        cuda_spec "$root/experiments/adasum/$spec.json" "/tmp/r1/$spec.json"
        t1=$(date +%s%N)  # not t0: stamp() reads that one
        timeout "${R1_LIMIT:-120}" build-gpu/workbench run "/tmp/r1/$spec.json" -o "/tmp/r1/$spec.h5" --force --quiet
        rc=$?
        echo "$spec rc=$rc wall_ms=$(( ($(date +%s%N) - t1) / 1000000 ))"
        [[ -f /tmp/r1/$spec.h5 ]] && xz -T0 -3 -c "/tmp/r1/$spec.h5" > "$out/$spec.h5.xz"
      done
      ls -la "$out"
      ;;
    ncu)
      # Nsight Compute on the in-process Adasum's cluster kernel (bench_gpu part 2): each
      # launch's duration on the GPU (not counting the launch), occupancy limits and memory
      # throughput, the median per grid size (= W, total bytes row). Not in the default list.
      ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
      [[ -n $ncu_bin ]] || { echo "ncu not found"; continue; }
      timeout "${NCU_LIMIT:-200}" "$ncu_bin" --clock-control none --kernel-name regex:adasum_cluster \
        --launch-count "${NCU_LAUNCHES:-120}" --section LaunchStats --section Occupancy \
        --section SpeedOfLight --csv --page details \
        build-gpu/bench_gpu --min-time 0.02 --reps 1 --adasum-reps 5 > "$out/ncu.csv" 2> "$out/ncu.err"
      echo "ncu rc=$?"
      "$WB_PYTHON" - "$out/ncu.csv" <<'P'
import sys, io, pandas as pd
text = open(sys.argv[1]).read()
text = text[text.find('"ID"'):]
d = pd.read_csv(io.StringIO(text))
d["v"] = pd.to_numeric(d["Metric Value"].astype(str).str.replace(",", ""), errors="coerce")
want = ["Duration", "DRAM Throughput", "Memory Throughput", "Compute (SM) Throughput",
        "Achieved Occupancy", "Registers Per Thread", "Dynamic Shared Memory Per Block",
        "Cluster Size", "Block Limit Registers", "Block Limit Shared Mem", "Waves Per SM"]
t = d[d["Metric Name"].isin(want)].groupby(["Grid Size", "Metric Name"])["v"].median().unstack()
pd.set_option("display.width", 250)
print(t.to_string())
print(d[d["Metric Name"] == "Duration"][["Grid Size", "Metric Unit"]].drop_duplicates().to_string())
P
      ;;
    *) echo "unknown stage $s"; exit 2 ;;
  esac
done
stamp done
