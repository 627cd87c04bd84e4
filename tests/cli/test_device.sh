#!/usr/bin/env bash
# The "device" run-config key end to end (train/compute_device.h, cuda/backend_cuda.cpp).
# What is expected depends on the build and the machine, and each branch checks its own:
#   build without CUDA        "device": "cuda" -> exit 2, one line, "built without cuda support"
#   CUDA build, no GPU        -> exit 2, one line naming $.device and "no CUDA device", no file
#   CUDA build and a GPU      a sweep over device cpu/cuda (LeNet-5, sync SGD and Adasum, 2 MPI
#                             ranks) -> same simulated times, curves within float tolerance
# Always: an unknown device and a model without a CUDA implementation are refused (exit 2).
# usage: test_device.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
PY=${WB_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# expect_error NAME WANT CMD...: exit 2, exactly one line on stderr containing WANT, no .h5 left
expect_error() {
  local name=$1 want=$2
  shift 2
  "$@" > "$tmp/stdout" 2> "$tmp/stderr"
  local rc=$? msg; msg=$(cat "$tmp/stderr")
  if [[ $rc -ne 2 ]]; then bad "$name: exit $rc, want 2: $msg"; return; fi
  if [[ $(wc -l < "$tmp/stderr") -ne 1 ]]; then bad "$name: want one line on stderr: $msg"; return; fi
  if [[ "$msg" != *"$want"* ]]; then bad "$name: message lacks '$want': $msg"; return; fi
  if ls "$tmp"/*.h5* > /dev/null 2>&1; then bad "$name: output left behind"; rm -f "$tmp"/*.h5*; return; fi
  ok "$name: $msg"
}

# A small MNIST-format directory: binary class patterns plus noise (60 steps learn it).
$PY - "$tmp/mnist" <<'P' || { echo "FAIL cannot write the test data"; exit 1; }
import os, struct, sys
import numpy as np
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(3)
pat = rng.integers(0, 2, size=(10, 784)) * 192
for split, n in (("train", 600), ("t10k", 200)):
    lab = rng.integers(0, 10, size=n)
    px = (pat[lab] + rng.integers(0, 64, size=(n, 784))).astype(np.uint8)
    with open(f"{d}/{split}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28)); f.write(px.tobytes())
    with open(f"{d}/{split}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n)); f.write(lab.astype(np.uint8).tobytes())
P
spec() {  # spec DEVICE_JSON MODEL_JSON -> stdout
  printf '{"name": "dev", "base": {"model": %s, "device": %s, "workers": 4, "batch_size": 16,
    "lr": 0.02, "optimizer": {"name": "sgd", "momentum": 0.5}, "steps": 60, "log_every": 5,
    "eval_every": 30, "seed": 2}, "sweep": {"algorithm": ["sync_sgd", "adasum"]}}\n' "$2" "$1"
}
LENET='{"name": "lenet5", "data_dir": "'"$tmp/mnist"'"}'
spec '"gpu"' "$LENET" > "$tmp/gpu.json"
spec '"cuda"' "$LENET" > "$tmp/cuda.json"
spec '"cuda"' '"quadratic"' > "$tmp/quad.json"
spec '"cpu"' "$LENET" > "$tmp/cpu.json"

devices=$("$WB" --version | grep '^devices:')
[[ "$devices" == "devices: cpu (built in)"* ]] && ok "--version: $devices" || bad "--version lacks the devices line: $devices"

expect_error "unknown device" '$.base.device: expected one of cpu|cuda, got "gpu"' "$WB" validate "$tmp/gpu.json"

if [[ "$devices" != *"cuda ("* ]]; then
  expect_error "no CUDA in this build (validate)" '$.base.device: this workbench was built without cuda support' "$WB" validate "$tmp/cuda.json"
  expect_error "no CUDA in this build (run)" '$.base.device: this workbench was built without cuda support' "$WB" run "$tmp/cuda.json" -o "$tmp/o.h5"
else
  expect_error "model without a CUDA implementation" '$.base.device: model "quadratic" has no cuda implementation' "$WB" validate "$tmp/quad.json"
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    # validate opens the devices as run's pre-flight does: both refuse, before any output.
    expect_error "CUDA build, no GPU (validate refuses)" ': $.device: no CUDA device' "$WB" validate "$tmp/cuda.json"
    expect_error "CUDA build, no GPU (run refuses)" ': $.device: no CUDA device' "$WB" run "$tmp/cuda.json" -o "$tmp/o.h5"
    expect_error "CUDA build, no GPU, 2 ranks" ': $.device: no CUDA device' \
      mpirun -n 2 "$WB" run "$tmp/cuda.json" -o "$tmp/o.h5"
  else
    # A GPU: the same sweep on the CPU and on the GPU, 2 MPI ranks sharing it.
    if "$WB" run "$tmp/cpu.json" -o "$tmp/cpu.h5" --quiet &&
       mpirun -n 2 "$WB" run "$tmp/cuda.json" -o "$tmp/cuda.h5" --quiet &&
       $PY - "$tmp/cpu.h5" "$tmp/cuda.h5" <<'P'
import json, sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert sorted(a["runs"]) == sorted(b["runs"]) and len(a["runs"]) == 2
assert a.attrs["devices"] == "cpu" and b.attrs["devices"].startswith("cuda: GPU "), b.attrs["devices"]
for rid in a["runs"]:
    ca, cb = a["runs"][rid]["curves"], b["runs"][rid]["curves"]
    assert json.loads(b["runs"][rid].attrs["config_json"])["device"] == "cuda"
    assert (ca["sim_s"][()] == cb["sim_s"][()]).all(), rid      # the cost model is the CPU's
    x, y = ca["train_loss"][()], cb["train_loss"][()]
    assert x[-1] < 0.8 * x[0], (rid, x)                          # it learns: a real curve
    assert np.allclose(y, x, rtol=2e-2, atol=5e-3), (rid, x, y)
    accx, accy = ca["test_accuracy"][()][-1], cb["test_accuracy"][()][-1]
    assert abs(accx - accy) <= 0.03, (rid, accx, accy)
    print(rid, "final train loss cpu %.4f cuda %.4f, accuracy %.3f / %.3f" % (x[-1], y[-1], accx, accy))
P
    then ok "GPU: device cuda (2 ranks) matches device cpu"; else bad "GPU: device cuda vs cpu"; fi
  fi
fi
exit $fail
