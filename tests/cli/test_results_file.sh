#!/usr/bin/env bash
# End-to-end: the HDF5 contract, --resume, --force, and rank-invariance through the CLI.
# usage: test_results_file.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0
ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }
PY=/usr/bin/python3

cat > "$tmp/full.json" <<'J'
{"name": "t", "base": {"model": "cubic", "workers": 4, "batch_size": 2, "lr": 0.02, "steps": 60, "eval_every": 20},
 "sweep": {"algorithm": ["sync_sgd", "adasum"], "workers": [3, 4]}}
J
cat > "$tmp/part.json" <<'J'
{"name": "t", "base": {"model": "cubic", "workers": 4, "batch_size": 2, "lr": 0.02, "steps": 60, "eval_every": 20},
 "sweep": {"algorithm": ["sync_sgd"], "workers": [3, 4]}}
J

# 1. rank invariance: -n 1 and -n 2 give the same curves (1e-6 relative)
"$WB" run "$tmp/full.json" -o "$tmp/n1.h5" --quiet || bad "run -n 1"
mpirun -n 2 "$WB" run "$tmp/full.json" -o "$tmp/n2.h5" --quiet || bad "run -n 2"
if $PY - "$tmp/n1.h5" "$tmp/n2.h5" <<'P'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert sorted(a["runs"]) == sorted(b["runs"]) and len(a["runs"]) == 4, (list(a["runs"]), list(b["runs"]))
assert int(b.attrs["mpi_ranks"]) == 2 and int(a.attrs["mpi_ranks"]) == 1
assert a.attrs["devices"] == "cpu" and b.attrs["devices"] == "cpu", a.attrs["devices"]
for rid in a["runs"]:
    for k in ("train_loss", "test_loss", "lr", "samples", "epoch"):
        x, y = a["runs"][rid]["curves"][k][()], b["runs"][rid]["curves"][k][()]
        m = ~np.isnan(x)
        assert (m == ~np.isnan(y)).all(), (rid, k)
        assert np.allclose(x[m], y[m], rtol=1e-6, atol=0), (rid, k, x[m], y[m])
print("curves equal for", len(a["runs"]), "runs")
P
then ok "rank invariance -n 1 vs -n 2"; else bad "rank invariance -n 1 vs -n 2"; fi

# 2. HDF5 contract: root attrs, run attrs, curve lengths, summary rows
if $PY - "$tmp/n2.h5" <<'P'
import sys, json, h5py
f = h5py.File(sys.argv[1])
for k in ("workbench_version", "git_commit", "experiment_json", "created_utc", "mpi_ranks", "host"):
    assert k in f.attrs, k
json.loads(f.attrs["experiment_json"])
for rid, g in f["runs"].items():
    for k in ("config_json", "status", "error", "wall_s", "sim_s"):
        assert k in g.attrs, (rid, k)
    cfg = json.loads(g.attrs["config_json"])
    assert cfg["model"]["name"] == "cubic" and "x_max" in cfg["model"], cfg
    c = g["curves"]
    n = len(c["step"])
    for k in ("step", "epoch", "samples", "wall_s", "sim_s", "lr", "train_loss", "test_loss"):
        assert len(c[k]) == n, (rid, k)
    assert c["step"][-1] == 60
    assert g.attrs["status"] == "completed"
s = f["summary"][()]
assert len(s) == 4 and list(s["index"]) == [0, 1, 2, 3], s["index"]
assert {x.decode() for x in s["id"]} == set(f["runs"])
print("layout ok")
P
then ok "HDF5 layout"; else bad "HDF5 layout"; fi

# 2b. the file names the commit the binary was built from (taken at every build, "-dirty"
#     when tracked files differed), not the one the build tree was configured at
if git -C "$2" rev-parse HEAD > /dev/null 2>&1; then
  want=$(git -C "$2" rev-parse --short=12 HEAD)
  [[ -n "$(git -C "$2" status --porcelain --untracked-files=no)" ]] && want="$want-dirty"
  got=$($PY -c "import h5py; print(h5py.File('$tmp/n2.h5').attrs['git_commit'])")
  ver=$("$WB" --version | head -1)
  if [[ "$got" == "$want" && "$ver" == *"(git $want)"* ]]; then ok "git_commit is the build's ($want)"
  else bad "git_commit: file $got, --version '$ver', tree $want (rebuild after a commit?)"; fi
fi

# 3. --resume runs only what is missing; completed runs are kept as they were
"$WB" run "$tmp/part.json" -o "$tmp/r.h5" --quiet || bad "partial run"
before=$($PY -c "import h5py,sys; f=h5py.File('$tmp/r.h5'); print(f['runs']['algorithm=sync_sgd,workers=3'].attrs['wall_s'])")
"$WB" run "$tmp/full.json" -o "$tmp/r.h5" --resume 2> "$tmp/resume.err" || bad "resume run"
after=$($PY -c "import h5py,sys; f=h5py.File('$tmp/r.h5'); print(len(f['runs']), f['runs']['algorithm=sync_sgd,workers=3'].attrs['wall_s'], len(f['summary']))")
if grep -q "2 of 4 runs already completed" "$tmp/resume.err" && [[ "$after" == "4 $before 4" ]]; then
  ok "resume kept 2 completed runs and added 2"
else bad "resume: $(cat "$tmp/resume.err") / $after (before $before)"; fi
"$WB" run "$tmp/full.json" -o "$tmp/r.h5" --resume 2> "$tmp/resume2.err" || bad "resume noop"
if grep -q "4 of 4 runs already completed" "$tmp/resume2.err"; then ok "resume of a complete file runs nothing"; else bad "resume noop: $(cat "$tmp/resume2.err")"; fi

# 3b. per-run provenance: a --resume at another rank count keeps the file's header (its
#     creator's) but each run says who computed it; runs of a file written before per-run
#     provenance (simulated by deleting the attribute) inherit the header, marked so
"$WB" run "$tmp/part.json" -o "$tmp/p.h5" --quiet || bad "provenance: part -n 1"
cp "$tmp/p.h5" "$tmp/old.h5"
mpirun -n 2 "$WB" run "$tmp/full.json" -o "$tmp/p.h5" --resume --quiet || bad "provenance: resume -n 2"
$PY - "$tmp/old.h5" <<'P' || bad "provenance: strip"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    for g in f["runs"].values():
        del g.attrs["provenance_json"]
P
mpirun -n 2 "$WB" run "$tmp/full.json" -o "$tmp/old.h5" --resume --quiet || bad "provenance: resume old"
if PYTHONPATH="$2/analysis" $PY - "$tmp/p.h5" "$tmp/old.h5" <<'P'
import sys, json, h5py
import psgd_analysis as pa
for path, old_from in ((sys.argv[1], "writer"), (sys.argv[2], "file header")):
    f = h5py.File(path)
    assert int(f.attrs["mpi_ranks"]) == 1, "the header stays the creator's"
    prov = {rid: json.loads(g.attrs["provenance_json"]) for rid, g in f["runs"].items()}
    assert len(prov) == 4, prov
    for rid, p in prov.items():
        first = "sync_sgd" in rid  # part.json's runs, computed at -n 1
        want = (old_from, 1) if first else ("writer", 2)
        assert (p["from"], int(p["mpi_ranks"])) == want, (path, rid, p, want)
        assert p["git_commit"] == f.attrs["git_commit"] and p["devices"] == "cpu", p
        assert ("finished_utc" in p) == (p["from"] == "writer"), p
    res = pa.load(path)
    assert res.ranks_label() == "1 (2 runs), 2 (2 runs)", res.ranks_label()
    assert sorted(res.provenance()["mpi_ranks"]) == [1, 1, 2, 2]
print("per-run provenance ok")
P
then ok "per-run provenance survives --resume at another rank count"; else bad "per-run provenance"; fi

# 4. --force replaces the file; no temporary files are left behind
"$WB" run "$tmp/part.json" -o "$tmp/r.h5" --force --quiet || bad "force"
n=$($PY -c "import h5py; print(len(h5py.File('$tmp/r.h5')['runs']))")
left=$(ls "$tmp" | grep -c '\.tmp' || true)
if [[ "$n" == 2 && "$left" == 0 ]]; then ok "--force replaced the file (2 runs), no temp files"; else bad "force: $n runs, $left temp files"; fi

# 5. rank groups: runs with fewer workers than ranks run side by side on rank groups,
#    gathered into one file, with the same results as -n 1
cat > "$tmp/groups.json" <<'J'
{"name": "g", "base": {"model": "quadratic", "batch_size": 2, "lr": 0.05, "steps": 30, "eval_every": 10},
 "sweep": {"workers": [1, 2, 3], "algorithm": ["sync_sgd", "adasum"]}}
J
"$WB" run "$tmp/groups.json" -o "$tmp/g1.h5" --quiet || bad "groups -n 1"
mpirun -n 2 "$WB" run "$tmp/groups.json" -o "$tmp/g2.h5" 2> "$tmp/g2.err" || bad "groups -n 2"
if grep -q "2 MPI ranks in 2 rank groups" "$tmp/g2.err" && $PY - "$tmp/g1.h5" "$tmp/g2.h5" <<'P'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert sorted(a["runs"]) == sorted(b["runs"]) and len(b["runs"]) == 6, list(b["runs"])
assert list(b["summary"]["index"]) == list(range(6))
for rid in a["runs"]:
    x, y = a["runs"][rid]["curves"]["train_loss"][()], b["runs"][rid]["curves"]["train_loss"][()]
    assert np.allclose(x, y, rtol=1e-6, atol=0), rid
    x, y = a["runs"][rid]["curves"]["test_loss"][()], b["runs"][rid]["curves"]["test_loss"][()]
    assert np.allclose(x[~np.isnan(x)], y[~np.isnan(y)], rtol=1e-6, atol=0), rid
P
then ok "rank groups: 6 runs on 2 groups, same curves as -n 1"; else bad "rank groups: $(cat "$tmp/g2.err")"; fi

# 6. validate and dry-run write nothing
"$WB" validate "$tmp/full.json" > "$tmp/v.out" || bad "validate"
mpirun -n 2 "$WB" run "$tmp/full.json" -o "$tmp/dry.h5" --dry-run > "$tmp/d.out" || bad "dry-run"
if grep -q "ok: 4 runs valid" "$tmp/v.out" && grep -q "dry run" "$tmp/d.out" && [[ ! -e "$tmp/dry.h5" ]]; then
  ok "validate / dry-run write nothing"; else bad "validate/dry-run"; fi

# 7. --dry-run prints each run's memory estimate per rank; --max-memory-gb refuses a run above
#    the budget with that same figure, before anything is written
if grep -q "^memory .*: ~[0-9]* MB per rank (" "$tmp/d.out" && \
   [[ $(grep -v "^memory fold:" "$tmp/d.out" | grep -c "^memory ") -eq 4 ]] && \
   grep -q "^memory fold: ~[0-9]* MB on rank 0" "$tmp/d.out"; then
  ok "dry-run prints the memory estimate of each run"; else bad "dry-run memory: $(cat "$tmp/d.out")"; fi
if ! "$WB" run "$tmp/full.json" -o "$tmp/big.h5" --max-memory-gb 0.001 > /dev/null 2> "$tmp/b.err" && \
   grep -q "MB per rank" "$tmp/b.err" && grep -q "above the budget" "$tmp/b.err" && [[ ! -e "$tmp/big.h5" ]]; then
  ok "--max-memory-gb refuses with the estimate"; else bad "--max-memory-gb: $(cat "$tmp/b.err")"; fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
