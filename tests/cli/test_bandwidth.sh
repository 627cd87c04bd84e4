#!/usr/bin/env bash
# `workbench bandwidth`: the link bandwidth a run needs for a compute utilization, from the
# communication its clock recorded (comm_json), against the closed form of a run with one
# allreduce every H steps on the formula clock (8 workers, one per simulated node):
#   CU = S c / (S c + R (2 ceil(log2 W) alpha + 2 (W-1)/W n / B)),  R = S / H collectives,
# for DiLoCo (H = 50) and sync SGD (H = 1); the summary's bytes_sent_per_worker is R 2 (W-1)/W n;
# -n 1 and -n 2 give the same comm_json; LAP-SGD is listed as not re-priceable; bad input is
# one error line and exit 2.
#   tests/cli/test_bandwidth.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1")
read -r -a MPIRUN_CMD <<< "${MPIRUN:-mpirun}"
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
cat > s.json <<'JSON'
{"name": "bw",
 "base": {"model": "cubic", "workers": 8, "batch_size": 8, "lr": 0.01, "steps": 600,
          "clock": {"node_size": 1, "latency_s": 3e-5, "bandwidth_bytes_per_s": 1e8,
                    "flops_per_s": 1e5}},
 "sweep": {"algorithm": [{"name": "diloco", "sync_every": 50}, "sync_sgd",
                         {"name": "lap_sgd", "updaters": 2, "H": 4}]}}
JSON
"$WB" run s.json -o o.h5 --quiet 2> run.err; rc=$?
check "three runs complete (got $rc)" '[[ $rc == 0 ]]'
"${MPIRUN_CMD[@]}" -n 2 "$WB" run s.json -o o2.h5 --quiet 2> run2.err; rc=$?
check "-n 2: three runs complete (got $rc)" '[[ $rc == 0 ]]'
"$WB" bandwidth o.h5 --cu 0.5,0.9,0.99 --json > bw.json 2> bw.err; rc=$?
check "bandwidth --json exits 0 (got $rc: $(cat bw.err))" '[[ $rc == 0 ]]'
out=$("$PY" - <<'PY'
import json, math, h5py
rows = {r["run"].split("{")[0]: r for r in json.load(open("bw.json"))}
f = h5py.File("o.h5", "r")
ids = {k.split("{")[0]: k for k in f["runs"]}
W, alpha, S = 8, 3e-5, 600
bad = []
for rid, H in (("algorithm=diloco", 50), ("algorithm=sync_sgd", 1)):
    g = f["runs"][ids[rid]]
    s = json.loads(g.attrs["summary_json"])
    comm = json.loads(g.attrs["comm_json"])
    n = comm["calls"][0]["bytes"]
    R = S / H
    c = s["sim_compute_s"]
    if abs(s["bytes_sent_per_worker"] - R * 2 * (W - 1) / W * n) > 1e-9 * s["bytes_sent_per_worker"]:
        bad.append(f"{rid}: bytes_sent_per_worker {s['bytes_sent_per_worker']} != {R * 2 * (W - 1) / W * n}")
    if abs(s["compute_utilization"] - c / s["sim_s"]) > 1e-12:
        bad.append(f"{rid}: compute_utilization")
    for cu, got in rows[rid]["bandwidth_for_cu"].items():
        cu = float(cu)
        slack = c / cu - c - s["sim_wait_s"] - R * 2 * math.ceil(math.log2(W)) * alpha
        want = 2 * (W - 1) / W * n * R / slack if slack > 0 else "unreachable"
        if want == "unreachable" or got == "unreachable":
            if want != got: bad.append(f"{rid} CU {cu}: {got} vs {want}")
        elif abs(got / want - 1) > 1e-9:
            bad.append(f"{rid} CU {cu}: {got} vs closed form {want}")
        else:
            print(f"{rid} CU {cu}: {got:.6g} B/s = closed form {want:.6g}")
lap = rows["algorithm=lap_sgd"]
if "why_not" not in lap or "own event simulation" not in lap["why_not"]:
    bad.append(f"lap_sgd: {lap}")
if json.loads(f["runs"][ids["algorithm=lap_sgd"]].attrs["summary_json"])["bytes_sent_per_worker"] is not None:
    bad.append("lap_sgd: bytes_sent_per_worker is not null")
print("BAD " + "; ".join(bad) if bad else "ALL OK")
PY
)
echo "$out"
check "diloco and sync SGD match the closed form, bytes and CU in the summary" '[[ "$out" == *"ALL OK"* ]]'
same=$("$PY" -c "
import h5py
a, b = h5py.File('o.h5', 'r'), h5py.File('o2.h5', 'r')
print(all(a['runs'][k].attrs['comm_json'] == b['runs'][k].attrs['comm_json'] for k in a['runs']))")
check "-n 1 and -n 2 record the same comm_json" '[[ "$same" == True ]]'
"$WB" bandwidth o.h5 --cu 0.9 > bw.txt 2>&1; rc=$?
check "the table names each run, LAP-SGD not re-priceable (rc $rc)" '[[ $rc == 0 ]] && grep -q "^algorithm=diloco.* diloco .* cross" bw.txt && grep -q "not re-priceable" bw.txt'
one_line() {  # name, expected fragment, command...
  local name=$1 frag=$2; shift 2
  "$@" > /dev/null 2> e.txt; local rc=$?
  check "$name: rc 2, one error line with \"$frag\" (rc $rc: $(head -c 300 e.txt))" \
    '[[ $rc == 2 ]] && [[ $(grep -c "workbench: error" e.txt) == 1 ]] && grep -qF -- "$frag" e.txt'
}
one_line "--cu out of range" "is not a compute utilization in (0, 1)" "$WB" bandwidth o.h5 --cu 0.5,1.5
one_line "--cu not a number" "\"9x\" is not a compute utilization" "$WB" bandwidth o.h5 --cu 9x
one_line "no --cu" "--cu is required" "$WB" bandwidth o.h5
one_line "missing file" "nope.h5: does not exist" "$WB" bandwidth nope.h5 --cu 0.5
echo '{}' > t.json
one_line "not HDF5" "t.json: is not an HDF5 file" "$WB" bandwidth t.json --cu 0.5
one_line "unknown run" "has no run \"x\"" "$WB" bandwidth o.h5 --cu 0.5 --run x
"$PY" -c "import h5py; h5py.File('other.h5', 'w')['a'] = 1"
one_line "an HDF5 file of another program" "other.h5: is not a workbench results file (no workbench_version attribute)" \
  "$WB" bandwidth other.h5 --cu 0.5
check "a reader's error offers no writer's remedy (no -o, no --force)" '! grep -q -- "--force\|another -o" e.txt'

one_line "bad --link" "--link must be cross or intra" "$WB" bandwidth o.h5 --cu 0.5 --link wan
exit $fail
