#!/usr/bin/env bash
# Interruption and crash safety (issue #11):
#  1. SIGINT finishes the current HDF5 write, records the run as "interrupted", exits 130;
#     --resume then completes the sweep without recomputing completed runs.
#  2. kill -9 at random moments: the results file always opens cleanly and holds only
#     complete runs; --resume after each kill eventually completes every run.
# usage: test_interrupt.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }

# ~0.3-0.6 s per run on this machine: the cubic toy, many steps.
cat > "$tmp/sweep.json" <<'J'
{"name": "k", "base": {"model": "cubic", "workers": 4, "batch_size": 64, "lr": 0.01, "steps": 150000, "log_every": 5000},
 "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8]}}
J

# 1. SIGINT
"$WB" run "$tmp/sweep.json" -o "$tmp/int.h5" 2> "$tmp/int.err" &
pid=$!
sleep 1.2
kill -INT $pid
wait $pid; rc=$?
status=$($PY - "$tmp/int.h5" <<'P'
import sys, h5py
f = h5py.File(sys.argv[1])
st = [f["runs"][r].attrs["status"] for r in f["runs"]]
print(st.count("completed"), st.count("interrupted"), len(st))
P
)
read -r ncomp nint ntot <<< "$status"
if [[ $rc -eq 130 && $nint -eq 1 && $ncomp -ge 1 && $ntot -eq $((ncomp + 1)) ]] && grep -q "continue with --resume" "$tmp/int.err"; then
  ok "SIGINT: exit 130, $ncomp completed + 1 interrupted run recorded"
else bad "SIGINT: rc=$rc status=$status $(tail -2 "$tmp/int.err")"; fi
"$WB" run "$tmp/sweep.json" -o "$tmp/int.h5" --resume 2> "$tmp/res.err"; rc=$?
if [[ $rc -eq 0 ]] && grep -q "$ncomp of 8 runs already completed" "$tmp/res.err" && \
   [[ $($PY -c "import h5py; f=h5py.File('$tmp/int.h5'); print(sum(f['runs'][r].attrs['status']=='completed' for r in f['runs']))") == 8 ]]; then
  ok "--resume after SIGINT completed the sweep, skipping $ncomp runs"
else bad "resume after SIGINT: rc=$rc $(cat "$tmp/res.err")"; fi

# 2. kill -9 at random points. The delays (0.0-1.9 s) span process start, runs in
# progress and the recorder's writes (the first finished run is written at once, later
# ones every 2 s); each restart resumes the file, and once the sweep is complete the next
# start replaces it (--force), so all 40 kills land on a live sweep. The check must see
# the file after most kills (opened), else it would test nothing.
kills=0; opened=0; withdata=0
rm -f "$tmp/k9.h5"
RANDOM=7
for i in $(seq 1 40); do
  mode=--force
  if [[ -e "$tmp/k9.h5" ]] && \
     [[ $($PY -c "import h5py; print(len(h5py.File('$tmp/k9.h5')['runs']))") -lt 8 ]]; then mode=--resume; fi
  "$WB" run "$tmp/sweep.json" -o "$tmp/k9.h5" $mode --quiet 2> /dev/null &
  pid=$!
  sleep "$((RANDOM % 20 / 10)).$((RANDOM % 10))"
  if kill -0 $pid 2> /dev/null; then kill -9 $pid; kills=$((kills+1)); fi
  wait $pid 2> /dev/null
  if [[ -e "$tmp/k9.h5" ]]; then
    if n=$($PY - "$tmp/k9.h5" <<'P'
import sys, h5py
f = h5py.File(sys.argv[1])
for r in f["runs"]:
    g = f["runs"][r]
    assert g.attrs["status"] == "completed", r
    assert len(g["curves/step"]) > 0
assert len(f["summary"]) == len(f["runs"])
print(len(f["runs"]))
P
); then opened=$((opened+1)); [[ $n -gt 0 ]] && withdata=$((withdata+1)); else bad "file did not open cleanly after kill $kills"; break; fi
  fi
done
"$WB" run "$tmp/sweep.json" -o "$tmp/k9.h5" --resume --quiet; rc=$?
n=$($PY -c "import h5py; f=h5py.File('$tmp/k9.h5'); print(sum(f['runs'][r].attrs['status']=='completed' for r in f['runs']))")
left=$(ls "$tmp" | grep -c '\.tmp' || true)
if [[ $rc -eq 0 && $n -eq 8 && $kills -ge 20 && $withdata -ge 20 && $left -eq 0 ]]; then
  ok "kill -9 at $kills random points (40 restarts): the file opened cleanly every time it existed ($opened times, $withdata with completed runs); resume completed 8/8 runs, no stale temp files"
else bad "kill -9: rc=$rc runs=$n kills=$kills opened=$opened with data=$withdata stale temp files=$left"; fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
