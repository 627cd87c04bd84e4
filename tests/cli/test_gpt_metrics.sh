#!/usr/bin/env bash
# The gpt model under the workbench's algorithms and diagnostics, no special case: a tiny
# GPT (1 block, 2 heads, d_model 32, block 16) on a generated text file, 4 workers, with
# orthogonality, diversity and the sequential emulation (exact HVPs through attention,
# LayerNorm and GELU) logged every 2 steps under sync SGD and Adasum (delta), and local SGD
# (H = 2; it exposes no per-step gradients to the metrics):
#   - every run completes, the first two with metrics/ for all three diagnostics, all with
#     the test loss in nats per token (finite, below ln V at the end: it learned something);
#   - -n 1 and -n 2 give bit-identical curves and metrics (all three are synchronous);
#   - a bad data_path is one error line naming the file, exit 2.
#   tests/cli/test_gpt_metrics.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1")
read -r -a MPIRUN_CMD <<< "${MPIRUN:-mpirun}"
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
for i in $(seq 1 120); do
  echo "In the beginning was the word $i, and the word was with the text number $((i * 7 % 13))."
done > text.txt
cat > g.json <<'JSON'
{"name": "gpt_metrics",
 "base": {"model": {"name": "gpt", "layers": 1, "heads": 2, "d_model": 32, "block": 16,
                    "data_path": "text.txt"},
          "workers": 4, "batch_size": 2, "lr": 0.05, "steps": 6, "eval_every": 3, "seed": 5},
 "sweep": {"algorithm+metrics": [
   ["sync_sgd", {"orthogonality": {"every": 2}, "diversity": {"every": 2},
                 "seq_emulation": {"every": 2, "workers": "all"}}],
   [{"name": "adasum", "apply": "delta"},
    {"orthogonality": {"every": 2}, "diversity": {"every": 2},
     "seq_emulation": {"every": 2, "workers": "all"}}],
   [{"name": "local_sgd", "H": 2}, {}]]}}
JSON
"$WB" run g.json -o n1.h5 --quiet 2> n1.err; rc=$?
check "-n 1: three runs complete (got $rc)" '[[ $rc == 0 ]]'
"${MPIRUN_CMD[@]}" -n 2 "$WB" run g.json -o n2.h5 --quiet 2> n2.err; rc=$?
check "-n 2: three runs complete (got $rc)" '[[ $rc == 0 ]]'
cat > cmp.py <<'P'
import math, sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
runs = sorted(a["runs"])
assert runs == sorted(b["runs"]) and len(runs) == 3, runs
vocab = len(set(open("text.txt", "rb").read()))
for rid in runs:
    ga, gb = a["runs"][rid], b["runs"][rid]
    assert ga.attrs["status"] == "completed", rid
    if "local_sgd" not in rid:  # local SGD exposes no per-step gradients to the metrics
        for m in ("orthogonality", "diversity", "seq_error"):  # seq_error: seq_emulation's
            assert any(n.startswith(m) for n in ga["metrics"]), (rid, m, list(ga["metrics"]))
    te = ga["curves/test_loss"][()]
    te = te[~np.isnan(te)]
    assert len(te) >= 2 and np.isfinite(te).all() and te[-1] < math.log(vocab), (rid, te)
    for grp in ("curves", "metrics"):
        if grp not in ga:
            continue
        for k in ga[grp]:
            if k == "wall_s":
                continue
            x, y = ga[grp][k][()], gb[grp][k][()]
            assert x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (rid, grp, k)
    print(rid, "test loss", te[-1], "nats/token; metrics", sorted(ga["metrics"]) if "metrics" in ga else [])
print("bit-identical at -n 1 and -n 2:", len(runs), "runs")
P
$PY cmp.py n1.h5 n2.h5; rc=$?
check "diagnostics recorded, loss below ln V, -n 1 == -n 2 bit for bit" '[[ $rc == 0 ]]'
sed 's/"text.txt"/"missing.txt"/' g.json > bad.json
"$WB" run bad.json -o bad.h5 --quiet > /dev/null 2> bad.err; rc=$?
check "missing data_path: exit 2 (got $rc), one line naming the file" \
  '[[ $rc == 2 ]] && [[ $(grep -c "workbench: error" bad.err) == 1 ]] && grep -q "missing.txt" bad.err'
: > empty.txt
sed 's/"text.txt"/"empty.txt"/' g.json > empty.json
"$WB" run empty.json -o e.h5 --quiet > /dev/null 2> e.err; rc=$?
check "empty data_path: exit 2 (got $rc), naming the file" \
  '[[ $rc == 2 ]] && grep -q "empty.txt.*empty" e.err'
exit $fail
