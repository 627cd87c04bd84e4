#!/usr/bin/env bash
# `cmake --install` to a temporary prefix, then, from a directory outside the source tree and
# with only the installed modulefile to find things: the quickstart under mpirun, the
# analysis package's load() on its results and the demo script's table and figure.
# usage: test_install.sh BUILD_DIR MPIEXEC
set -euo pipefail
BUILD=$(realpath "$1"); MPIEXEC=$2
T=$(mktemp -d /tmp/wb-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log"
echo "installed to $P: $(cd "$P" && find . -type f | wc -l) files"
for f in bin/workbench share/psgd-workbench/examples/quickstart.json share/psgd-workbench/calib/h200-cuda.json \
         share/psgd-workbench/demo.py lib/python3/site-packages/psgd_analysis/__init__.py; do
  [[ -e "$P/$f" ]] || { echo "FAIL: $f was not installed"; exit 1; }
done

# The modulefile is what a cluster user loads; read it with environment-modules' modulecmd.
MODULECMD=$(command -v modulecmd || ls /usr/lib/x86_64-linux-gnu/modulecmd.tcl 2>/dev/null || true)
[[ -n "$MODULECMD" ]] || { echo "FAIL: no modulecmd (scripts/install-deps.sh installs environment-modules)"; exit 1; }
modfile=$(ls "$P"/share/modulefiles/psgd-workbench/*)
echo "modulefile: ${modfile#$P/}"
env -i HOME="$HOME" PATH=/usr/bin:/bin MODULEPATH="$P/share/modulefiles" \
  bash -c "eval \"\$($MODULECMD bash load psgd-workbench)\"; env" > "$T/env.txt"
grep -q "^PATH=$P/bin:" "$T/env.txt" || { echo "FAIL: the module does not put $P/bin first on PATH"; cat "$T/env.txt"; exit 1; }
grep -q "^PYTHONPATH=$P/lib/python3/site-packages" "$T/env.txt" || { echo "FAIL: the module does not set PYTHONPATH"; exit 1; }
eval "$($MODULECMD bash use "$P/share/modulefiles")"
eval "$($MODULECMD bash load psgd-workbench)"
[[ "$(command -v workbench)" == "$P/bin/workbench" ]] || { echo "FAIL: workbench on PATH is $(command -v workbench)"; exit 1; }

cd "$T"   # outside the source tree: nothing below can reach the checkout
"$MPIEXEC" -n 2 workbench run "$PSGD_WORKBENCH_ROOT/share/psgd-workbench/examples/quickstart.json" \
  -o q.h5 --quiet
/usr/bin/python3 - "$P" <<'PY'
import sys
import psgd_analysis as pa
prefix = sys.argv[1]
assert pa.__file__.startswith(prefix), f"psgd_analysis imported from {pa.__file__}, not the prefix"
res = pa.load("q.h5")
print(f"psgd_analysis from {pa.__file__[len(prefix):]}: {len(res.runs)} runs, "
      f"statuses {sorted(set(res.runs['status']))}, {len(res.curves)} curve rows")
assert len(res.runs) == 3 and set(res.runs["status"]) == {"completed"}, res.runs
from psgd_analysis import catalog  # its LPP texts read the installed profiles, not the checkout's
assert catalog._profile_path("calib/h200-cuda.json").startswith(prefix), catalog._profile_path("calib/h200-cuda.json")
assert "nan" not in catalog._SIM_CLOCK, catalog._SIM_CLOCK
PY
/usr/bin/python3 "$PSGD_WORKBENCH_ROOT/share/psgd-workbench/demo.py" q.h5 q.png | tail -5
[[ -s q.png ]] || { echo "FAIL: demo.py wrote no figure"; exit 1; }
echo "ok   install: quickstart and psgd_analysis ran from the installed prefix"
