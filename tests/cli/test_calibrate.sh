#!/usr/bin/env bash
# `workbench calibrate` end to end (app/calibrate/calibrate.cpp), at mpirun -n 2:
#   - refusals: one rank, an unknown --device: exit 2, one line, no profile written;
#   - --quick --model (a small char-level gpt beside the defaults): a profile with a compute fit
#     for each model and every calibrated op, every fitted point's residual printed, and the
#     config each compute entry was measured on (compute_models), which the planner then
#     holds a spec's model to (the same config accepted, another refused naming the spec and
#     $.base.clock.profile);
#   - --validate on that profile, with the same --model: every configuration row (42: five
#     synchronous algorithms and LAP-SGD U = 1, 2 real vs simulated, x 2 models x 3 batches),
#     each row's error equal to |simulated - measured| / measured of its own printed times;
#     apart, the 10 held-out rows (batch sizes 24, 48, 96, 256 and a multistep schedule the
#     fit never measured, x 2 models), each checked alike; apart again, the gpt's 4 rows and
#     2 held-out rows; the RESULT line with the defaults' fields as before, the gpt's after;
#     validate --model of another gpt than the profile's refused before any run.
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

# A small gpt (the DiLoCo specs' model, narrower): seconds of compute runs.
GPT='{"name": "gpt", "layers": 1, "heads": 1, "d_model": 16, "block": 16}'
start=$(date +%s)
mpirun -n 2 "$WB" calibrate --quick --model "$GPT" -o p.json > calib.txt 2> calib.err
rc=$?
if [[ $rc -ne 0 ]]; then bad "calibrate --quick: rc $rc: $(tail -n 3 calib.err)"; exit 1; fi
$PY - p.json calib.txt <<'P' && ok "calibrate --quick --model gpt ($(( $(date +%s) - start )) s): profile, residuals, compute_models" || fail=1
import json, re, sys
p = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
assert p["format"] == "psgd-workbench cost profile 1", p.get("format")
# the host it was measured on, in the profile and on the output's second line
cpu = p["machine"][p["machine"].index("CPU: "):]
assert re.fullmatch(r"CPU: .+, \d+ logical CPUs, kernels built for (AVX-512|AVX2|AVX|SSE)", cpu), cpu
assert text.splitlines()[1] == cpu, (text.splitlines()[1], cpu)
assert set(p["compute"]) == {"lenet5", "sparse_mlp", "gpt"}, sorted(p["compute"])
# the config each compute entry was measured on, resolved (every parameter)
cm = p["compute_models"]
assert set(cm) == {"lenet5", "sparse_mlp", "gpt"}, cm
assert {k: cm["gpt"][k] for k in ("name", "layers", "heads", "d_model", "block")} == \
    {"name": "gpt", "layers": 1, "heads": 1, "d_model": 16, "block": 16}, cm["gpt"]
assert "vocab" in cm["gpt"] and cm["sparse_mlp"]["hidden"] == [128] and cm["lenet5"]["name"] == "lenet5", cm
assert re.search(r"^compute gpt: ", text, re.M), "no compute section for gpt"
ops = set(p["links"]["intra"])
for op in ("allreduce", "adasum", "adasum_split", "weighted_average", "broadcast"):
    assert op in ops, f"no fit for {op}: {sorted(ops)}"
# the shared model's per-float costs (LAP/LPP real mode's snapshot and atomic write): the
# profile's value is the in-situ measurement of each model's LAP-SGD real-mode run, weighted
# by the model's floats, as printed; the isolated loops are printed and kept beside them; an
# atomic add costs more than a plain load
sm = p["shared_model"]
per = p["fit"]["shared_model"]
assert set(per) == {"lenet5", "sparse_mlp", "gpt"}, per
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
assert len(rows) >= 3 * 2 + 5 * 4, f"only {len(rows)} residual rows"
def rounding_bound(meas, other, ulp):
    # |d/dmeas (other - meas) / meas| = other / meas^2, |d/dother| = 1 / meas: each printed
    # value is off by up to ulp / 2, the printed percentage by 0.05.
    return 100 * 0.5 * ulp * (1 / meas + other / meas**2) * 1.01 + 0.051

for x, meas, fit, res in rows:
    want = (float(fit) - float(meas)) / float(meas) * 100
    ulp = 10.0 ** -len(meas.split(".")[1]) if "." in meas else 1.0  # printed rounding
    assert abs(want - float(res)) <= rounding_bound(float(meas), float(fit), ulp), (x, meas, fit, res, want)
P

# The planner holds a spec's model to the profile's compute_models: the gpt measured (its keys
# in another order, a default spelled out) is accepted, a wider one refused in one line
# naming the spec and $.base.clock.profile.
printf '%s\n' '{"name": "g", "base": {"model": {"block": 16, "d_model": 16, "heads": 1, "layers": 1, "name": "gpt", "vocab": 0}, "steps": 3, "clock": {"profile": "p.json"}}}' > same.json
sed 's/"d_model": 16/"d_model": 32/' same.json > wider.json
"$WB" validate same.json > same.out 2> same.err
rc=$?
[[ $rc -eq 0 ]] && ok "a spec of the gpt the profile measured: accepted" || bad "same gpt: rc $rc: $(cat same.err)"
"$WB" validate wider.json > wider.out 2> wider.err
rc=$?
if [[ $rc -eq 2 && $(wc -l < wider.err) -eq 1 ]] &&
   grep -qF "wider.json: \$.base.clock.profile: p.json: \$.compute_models.gpt: measured gpt as" wider.err &&
   grep -qF '(differs in d_model): run workbench calibrate --model' wider.err; then
  ok "a spec of another gpt refused (exit 2): $(cat wider.err)"
else bad "wider gpt: rc $rc: $(cat wider.err)"; fi
mpirun -n 2 "$WB" calibrate --validate p.json --model '{"name": "gpt", "layers": 1, "heads": 1, "d_model": 32, "block": 16}' \
  > valw.txt 2> valw.err
rc=$?
if [[ $rc -eq 2 ]] && grep -qF 'p.json: $.compute_models.gpt: measured gpt as' valw.err &&
   grep -qF "validate the profile's model with --model" valw.err && ! grep -q '^|' valw.txt; then
  ok "validate --model of another gpt refused before any run (exit 2)"
else bad "validate --model wider gpt: rc $rc: $(cat valw.err)"; fi

start=$(date +%s)
mpirun -n 2 "$WB" calibrate --validate p.json --steps 50 --repeats 2 --model "$GPT" > val.txt 2> val.err
rc=$?
if [[ $rc -ne 0 ]]; then bad "validate: rc $rc: $(tail -n 3 val.err)"; exit 1; fi
$PY - val.txt <<'P' && ok "validate --model gpt ($(( $(date +%s) - start )) s): $(tail -n 1 val.txt)" || fail=1
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
# the gpt given with --model: its own rows and held-out rows, checked alike, apart
grows = re.findall(r"^\| gpt \| (\d+) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)% \|$", text, re.M)
assert sorted((int(b), a.strip()) for b, a, *_ in grows) == \
    [(8, "local_sgd H=4"), (8, "sync_sgd average"), (32, "local_sgd H=4"), (32, "sync_sgd average")], grows
gheld = re.findall(r"^\| held-out \| gpt \| (\d+) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)% \|$", text, re.M)
assert sorted((int(b), a.strip()) for b, a, *_ in gheld) == [(24, "sync_sgd average"), (48, "local_sgd H=4")], gheld
for b, a, meas, sim, err in grows + gheld:
    meas, sim, err = float(meas), float(sim), float(err)
    assert meas > 0 and sim > 0, (b, a, meas, sim)
    bound = 100 * 0.5 * 0.001 * (1 / meas + sim / meas**2) * 1.01 + 0.051
    assert abs(abs(sim - meas) / meas * 100 - err) <= bound, (b, a, meas, sim, err)
assert re.search(r"^  gpt: steps per run 50 at batch 8 sync_sgd average, ", text, re.M), "no steps line for gpt"
last = text.strip().splitlines()[-1]
# the defaults' fields as without --model (the same order, ending at repeats), the gpt's after
head, tail = last.split(" repeats=2 ")
assert [f.split("=")[0] for f in head.split()[2:]] == [
    "steps_geomean_err", "steps_max_err", "tau_min", "tau_all", "tau_separated", "tau_separated_group_min",
    "separated_pairs", "coll_geomean_err", "coll_max_err", "configs", "heldout_geomean_err", "heldout_max_err",
    "heldout_configs"], last
assert last.startswith("RESULT validate ") and "configs=42" in last, last
assert "heldout_configs=10" in last and "heldout_geomean_err=" in last, last
assert re.fullmatch(r"models=gpt model_configs=4 model_geomean_err=[\d.]+% model_max_err=[\d.]+% "
                    r"model_heldout_configs=2 model_heldout_geomean_err=[\d.]+% model_heldout_max_err=[\d.]+%", tail), tail
assert re.search(r"^--model gpt: geomean \|sim-real\|/real [\d.]+%, max [\d.]+% \(4 configurations\); held out "
                 r"[\d.]+%, max [\d.]+% \(2\)$", text, re.M), "no --model summary line"
assert "2 repeat(s) taking turns (median)" in text.splitlines()[0], text.splitlines()[0]
# the same host as the profile's: its CPU line, and no warning about another machine
assert text.splitlines()[1].startswith("CPU: "), text.splitlines()[1]
assert "measured on another host" not in text, [l for l in text.splitlines() if "another host" in l]
P
mpirun -n 2 "$WB" calibrate --validate p.json --repeats 0 > /dev/null 2> rep.err
rc=$?
[[ $rc -eq 2 ]] && grep -q -- "--repeats must be in \[1, 100\]" rep.err && ok "--repeats 0 refused (exit 2)" || { bad "--repeats 0: rc $rc: $(cat rep.err)"; fail=1; }
exit $fail
