#!/usr/bin/env bash
# resnet end to end: every algorithm trains a small ResNet-8 (width 4, Fashion-MNIST at
# 28x28, a few steps), the three diagnostics run on it with no special case, and
#   (1) the synchronous algorithms (sync_sgd, adasum, and the diagnostics) give
#       bit-identical curves and metrics at -n 1 and -n 2;
#   (2) local_sgd with bn_stats averaged and local differ (the key is live), both complete;
#   (3) lap_sgd refuses BatchNorm statistics with one clear line (exit 2) and runs with
#       norm group.
# usage: test_resnet.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
read -r -a MPIRUN_CMD <<< "${MPIRUN:-mpirun}"
DATA=/usr/share/datasets/fashion-mnist
if [ ! -d "$DATA" ]; then echo "skip: $DATA absent"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
PY=/usr/bin/python3
MODEL='{"name": "resnet", "depth": 8, "width": 4, "pad": 0, "train_limit": 512, "test_limit": 64, "augment": "crop_flip"}'
GMODEL='{"name": "resnet", "depth": 8, "width": 4, "pad": 0, "norm": "group", "groups": 2, "train_limit": 512, "test_limit": 64}'

cat > "$tmp/sync.json" <<J
{"name": "resnet_sync",
 "base": {"model": $MODEL, "workers": 4, "batch_size": 8, "lr": 0.05, "steps": 4,
          "eval_every": 2, "seed": 5,
          "metrics": {"orthogonality": {"every": 2}, "diversity": {"every": 2},
                      "seq_emulation": {"every": 2, "workers": "all"}}},
 "sweep": {"algorithm": ["sync_sgd", "adasum"]}}
J
cat > "$tmp/other.json" <<J
{"name": "resnet_other",
 "base": {"model": $MODEL, "workers": 4, "batch_size": 8, "lr": 0.05, "steps": 4,
          "eval_every": 2, "seed": 5},
 "sweep": {"algorithm": [{"name": "local_sgd", "H": 2, "bn_stats": "local"},
                         {"name": "local_sgd", "H": 2, "bn_stats": "averaged"},
                         {"name": "post_local_sgd", "H": 2, "bn_stats": "averaged"},
                         {"name": "adaptive_sgd", "megabatch": 4}]}}
J
cat > "$tmp/lap.json" <<J
{"name": "resnet_lap",
 "base": {"model": $GMODEL, "workers": 2, "batch_size": 8, "lr": 0.05, "steps": 4,
          "eval_every": 2, "seed": 5},
 "sweep": {"algorithm": [{"name": "lap_sgd", "updaters": 2, "H": 2, "mode": "simulated"},
                         {"name": "lpp_sgd", "updaters": 2, "H": 2, "mode": "simulated"}]}}
J
sed 's/"norm": "group", "groups": 2, //' "$tmp/lap.json" > "$tmp/lap_bn.json"

"$WB" run "$tmp/sync.json" -o "$tmp/s1.h5" --quiet || bad "sync -n 1"
"${MPIRUN_CMD[@]}" -n 2 "$WB" run "$tmp/sync.json" -o "$tmp/s2.h5" --quiet || bad "sync -n 2"
"$WB" run "$tmp/other.json" -o "$tmp/o1.h5" --quiet || bad "other -n 1"
"${MPIRUN_CMD[@]}" -n 2 "$WB" run "$tmp/other.json" -o "$tmp/o2.h5" --quiet || bad "other -n 2"
"$WB" run "$tmp/lap.json" -o "$tmp/l1.h5" --quiet || bad "lap/lpp norm group"
out=$("$WB" run "$tmp/lap_bn.json" -o "$tmp/lb.h5" --quiet 2>&1); rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "BatchNorm running statistics"; then ok "lap_sgd refuses batch norm (exit 2)"; else bad "lap_sgd with batch norm: rc $rc: $out"; fi

cat > "$tmp/cmp.py" <<'P'
import sys, h5py, numpy as np
a, b, o1 = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), h5py.File(sys.argv[3])
fails = []
for rid in sorted(a["runs"]):
    ga, gb = a["runs"][rid], b["runs"][rid]
    assert ga.attrs["status"] == "completed", (rid, ga.attrs["status"], ga.attrs.get("error"))
    for grp in ("curves", "metrics"):
        if grp not in ga:
            continue
        for k in ga[grp]:
            if k == "wall_s" or not hasattr(ga[grp][k], "shape"):
                continue
            x, y = ga[grp][k][()], gb[grp][k][()]
            if x.dtype.kind == "f" and not np.array_equal(x, y, equal_nan=True):
                fails.append((rid, grp, k))
    assert "metrics" in ga and len(ga["metrics"]) >= 3, (rid, list(ga.get("metrics", [])))
    acc = ga["curves"]["test_accuracy"][()]
    acc = acc[np.isfinite(acc)]  # rows between evaluations are NaN
    assert len(acc) >= 2 and ((acc >= 0) & (acc <= 1)).all(), (rid, acc)
    print(rid, "metrics:", sorted(ga["metrics"]), "test_accuracy", acc)
assert not fails, fails
runs = {rid: o1["runs"][rid] for rid in o1["runs"]}
for rid, g in runs.items():
    assert g.attrs["status"] == "completed", (rid, g.attrs.get("error"))
loc = [r for r in runs if "local" in r and "averaged" not in r and "post" not in r]
avg = [r for r in runs if "averaged" in r and "post" not in r]
assert len(loc) == 1 and len(avg) == 1, list(runs)
la, aa = runs[loc[0]]["curves"]["test_loss"][()], runs[avg[0]]["curves"]["test_loss"][()]
la, aa = la[np.isfinite(la)], aa[np.isfinite(aa)]
assert not np.array_equal(la, aa), "bn_stats local and averaged gave the same test loss"
print("bn_stats local", la, "averaged", aa)
P
$PY "$tmp/cmp.py" "$tmp/s1.h5" "$tmp/s2.h5" "$tmp/o1.h5" && ok "sync/adasum + 3 diagnostics bit-identical at -n 1 / -n 2; bn_stats live" || bad "comparison"
exit $fail
