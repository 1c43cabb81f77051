#!/usr/bin/env bash
# Tears down the cluster tests/slurm/up.sh started: scontrol shutdown, then the daemons and
# munged by the pids up.sh kept (never by name), then the folder.
set -u
D=${ABTRACK_SLURM_DIR:-/tmp/abtrack-slurm}
[ -f "$D/env.sh" ] || { echo "no slurm cluster in $D"; exit 0; }
. "$D/env.sh"
pids=()
for f in "$D/slurmctld.pid" "$D/slurmd.pid" "$D/run/munged.pid"; do
  [ -f "$f" ] && pids+=("$(cat "$f")")
done
scontrol shutdown >/dev/null 2>&1
for i in $(seq 1 50); do
  alive=0
  for p in "${pids[@]:0:2}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break; sleep 0.1
done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
sleep 0.2
for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
rm -rf "$D"
echo "slurm down"
