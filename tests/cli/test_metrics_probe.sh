#!/usr/bin/env bash
# The metrics probe: a sweep of every algorithm family x orthogonality + diversity on the
# quadratic toy. A metric an algorithm cannot feed (it does not expose its workers' fresh
# gradients: Algorithm::observes_gradients) is refused by `validate` and by `run` before
# any run of the sweep trains: exit 2, one error line naming the run and the JSON path,
# nothing written (no results file, no journal). The algorithms that do expose them record
# metrics/ in every run.
#   tests/cli/test_metrics_probe.sh WORKBENCH SOURCE_DIR
set -u
WB=$(readlink -f "$1")
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
cat > probe.json <<'JSON'
{"name": "metrics_probe",
 "base": {"model": "quadratic", "workers": 4, "batch_size": 4, "lr": 0.01, "steps": 6,
          "metrics": {"orthogonality": {"every": 2}, "diversity": {"every": 2}}},
 "sweep": {"algorithm": ["elastic_sgd", "adaptive_sgd", "sync_sgd", "lap_sgd", "local_sgd"]}}
JSON
"$WB" validate probe.json > v.out 2> v.err; rc=$?
check "validate exits 2 (got $rc)" '[[ $rc == 2 ]]'
check "validate: one error line naming the run and the JSON path" \
  '[[ $(grep -c "workbench: error" v.err) == 1 ]] && grep -q "probe.json: \$.base.metrics.diversity (run algorithm=elastic_sgd): elastic_sgd does not support metrics" v.err'
"$WB" run probe.json -o o.h5 > r.out 2> r.err; rc=$?
check "run exits 2 (got $rc)" '[[ $rc == 2 ]]'
check "run: the same line, before any training (no run reported, nothing written)" \
  '[[ $(grep -c "workbench: error" r.err) == 1 ]] && grep -q "(run algorithm=elastic_sgd): elastic_sgd does not support metrics" r.err && ! grep -q "completed" r.err && [[ ! -e o.h5 && ! -e o.h5.journal ]]'
# Every algorithm refused on its own, not only the first of the sweep.
for a in elastic_sgd adaptive_sgd lap_sgd lpp_sgd local_sgd post_local_sgd; do
  sed "s/\"sweep\": {\"algorithm\": \[[^]]*\]}/\"sweep\": {\"algorithm\": [\"$a\"]}/" probe.json > one.json
  "$WB" validate one.json > /dev/null 2> one.err; rc=$?
  check "$a alone: validate exits 2 naming \$.base.metrics (got $rc)" \
    '[[ $rc == 2 ]] && grep -q "\$.base.metrics.diversity (run algorithm=$a): $a does not support metrics" one.err'
done
# The algorithms that expose their gradients: metrics/ in every run.
sed 's/"sweep": {"algorithm": \[[^]]*\]}/"sweep": {"algorithm": ["sync_sgd", "adasum"]}/' probe.json > ok.json
"$WB" run ok.json -o ok.h5 --quiet; rc=$?
check "sync_sgd + adasum complete (got $rc)" '[[ $rc == 0 ]]'
check "metrics/ in every run, rows at steps 0, 2, 4" \
  '$PY -c "import h5py,sys; r=h5py.File(\"ok.h5\")[\"runs\"]; sys.exit(not (len(r) == 2 and all(list(r[k][\"metrics/orthogonality_step\"][()]) == [0, 2, 4] and r[k][\"metrics/diversity\"].shape == (3, 2) for k in r)))"'
exit $fail
