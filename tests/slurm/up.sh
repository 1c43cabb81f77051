#!/usr/bin/env bash
# Brings up a real single-node Slurm cluster (Debian 12: slurmctld, slurmd, slurm-client,
# munge) with two pretend GPUs, for the Slurm executor's tests. Needs root (slurmd does).
# Everything lives in $ABTRACK_SLURM_DIR (default /tmp/abtrack-slurm); clients find it through
# $ABTRACK_SLURM_DIR/env.sh (SLURM_CONF). Fails, saying why, when the cluster cannot start:
# the tests that need it must not pass silently. tests/slurm/down.sh tears it down.
# Pitfalls it handles (Debian 12, Slurm 22.05, no systemd, no cgroups): munged's socket in a
# private folder (there is no /run/munge), the node line from `slurmd -C` (CPUs= alone mismatches
# sockets and cores), pretend GPUs with File= in gres.conf (without it the node drains), a fresh
# state folder each time (a drained node stays drained), and copies of the daemons' pid files
# (they delete them on shutdown, before down.sh needs them).
set -u
D=${ABTRACK_SLURM_DIR:-/tmp/abtrack-slurm}
fail() { echo "slurm bring-up failed: $*" >&2; for f in "$D"/log/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (slurmd runs jobs as their users); CI runs scripts/test.sh as root"
for b in slurmctld slurmd munged sbatch squeue scancel scontrol sinfo; do
  command -v "$b" >/dev/null || fail "$b not found: install slurmctld slurmd slurm-client munge (scripts/deps.sh does)"
done
id munge >/dev/null 2>&1 || fail "no munge user (the munge package creates it)"

# A previous cluster of ours, if any, goes first; then a fresh state every time (a drained node
# stays drained otherwise).
[ -f "$D/env.sh" ] && bash "$(dirname "$0")/down.sh" >/dev/null 2>&1
rm -rf "$D"
mkdir -p "$D"/munge "$D"/state "$D"/spool "$D"/log "$D"/run || fail "cannot create $D"
chmod 755 "$D"

# munged without systemd: its own socket folder, run as the munge user.
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$D/munge"
chmod 700 "$D/munge"; chmod 400 "$D/munge/munge.key"
mkdir -p "$D/munge-run"; chown munge:munge "$D/munge-run"; chmod 755 "$D/munge-run"
SOCK=$D/munge-run/munge.socket
runuser -u munge -- munged --key-file="$D/munge/munge.key" --socket="$SOCK" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" --seed-file="$D/munge/munged.seed" --force \
  || fail "munged did not start ($(tail -n 3 "$D/munge/munged.log" 2>/dev/null))"
cp "$D/munge/munged.pid" "$D/run/munged.pid" 2>/dev/null

HOST=$(hostname -s)
NODE=$(slurmd -C 2>/dev/null | head -n 1 | sed "s/^NodeName=[^ ]*/NodeName=$HOST/")
[ -n "$NODE" ] || fail "slurmd -C printed nothing"
PORT_BASE=${ABTRACK_SLURM_PORT:-16817}
cat >"$D/slurm.conf" <<CONF
ClusterName=abtrack
SlurmctldHost=$HOST
SlurmctldPort=$PORT_BASE
SlurmdPort=$((PORT_BASE + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MinJobAge=3600
KillWait=2
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
GresTypes=gpu
$NODE Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=$HOST Name=gpu File=/dev/null,/dev/zero" >"$D/gres.conf"
echo "export SLURM_CONF=$D/slurm.conf" >"$D/env.sh"
export SLURM_CONF=$D/slurm.conf

slurmctld -i || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
# Daemons remove their pid files on shutdown: keep copies for down.sh.
for i in $(seq 1 100); do
  [ -f "$D/run/slurmctld.pid" ] && [ -f "$D/run/slurmd.pid" ] && break; sleep 0.1
done
cp "$D/run/slurmctld.pid" "$D/slurmctld.pid" 2>/dev/null; cp "$D/run/slurmd.pid" "$D/slurmd.pid" 2>/dev/null
for i in $(seq 1 150); do
  state=$(sinfo -h -o %T 2>/dev/null | head -n 1)
  [ "$state" = idle ] && { echo "slurm up: node $HOST idle, SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
fail "the node did not become idle within 30 s (state '${state:-none}')"
