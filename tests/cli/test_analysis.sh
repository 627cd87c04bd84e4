#!/usr/bin/env bash
# The analysis package's own tests (DESIGN.md section 11): the statistics on known answers,
# every claim's decision where it must HOLD and where it must NOT, the one table of targets
# against what is generated from it, the C++ defaults read through `workbench list --json`,
# and the how-to's toy target through repro-smoke. ~20 s.
# usage: test_analysis.sh WORKBENCH SOURCE_DIR
set -u
WB=$(realpath "$1"); SRC=$2; PY=/usr/bin/python3
cd "$SRC" || exit 1
fail=0
for t in test_stats test_claims test_catalog test_r3r6 test_lpp_plateau test_adaptive_lr test_local_steps test_guide test_gpt_peer test_report_clock test_latency; do
  $PY -m unittest "tests/analysis/$t.py" 2>&1 | tail -n 3 | sed "s/^/$t: /"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAIL: tests/analysis/$t.py"; fail=1; }
done
# the C++ defaults come from the binary, not from a retyped dict
if $PY - "$WB" <<'P'
import json, subprocess, sys
sys.path.insert(0, "analysis")
from psgd_analysis.adaptive_runs import cpp_defaults
d = json.loads(subprocess.run([sys.argv[1], "list", "--json"], capture_output=True, text=True, check=True).stdout)
assert {"run", "algorithms", "models", "optimizers", "schedules"} <= set(d), d.keys()
a = cpp_defaults("adaptive_sgd", sys.argv[1])
assert "pert_thr" in a and isinstance(a["pert_thr"], float) and "megabatch" in a, a
print("list --json: adaptive_sgd defaults", {k: a[k] for k in ("megabatch", "pert_thr", "delta", "gamma")})
P
then echo "ok: workbench list --json gives the C++ defaults"; else echo "FAIL: workbench list --json"; fail=1; fi
if ! "$WB" list --json --bogus >/dev/null 2>&1; then echo "ok: list --json --bogus refused"; else echo "FAIL: list took a bad argument"; fail=1; fi
$PY tests/analysis/test_howto.py "$WB" 2>&1 | tail -n 12 | sed "s/^/howto: /"
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAIL: tests/analysis/test_howto.py"; fail=1; }
exit $fail
