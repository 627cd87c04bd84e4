#!/usr/bin/env bash
# `workbench run --timeline FILE` (app/results/timeline_writer.h): the trace is Chrome trace-event
# JSON (the schema Perfetto and chrome://tracing read: traceEvents of complete events "X"
# with name, cat, ts, dur, pid, tid, and "M" metadata naming every process and thread), and
# each run's "steps" + "collectives" tracks sum to its sim_s in the results file, whose
# /summary breakdown (sim_compute_s + sim_comm_s + sim_wait_s) sums to sim_s too; with
# heterogeneous speeds a sync step has straggler wait on the fast workers' tracks. The
# quickstart (LeNet-5) is checked as well when Fashion-MNIST is installed.
# usage: test_timeline.sh WORKBENCH SOURCE_DIR
set -u
WB=$1
SRC=$2
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

cat > "$tmp/toy.json" <<'J'
{"name": "timeline-toy", "base": {"model": "quadratic", "workers": 4, "batch_size": 8, "lr": 0.05,
  "steps": 24, "log_every": 4, "seed": 3, "heterogeneity": {"speeds": [1.0, 0.5]}},
 "sweep": {"algorithm": [{"name": "sync_sgd", "combine": "average"}, "adasum",
                         {"name": "local_sgd", "H": 3}]}}
J

check() {  # check NAME TRACE H5 [WANT_WAIT]
  $PY - "$1" "$2" "$3" "${4:-0}" <<'P' || fail=1
import json, sys
import h5py
name, trace, h5, want_wait = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
d = json.load(open(trace))
errs = []
assert isinstance(d.get("traceEvents"), list), "traceEvents is not a list"
named = {}
for e in d["traceEvents"]:
    if e.get("ph") == "M":
        if e["name"] == "thread_name":
            named[(e["pid"], e["tid"])] = e["args"]["name"]
        continue
    if e.get("ph") != "X":
        errs.append(f"event with ph {e.get('ph')!r}")
        continue
    for k, t in (("name", str), ("cat", str), ("ts", (int, float)), ("dur", (int, float)),
                 ("pid", int), ("tid", int)):
        if not isinstance(e.get(k), t):
            errs.append(f"event {e} lacks {k} of type {t}")
    if e["cat"] not in ("compute", "comm", "wait", "average"):
        errs.append(f"unknown cat {e['cat']}")
    if e["ts"] < 0 or e["dur"] < 0:
        errs.append(f"negative time {e}")
    if (e["pid"], e["tid"]) not in named:
        errs.append(f"thread {e['pid']}/{e['tid']} has no thread_name")
with h5py.File(h5, "r") as f:
    summ = {r["id"].decode(): r for r in f["summary"][:]}
runs = d["otherData"]["runs"]
if len(runs) != len(summ):
    errs.append(f"{len(runs)} runs in the trace, {len(summ)} in the results file")
for r in runs:
    s = summ[r["id"]]
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and e["pid"] == r["pid"]]
    run_tracks = sum(e["dur"] for e in ev if e["tid"] in (0, 1)) / 1e6
    comm = sum(e["dur"] for e in ev if e["tid"] == 1) / 1e6
    sim = float(s["sim_s"])
    parts = float(s["sim_compute_s"]) + float(s["sim_comm_s"]) + float(s["sim_wait_s"])
    tol = 1e-9 * max(1.0, sim)
    if abs(run_tracks - sim) > tol:
        errs.append(f"{r['id']}: steps+collectives events sum to {run_tracks!r}, sim_s {sim!r}")
    if abs(parts - sim) > tol:
        errs.append(f"{r['id']}: compute+comm+wait {parts!r} != sim_s {sim!r}")
    if abs(comm - float(s["sim_comm_s"])) > tol:
        errs.append(f"{r['id']}: collectives track {comm!r} != sim_comm_s {float(s['sim_comm_s'])!r}")
    if sim <= 0 or comm <= 0:
        errs.append(f"{r['id']}: no simulated time or no communication")
    if want_wait and r["id"].startswith("algorithm=sync_sgd"):
        w0 = sum(e["dur"] for e in ev if e["tid"] == 2 and e["cat"] == "wait")
        if not w0 > 0 or not float(s["sim_wait_s"]) > 0:
            errs.append(f"{r['id']}: the fast worker 0 never waits for the slow worker 1")
    print(f"  {r['id']}: {len(ev)} events, sim_s {sim:.6g} = compute {float(s['sim_compute_s']):.6g}"
          f" + comm {float(s['sim_comm_s']):.6g} + wait {float(s['sim_wait_s']):.6g}")
for e in errs[:10]:
    print(f"FAIL {name}: {e}")
print(("FAIL " if errs else "ok   ") + name)
sys.exit(1 if errs else 0)
P
}

if "$WB" run "$tmp/toy.json" -o "$tmp/toy.h5" --quiet --timeline "$tmp/toy.trace.json" > "$tmp/out" 2>&1; then
  check "toy sweep (sync SGD, Adasum, local SGD; speeds 1/0.5)" "$tmp/toy.trace.json" "$tmp/toy.h5" 1
  # The breakdown figure reads the same numbers.
  (cd "$SRC/analysis" && $PY -m psgd_analysis.time_breakdown "$tmp/toy.h5" "$tmp/toy.png" > /dev/null) &&
    [[ -s "$tmp/toy.png" ]] && echo "ok   breakdown figure" || { echo "FAIL breakdown figure"; fail=1; }
else
  echo "FAIL toy run: $(cat "$tmp/out")"; fail=1
fi

# An unwritable timeline path is refused before any run: one line, exit 2, no results file.
"$WB" run "$tmp/toy.json" -o "$tmp/bad.h5" --quiet --timeline "$tmp/no/such/dir/t.json" > "$tmp/out" 2> "$tmp/err"
rc=$?
if [[ $rc -eq 2 && $(wc -l < "$tmp/err") -eq 1 && ! -e "$tmp/bad.h5" ]]; then
  echo "ok   bad timeline path: $(cat "$tmp/err")"
else
  echo "FAIL bad timeline path: exit $rc: $(cat "$tmp/err")"; fail=1
fi

# Nothing is written through a link someone put beside the timeline: the probe and the
# write use names of this process only, created O_EXCL | O_NOFOLLOW (a fixed "<file>.tmp"
# opened for writing truncated the link's target).
echo "keep me" > "$tmp/victim"
ln -s "$tmp/victim" "$tmp/l.trace.json.tmp"
if "$WB" run "$tmp/toy.json" -o "$tmp/l.h5" --quiet --timeline "$tmp/l.trace.json" > "$tmp/out" 2>&1 &&
   [[ "$(cat "$tmp/victim")" == "keep me" && -s "$tmp/l.trace.json" && ! -L "$tmp/l.trace.json" ]]; then
  echo "ok   a link beside the timeline is left alone"
else
  echo "FAIL a link beside the timeline: victim now '$(cat "$tmp/victim")': $(cat "$tmp/out")"; fail=1
fi

if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  $PY - "$SRC/examples/quickstart.json" "$tmp/qs.json" <<'P'
import json, sys
s = json.load(open(sys.argv[1])); s["base"]["steps"] = 30; s["base"]["eval_every"] = 15
json.dump(s, open(sys.argv[2], "w"))
P
  if "$WB" run "$tmp/qs.json" -o "$tmp/qs.h5" --quiet --timeline "$tmp/qs.trace.json" > "$tmp/out" 2>&1; then
    check "quickstart (30 steps)" "$tmp/qs.trace.json" "$tmp/qs.h5"
  else
    echo "FAIL quickstart run: $(cat "$tmp/out")"; fail=1
  fi
fi
exit $fail
