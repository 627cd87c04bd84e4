#!/bin/bash
# The R7/R8 plateau protocol (experiments/lpp/README.md), every stage in order, each
# resumable: run it again after an interruption (the machine stopped, Ctrl-C, kill -9) and it goes on
# from the runs already saved, redoing none.
#
#   scripts/lpp_plateau_run.sh [--epochs E (default 320)] [--jobs 1|2]
#
# 1. the alpha0 selection (experiments/lpp/lpp_plateau_select.json);
# 2. its choice written into every spec (scripts/lpp_plateau_specs.py --alpha0 '<choice>');
# 3. the plateau probe at E and E/2 epochs; stops (exit 5) when E does not reach the plateau by the
#    rule, printing the probe's table (the next step is a person's: double E, or change the model);
# 4. the five main specs (two lanes with --jobs 2: one rank each, separate files), R7's ablation last;
# 5. Table 9 (R13): LARS1024's alpha0 selection (experiments/lpp/lpp_plateau_select_lars.json), its
#    choice written into the specs, then experiments/lpp/lpp_table9_plateau.json and its ablation at the
#    paper's alpha0 (experiments/lpp/lpp_table9_plateau_ablation.json).
# Results go to reports/<spec>.h5 (git-ignored). The specs it writes are git-ignored too: the choice
# they follow from belongs in catalog.LPP_PLATEAU_SPECS (its arguments), from which make writes them.
# Each workbench runs at nice 19 in its own lowered autogroup, so it yields to interactive work.
set -euo pipefail
cd "$(dirname "$0")/.."
E=320
JOBS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) E="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    *) echo "lpp_plateau_run.sh: unknown argument '$1' (usage: [--epochs E] [--jobs 1|2])" >&2; exit 2 ;;
  esac
done
case "$JOBS" in 1|2) ;; *) echo "lpp_plateau_run.sh: --jobs must be 1 or 2, got '$JOBS'" >&2; exit 2 ;; esac
WB=${WB:-build/workbench}
PY=/usr/bin/python3
[ -x "$WB" ] || { echo "lpp_plateau_run.sh: $WB not built (make -f Makefile.experiments build)" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

run_spec() {  # run_spec SPEC: reports/SPEC.h5, resumed when a file or journal is there
  local s=$1 f=reports/$1.h5 mode=()
  if [ -e "$f" ] || [ -e "$f.journal" ]; then mode=(--resume); fi
  log "run $s ${mode[*]}"
  # the subshell lowers its own autogroup (Debian groups by session; nice alone orders only within one)
  ( echo 19 > /proc/self/autogroup 2>/dev/null || true
    exec nice -n 19 "$WB" run "experiments/lpp/$s.json" -o "$f" "${mode[@]}" )  # a line per finished run (no TTY: no step lines)
}

mkdir -p reports
run_spec lpp_plateau_select
# with Table 9's selection when it has run, so that this rewrite keeps LARS1024's choice in its specs
lars=(); [ -e reports/lpp_plateau_select_lars.h5 ] && lars=(../reports/lpp_plateau_select_lars.h5)
choice=$(cd analysis && $PY -m psgd_analysis.lpp_plateau ../reports/lpp_plateau_select.h5 "${lars[@]}" |
         sed -n "s/^choice: --alpha0 '\(.*\)'\$/\1/p")
[ -n "$choice" ] || { echo "lpp_plateau_run.sh: the selection printed no choice" >&2; exit 1; }
log "alpha0 choice: $choice"
half=$($PY -c "print('{:g}'.format($E / 2))")
# The E/2 runs: an earlier probe's file when there is one (a doubled budget), else this probe runs them.
if [ -e "experiments/lpp/lpp_plateau_probe_$half.json" ]; then PROBE_EPOCHS=("$E"); else PROBE_EPOCHS=("$E" "$half"); fi
$PY scripts/lpp_plateau_specs.py --epochs "$E" --probe-epochs "${PROBE_EPOCHS[@]}" --alpha0 "$choice" >/dev/null

run_spec lpp_plateau_probe
# the earlier probe (a frozen spec): a no-op with --resume where its file is complete, its runs on a fresh checkout
if [ ${#PROBE_EPOCHS[@]} = 1 ]; then run_spec "lpp_plateau_probe_$half"; fi
# This probe's file, and the earlier probe's whose runs at E/2 serve the doubling check. Named, not
# globbed: reports/ may hold other probes (the Horovod LeNet-5's lpp_plateau_probe_lenet5_*.h5).
probes=(reports/lpp_plateau_probe.h5)
if [ ${#PROBE_EPOCHS[@]} = 1 ]; then probes+=("reports/lpp_plateau_probe_$half.h5"); fi
verdict=$(cd analysis && $PY -m psgd_analysis.lpp_plateau "${probes[@]/#/../}" --epochs "$E")
if ! grep -q "^plateau: reached at " <<<"$verdict"; then
  echo "$verdict"
  log "the probe does not support $E epochs: the main specs are not run (experiments/lpp/README.md step 4)"
  exit 5
fi
log "the probe supports $E epochs"
# every cell's simulated time on the profile (minutes): the reports' time columns read it
run_spec lpp_plateau_time

# 5. Table 9 (R13): LARS1024's alpha0 on the validation split, written into the specs with every
#    other family's choice (a rewrite that changes no other spec's runs), then its main spec. It needs
#    none of the main specs' runs, so with --jobs 2 it runs in the lane that finishes first.
table9() {
  run_spec lpp_plateau_select_lars || return 1
  local choice
  choice=$(cd analysis && $PY -m psgd_analysis.lpp_plateau ../reports/lpp_plateau_select.h5 ../reports/lpp_plateau_select_lars.h5 |
           sed -n "s/^choice: --alpha0 '\(.*\)'\$/\1/p")
  grep -q '"lars1024"' <<<"$choice" || { echo "lpp_plateau_run.sh: the LARS selection printed no choice" >&2; return 1; }
  log "alpha0 choice with LARS1024: $choice"
  $PY scripts/lpp_plateau_specs.py --epochs "$E" --probe-epochs "${PROBE_EPOCHS[@]}" --alpha0 "$choice" >/dev/null || return 1
  run_spec lpp_table9_plateau || return 1
  # its ablation: the LARS rows at the paper's alpha0 0.1 (the report's "Ablation" section)
  run_spec lpp_table9_plateau_ablation
}

main=(lpp_table1_plateau_dp lpp_table1_plateau_lap lpp_table1_plateau_lpp lpp_frequency_plateau_k lpp_table1_plateau_ablation)
if [ "$JOBS" = 2 ]; then
  # Two lanes of two specs each, not two pairs in turn: with pairs, the lane that finishes its spec
  # first sat idle until the other finished (dp has 20 runs, lap 25).
  # Lane a: dp + lpp + Table 9 + its ablation (20 + 15 + 10 + 10 runs of 320 epochs); lane b: lap + k + R7's
  # ablation (25 + 20 + 15).
  ( run_spec "${main[0]}" && run_spec "${main[2]}" && table9 ) & a=$!
  ( run_spec "${main[1]}" && run_spec "${main[3]}" && run_spec "${main[4]}" ) & b=$!
  ra=0; rb=0; wait $a || ra=$?; wait $b || rb=$?   # both finish (or save) before an exit
  [ $ra = 0 ] && [ $rb = 0 ] || { log "exit codes $ra, $rb: stopping (rerun to resume)"; exit 1; }
else
  for s in "${main[@]}"; do run_spec "$s"; done
  table9
fi

log "all plateau specs complete; next: catalog.LPP_PLATEAU and LPP_TABLE9 = True and the reports (experiments/lpp/README.md)"
