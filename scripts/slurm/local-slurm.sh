#!/usr/bin/env bash
# A private single-node Slurm on this machine, for `make -f Makefile.experiments slurm-check`
# (scripts/slurm/check.sh): its own munged (own key and socket), slurmctld and slurmd, all
# state, spool and logs under DIR, non-default ports, no systemd, no /etc/slurm changes.
#   local-slurm.sh start DIR    write DIR/slurm.conf, start the three daemons, wait for the node
#   local-slurm.sh stop DIR     stop exactly the daemons started in DIR (their pid files)
#   local-slurm.sh env DIR      print `export SLURM_CONF=DIR/slurm.conf` (client commands)
# Needs root (slurmd launches jobs as their user) and Debian's slurm-wlm and munge.
# Process tracking is proctrack/linuxproc and task/none: no cgroups needed (containers).
set -euo pipefail
cmd=${1:?usage: local-slurm.sh start|stop|env DIR}
D=$(realpath -m "${2:?usage: local-slurm.sh start|stop|env DIR}")
PORT=${SLURM_CHECK_PORT:-16817}

stop_pid() {  # $1 = pid file, $2 = name: TERM, wait up to 10 s, then KILL
  local f=$1 pid
  [[ -s $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    echo "local-slurm: stopped $2 (pid $pid)"
  fi
  rm -f "$f"
}

case $cmd in
env)
  echo "export SLURM_CONF=$D/slurm.conf"
  ;;
stop)
  stop_pid "$D/slurmd.pid" slurmd
  stop_pid "$D/slurmctld.pid" slurmctld
  stop_pid "$D/munged.pid" munged
  ;;
start)
  for b in munged slurmctld slurmd sbatch; do
    command -v "$b" >/dev/null || { echo "local-slurm: $b missing (apt-get install slurm-wlm munge)" >&2; exit 1; }
  done
  [[ $(id -u) == 0 ]] || { echo "local-slurm: must run as root (slurmd)" >&2; exit 1; }
  mkdir -p "$D/state" "$D/spool" "$D/log"
  chmod 755 "$D"
  # munge: a private key and socket, so the machine's own munged (if any) is untouched.
  if [[ ! -s $D/munge.key ]]; then
    head -c 1024 /dev/urandom > "$D/munge.key"
  fi
  chmod 600 "$D/munge.key"
  munged --force --socket="$D/munge.sock" --key-file="$D/munge.key" --pid-file="$D/munged.pid" \
         --log-file="$D/log/munged.log" --seed-file="$D/munged.seed"
  munge -S "$D/munge.sock" -n | unmunge -S "$D/munge.sock" > /dev/null ||
    { echo "local-slurm: munge round trip failed" >&2; cat "$D/log/munged.log" >&2; exit 1; }
  host=$(hostname -s)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat > "$D/slurm.conf" <<CONF
# written by scripts/slurm/local-slurm.sh: a single-node test cluster
ClusterName=wbcheck
SlurmctldHost=$host
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=15
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$D/slurm.conf
  slurmctld -f "$SLURM_CONF" -i
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 60); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [[ $state == idle* ]] && break
    sleep 1
  done
  if [[ $state != idle* ]]; then
    echo "local-slurm: node $host not idle after 60 s (state '$state')" >&2
    tail -20 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 || true
    exit 1
  fi
  echo "local-slurm: munged $(cat "$D/munged.pid"), slurmctld $(cat "$D/slurmctld.pid"), slurmd $(cat "$D/slurmd.pid"); node $host idle; SLURM_CONF=$SLURM_CONF"
  ;;
*) echo "usage: local-slurm.sh start|stop|env DIR" >&2; exit 2 ;;
esac
