#!/usr/bin/env bash
# `workbench calibrate` end to end (runtime/calibrate.cpp), at mpirun -n 2:
#   - refusals: one rank, an unknown --device: exit 2, one line, no profile written;
#   - --quick: a profile with a compute fit for each model and every calibrated op, and every
#     fitted point's residual printed;
#   - --validate on that profile: every configuration row (42: five synchronous algorithms
#     and LAP-SGD U = 1, 2 real vs simulated, x 2 models x 3 batches), each row's error
#     equal to |simulated - measured| / measured of its own printed times; apart, the 10
#     held-out rows (batch sizes 24, 48, 96, 256 and a multistep schedule the fit never
#     measured, x 2 models), each checked alike; and the RESULT line with both.
# The errors themselves depend on the machine and its load: not checked here.
# usage: test_calibrate.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1")
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
if [[ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "FAIL Fashion-MNIST is missing (scripts/install-deps.sh installs it): calibrate times LeNet-5 on it"
  exit 1
fi

mpirun -n 1 "$WB" calibrate --quick -o one.json > out1 2> err1
rc=$?
if [[ $rc -eq 2 && $(wc -l < err1) -eq 1 ]] && grep -q "at least 2 ranks" err1 && [[ ! -e one.json ]]; then
  ok "one rank refused: $(cat err1)"
else bad "one rank: rc $rc: $(cat err1)"; fi

mpirun -n 2 "$WB" calibrate --quick --device nosuch -o dev.json > out2 2> err2
rc=$?
if [[ $rc -eq 2 ]] && grep -q "no such device" err2 && [[ ! -e dev.json ]]; then
  ok "unknown device refused: $(head -n 1 err2)"
else bad "unknown device: rc $rc: $(cat err2)"; fi

start=$(date +%s)
mpirun -n 2 "$WB" calibrate --quick -o p.json > calib.txt 2> calib.err
rc=$?
if [[ $rc -ne 0 ]]; then bad "calibrate --quick: rc $rc: $(tail -n 3 calib.err)"; exit 1; fi
$PY - p.json calib.txt <<'P' && ok "calibrate --quick ($(( $(date +%s) - start )) s): profile and residuals" || fail=1
import json, re, sys
p = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
assert p["format"] == "psgd-workbench cost profile 1", p.get("format")
# the host it was measured on, in the profile and on the output's second line
cpu = p["machine"][p["machine"].index("CPU: "):]
assert re.fullmatch(r"CPU: .+, \d+ logical CPUs, kernels built for (AVX-512|AVX2|AVX|SSE)", cpu), cpu
assert text.splitlines()[1] == cpu, (text.splitlines()[1], cpu)
keys = " ".join(p["compute"])
for m in ("lenet5", "sparse_mlp"):
    assert m in keys, f"no compute fit for {m}: {keys}"
ops = set(p["links"]["intra"])
for op in ("allreduce", "adasum", "adasum_split", "weighted_average", "broadcast"):
    assert op in ops, f"no fit for {op}: {sorted(ops)}"
# the shared model's per-float costs (LAP/LPP real mode's snapshot and atomic write): the
# profile's value is the in-situ measurement of each model's LAP-SGD real-mode run, weighted
# by the model's floats, as printed; the isolated loops are printed and kept beside them; an
# atomic add costs more than a plain load
sm = p["shared_model"]
per = p["fit"]["shared_model"]
assert set(per) == {"lenet5", "sparse_mlp"}, per
for k in ("read_s_per_float", "atomic_add_s_per_float"):
    want = sum(v[k] * v["floats"] for v in per.values()) / sum(v["floats"] for v in per.values())
    assert 0 < sm[k] < 1e-6 and abs(sm[k] - want) <= 1e-12 * want, (k, sm[k], want)
    for v in per.values():
        assert 0 < v["isolated_" + k] < 1e-6, v
assert sm["atomic_add_s_per_float"] > sm["read_s_per_float"], sm
for m, v in per.items():
    assert re.search(rf"^  {m}\s+{v['floats']} floats: in situ read [\d.]+ ns/float, atomic add [\d.]+ ns/float; "
                     rf"isolated [\d.]+, [\d.]+$", text, re.M), m
# every measured point has its residual: "<x> <measured> <fitted> <resid %>" rows
rows = re.findall(r"^\s+(\d+(?:\.\d+)?(?: [KM]?B)?)\s+([\d.]+)\s+([\d.]+)\s+([+-]\d+\.\d)$", text, re.M)
assert len(rows) >= 2 * 2 + 5 * 4, f"only {len(rows)} residual rows"
def rounding_bound(meas, other, ulp):
    # |d/dmeas (other - meas) / meas| = other / meas^2, |d/dother| = 1 / meas: each printed
    # value is off by up to ulp / 2, the printed percentage by 0.05.
    return 100 * 0.5 * ulp * (1 / meas + other / meas**2) * 1.01 + 0.051

for x, meas, fit, res in rows:
    want = (float(fit) - float(meas)) / float(meas) * 100
    ulp = 10.0 ** -len(meas.split(".")[1]) if "." in meas else 1.0  # printed rounding
    assert abs(want - float(res)) <= rounding_bound(float(meas), float(fit), ulp), (x, meas, fit, res, want)
P

start=$(date +%s)
mpirun -n 2 "$WB" calibrate --validate p.json --steps 50 --repeats 2 > val.txt 2> val.err
rc=$?
if [[ $rc -ne 0 ]]; then bad "validate: rc $rc: $(tail -n 3 val.err)"; exit 1; fi
$PY - val.txt <<'P' && ok "validate ($(( $(date +%s) - start )) s): $(tail -n 1 val.txt)" || fail=1
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r"^\| (lenet5|sparse_mlp) \| (\d+) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)% \|$", text, re.M)
assert len(rows) == 42, f"{len(rows)} configuration rows, want 42"
lap = [r for r in rows if r[2].startswith("lap_sgd")]
assert len(lap) == 12, f"{len(lap)} LAP rows, want 12"
for m, b, a, meas, sim, err in rows:
    meas, sim, err = float(meas), float(sim), float(err)
    assert meas > 0 and sim > 0, (m, b, a, meas, sim)
    want = abs(sim - meas) / meas * 100
    bound = 100 * 0.5 * 0.001 * (1 / meas + sim / meas**2) * 1.01 + 0.051  # 3 decimals printed
    assert abs(want - err) <= bound, (m, b, a, meas, sim, err, want)
held = re.findall(r"^\| held-out \| (lenet5|sparse_mlp) \| (\d+) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)% \|$", text, re.M)
assert len(held) == 10, f"{len(held)} held-out rows, want 10 (5 per model)"
assert {int(b) for _, b, *_ in held} == {24, 48, 64, 96, 256}, held
for m, b, a, meas, sim, err in held:
    meas, sim, err = float(meas), float(sim), float(err)
    assert meas > 0 and sim > 0, (m, b, a, meas, sim)
    bound = 100 * 0.5 * 0.001 * (1 / meas + sim / meas**2) * 1.01 + 0.051
    assert abs(abs(sim - meas) / meas * 100 - err) <= bound, (m, b, a, meas, sim, err)
last = text.strip().splitlines()[-1]
assert last.startswith("RESULT validate ") and "configs=42" in last and "repeats=2" in last, last
assert "heldout_configs=10" in last and "heldout_geomean_err=" in last, last
assert "2 repeat(s) taking turns (median)" in text.splitlines()[0], text.splitlines()[0]
# the same host as the profile's: its CPU line, and no warning about another machine
assert text.splitlines()[1].startswith("CPU: "), text.splitlines()[1]
assert "measured on another host" not in text, [l for l in text.splitlines() if "another host" in l]
P
mpirun -n 2 "$WB" calibrate --validate p.json --repeats 0 > /dev/null 2> rep.err
rc=$?
[[ $rc -eq 2 ]] && grep -q -- "--repeats must be in \[1, 100\]" rep.err && ok "--repeats 0 refused (exit 2)" || { bad "--repeats 0: rc $rc: $(cat rep.err)"; fail=1; }
exit $fail
