#!/usr/bin/env bash
# Rename/replace torture: while a 10-run sweep runs, at a random instant, one of its
# companion files or its directory is removed, renamed or replaced by another sweep's:
#   rm_journal       the journal is removed
#   mv_journal       the journal is renamed away
#   swap_journal     another sweep's journal (other lr, same run ids) is renamed over it
#   swap_dir         the output directory is renamed and an empty one made in its place
#   symlink_dir      the output directory is renamed and a link to an empty one put there
#   rm_lock          the lock file is removed
# The sweep reads back what it appended through its own descriptors, in the directory it
# opened: it must exit 0, its results file (in the directory it opened, wherever that now
# is) must hold exactly the 10 runs of its spec, each with its own config (lr, and the seed
# its id names: nothing lost, nothing from the other sweep, nothing mislabelled), and the
# count it prints must be the count in the file. Another sweep's journal is never removed.
# Prints the number of trials and failures.
# usage: test_torture_rename.sh WORKBENCH SOURCE_DIR [SEED] [TRIALS]
set -u
WB=$(readlink -f "$1")
PY=/usr/bin/python3
SEED=${3:-$(date +%s)}
TRIALS=${4:-12}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "rename torture seed $SEED, $TRIALS trials (rerun: test_torture_rename.sh WB SRC $SEED $TRIALS)"
RANDOM=$SEED
spec() {  # spec LR: ~0.1-0.2 s per run (the cubic toy, 4 workers, 15000 steps)
  printf '{"name":"t","base":{"model":"cubic","workers":4,"batch_size":64,"lr":%s,"steps":15000,"log_every":1500},"sweep":{"seed":[1,2,3,4,5,6,7,8,9,10]}}\n' "$1"
}
spec 0.01 > "$tmp/s.json"
spec 0.02 > "$tmp/x.json"
# Another sweep's journal (same run ids, lr 0.02): its process killed after 3 runs.
mkdir "$tmp/other"
"$WB" run "$tmp/x.json" -o "$tmp/other/x.h5" --quiet & q=$!
for _ in $(seq 1 1500); do
  [[ -e $tmp/other/x.h5.journal ]] &&
    [[ $($PY -c "print(open('$tmp/other/x.h5.journal','rb').read().count(b'WBR1'))") -ge 4 ]] && break
  sleep 0.02
done
kill -9 $q; wait $q 2>/dev/null
[[ -s $tmp/other/x.h5.journal ]] || { echo "FAIL: no journal of another sweep to swap in"; exit 1; }
actions=(rm_journal mv_journal swap_journal swap_dir symlink_dir rm_lock)
trials=0; failures=0
for t in $(seq 1 "$TRIALS"); do
  a=${actions[$((RANDOM % ${#actions[@]}))]}
  delay=$(printf '0.%03d' $((RANDOM % 1000)))  # 0 to 1 s: before, during and after the runs
  d="$tmp/t$t"; mkdir -p "$d/out"
  "$WB" run "$tmp/s.json" -o "$d/out/o.h5" > "$d/stdout" 2> "$d/stderr" & p=$!
  # Mid-run: from the sweep's start (its journal created) on.
  for _ in $(seq 1 1000); do [[ -e $d/out/o.h5.journal ]] || ! kill -0 $p 2>/dev/null && break; sleep 0.005; done
  sleep "$delay"
  case $a in
    rm_journal) rm -f "$d/out/o.h5.journal" ;;
    mv_journal) mv "$d/out/o.h5.journal" "$d/moved.journal" 2>/dev/null ;;
    swap_journal) cp "$tmp/other/x.h5.journal" "$d/x.journal" && mv "$d/x.journal" "$d/out/o.h5.journal" ;;
    swap_dir) mv "$d/out" "$d/out.moved" && mkdir "$d/out" ;;
    symlink_dir) mv "$d/out" "$d/out.moved" && mkdir "$d/empty" && ln -s "$d/empty" "$d/out" ;;
    rm_lock) rm -f "$d/out/o.h5.lock" ;;
  esac
  wait $p; rc=$?
  trials=$((trials + 1))
  # Where the results are: the directory the sweep opened (moved, for the dir actions).
  res="$d/out/o.h5"; [[ $a == swap_dir || $a == symlink_dir ]] && res="$d/out.moved/o.h5"
  why=""
  if [[ $rc -ne 0 ]]; then why="exit $rc: $(tail -1 "$d/stderr")"
  elif ! msg=$($PY - "$res" 2>/dev/null <<'P'
import h5py, json, sys
r = h5py.File(sys.argv[1], "r")["runs"]
bad = [k for k in r if json.loads(r[k].attrs["config_json"])["lr"] != 0.01
       or "seed=%d" % json.loads(r[k].attrs["config_json"])["seed"] not in k]
if len(r) != 10 or bad:
    print(f"{len(r)} runs, wrong config: {bad}")
    sys.exit(1)
P
  ); then why="$res: ${msg:-unreadable}"
  elif ! grep -q "(10 runs)" "$d/stderr"; then why="printed: $(grep wrote "$d/stderr")"
  elif [[ $a == swap_dir || $a == symlink_dir ]] && [[ -e $d/out/o.h5 ]]; then why="a file in the new directory"
  elif [[ $a == swap_journal ]] && ! cmp -s "$tmp/other/x.h5.journal" "$d/out/o.h5.journal"; then
    why="the other sweep's journal was changed or removed"
  fi
  if [[ -n $why ]]; then
    failures=$((failures + 1)); echo "FAIL trial $t ($a at ${delay}s): $why"
  else
    echo "ok   trial $t ($a at ${delay}s)"
  fi
done
echo "rename torture: $trials trials, $failures failures"
[[ $failures -eq 0 && $trials -gt 0 ]]
