#!/usr/bin/env bash
# The probe suite: a table of hostile-but-realistic invocations, one row each,
# so that the next defect found is one more row. Tables: tests/cli/probes/*.tsv.
#
# Row format (tab-separated; '#' lines and blank lines are skipped):
#   name <TAB> rc <TAB> stderr fragment <TAB> check <TAB> command <TAB> spec
# - command: bash, run in a fresh directory $TMP with $WB (the workbench), $SPEC (the
#   spec column written to $TMP/s.json, or unset when the spec column is "-"), $OUT
#   ($TMP/o.h5), $PY (/usr/bin/python3), $MPIRUN, and $TMP/old.json (a 3-run spec for rows
#   that need an earlier results file). Its last exit code is compared with rc.
#   Every command runs under a 120 s timeout: a hang fails the row (rc 124).
# - stderr fragment: must occur in the command's stderr ("-": no check). For rc 2 the
#   workbench must also print exactly one "workbench: error" line.
# - check: a bash condition evaluated after the command ("-": none), e.g. [[ ! -e $OUT ]]
#   for "nothing written"; it also runs in $TMP with the same variables.
# usage: test_probes.sh WORKBENCH SOURCE_DIR [NAME_FILTER]
set -u
WB=$(readlink -f "$1"); SRC=$2; FILTER=${3:-}
PY=/usr/bin/python3
MPIRUN=$(command -v mpirun.mpich || command -v mpirun)
export WB PY MPIRUN
SRC=$(readlink -f "$SRC"); export SRC
# kill_at_rss SIGNAL MIB PID: wait until the processes running on $OUT (the workbench, its
# ranks, mpirun) hold >= MIB MiB resident together, i.e. the phase under test (worker or
# updater setup, whose memory grows as it goes) is under way, then send SIGNAL to PID.
# A fixed sleep raced a fast machine: the setup could finish before the signal came.
kill_at_rss() {
  local sig=$1 mib=$2 pid=$3 kb p r
  for _ in $(seq 1 6000); do
    kb=0
    for p in $(pgrep -f -- "$OUT"); do
      r=$(awk '/^VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null); kb=$((kb + ${r:-0}))
    done
    (( kb >= mib * 1024 )) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill "-$sig" "$pid"
}
export -f kill_at_rss
root=$(mktemp -d)
trap 'chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"' EXIT
pass=0; fail=0; n=0
for table in "$SRC"/tests/cli/probes/*.tsv; do
  while IFS=$'\t' read -r name rc frag check cmd spec || [[ -n "$name" ]]; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ -n "$FILTER" && "$name" != *"$FILTER"* ]] && continue
    n=$((n+1))
    TMP="$root/$n-$name"; mkdir -p "$TMP"
    OUT="$TMP/o.h5"
    unset SPEC
    if [[ "$spec" != "-" && -n "$spec" ]]; then printf '%s\n' "$spec" > "$TMP/s.json"; SPEC="$TMP/s.json"; fi
    # A small finished sweep for rows that need an earlier results file (3 runs, lr=0.01..).
    printf '%s\n' '{"name":"t","base":{"steps":3},"sweep":{"lr":[0.01,0.02,0.03]}}' > "$TMP/old.json"
    export TMP OUT SPEC
    # stdin from /dev/null: mpirun forwards its stdin to rank 0 and would eat the table.
    (cd "$TMP" && timeout -k 5 120 bash -c "$cmd") < /dev/null > "$TMP/.stdout" 2> "$TMP/.stderr"
    got=$?
    err=$(cat "$TMP/.stderr")
    why=""
    if [[ "$got" != "$rc" ]]; then why="exit $got, want $rc"
    elif [[ "$frag" != "-" && "$err" != *"$frag"* ]]; then why="stderr lacks '$frag'"
    elif [[ "$rc" == 2 && $(grep -c 'workbench: error' "$TMP/.stderr") -ne 1 ]]; then why="want exactly one error line"
    elif [[ "$check" != "-" ]] && ! (cd "$TMP" && bash -c "$check"); then why="check failed: $check"
    fi
    short=$(grep 'workbench: error' "$TMP/.stderr" | head -1); [[ -z "$short" ]] && short=$(tail -1 "$TMP/.stderr")
    if [[ -z "$why" ]]; then
      echo "ok   $name (rc $got): $short"; pass=$((pass+1))
    else
      echo "FAIL $name: $why"; echo "     stderr: $(head -c 2000 "$TMP/.stderr")"; fail=$((fail+1))
    fi
  done < "$table"
done
echo "$pass passed, $fail failed ($n probes)"
[[ $fail -eq 0 && $n -gt 0 ]]
