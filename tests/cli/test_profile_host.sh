#!/usr/bin/env bash
# A cost profile prices one machine: a run priced by a profile measured on another CPU says so
# (a warning before the first run, summary profile_host "other", provenance
# cost_profile.measured_here false); the same CPU says "same" and warns nothing; a profile that
# records no CPU says "unknown"; a run without a profile has profile_host null. The host text
# is the one `workbench --version` prints and `calibrate` writes into a profile's "machine".
#   tests/cli/test_profile_host.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1")
SRC=$(readlink -f "$2")
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
host=$("$WB" --version | sed -n 's/^host //p')
check "--version names the host CPU ($host)" '[[ "$host" == "CPU: "* ]]'
base="$SRC/calib/reference-2core-zen5-2026-11-29b.json"
mk() {  # mk NAME MACHINE: the reference profile with another "machine" text
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["machine"]=sys.argv[3]; json.dump(d, open(sys.argv[2], "w"))' \
    "$base" "$1" "$2"
}
mk other.json "measured by \`workbench calibrate\` at mpirun -n 2; CPU: Imaginary CPU (family 0 model 0), 2 logical CPUs, kernels built for SSE"
mk same.json "measured by \`workbench calibrate\` at mpirun -n 2; $host"
mk none.json "published figures, typed by hand"
for p in other same none ""; do
  name=${p:-noprofile}
  clock='"clock": {"profile": "'"$tmp/$p.json"'"},'
  [[ -z "$p" ]] && clock=""
  cat > "$name.spec.json" <<JSON
{"name": "$name", "base": {"model": "lenet5", "algorithm": "sync_sgd", "workers": 2, "batch_size": 8,
  "lr": 0.01, "steps": 3, "log_every": 1, "eval_every": 0, $clock "seed": 1,
  "metrics": {"train_eval_samples": 0}}}
JSON
  "$WB" run "$name.spec.json" -o "$name.h5" --quiet 2> "$name.err"; rc=$?
  check "$name: the run completes (rc $rc: $(head -c 300 "$name.err"))" '[[ $rc == 0 ]]'
done
read_run() {  # read_run FILE: "profile_host measured_here"
  "$PY" - "$1" <<'PY'
import json, sys, h5py
f = h5py.File(sys.argv[1], "r")
r = f["runs"][list(f["runs"])[0]]
s = json.loads(r.attrs["summary_json"]); p = json.loads(r.attrs["provenance_json"])
cp = p.get("cost_profile")
print(s.get("profile_host"), None if cp is None else cp.get("measured_here"), p.get("cpu") == f.attrs["cpu"])
PY
}
check "another CPU: summary other, provenance measured_here false" '[[ "$(read_run other.h5)" == "other False True" ]]'
check "another CPU: one warning naming the profile and both CPUs" \
  '[[ $(grep -c "other.json was measured on another host (CPU: Imaginary CPU.*this one: CPU: " other.err) == 1 ]]'
check "the same CPU: summary same, measured_here true, no warning" \
  '[[ "$(read_run same.h5)" == "same True True" ]] && ! grep -q "another host" same.err'
check "a profile recording no CPU: unknown, measured_here null" '[[ "$(read_run none.h5)" == "unknown None True" ]]'
check "no profile: profile_host null, no cost_profile" '[[ "$(read_run noprofile.h5)" == "None None True" ]]'
exit $fail
