#!/usr/bin/env bash
# The Slurm executor end to end on the real single-node cluster of tests/slurm/up.sh (a ctest
# fixture): run, run --detach + two concurrent collects, cancel, a failing job, a timed-out
# job. Fails (never skips) when the cluster is not there.
. "$(dirname "$0")/../e2e/lib.sh"
D=${ABTRACK_SLURM_DIR:-/tmp/abtrack-slurm}
[ -f "$D/env.sh" ] || die "no Slurm cluster at $D: tests/slurm/up.sh did not bring it up (see its output)"
. "$D/env.sh"
sinfo -h -o %T | grep -q idle || die "the Slurm node is not idle: $(sinfo -h -o '%T %E' 2>&1)"
# The tasks exec the binary; a copy keeps them off a build that is being relinked.
cp "$ABTRACK" "$WORK/abtrack" && ABTRACK=$WORK/abtrack

# rec X: the record of cell x=X (tasks finish in any order; they are committed in plan order).
rec() { grep -l "\"x\": $1\b" runs/sl/*.json | head -n 1; }

plan() {  # plan COMMAND [EXTRA YAML]
  cat >abtrack.yaml <<YAML
experiment: sl
doc: AB.md
axes: {x: [1, 2, 3]}
baseline: {x: 1}
command: $1
metrics: {t: {json: t, better: lower}}
gates: [t < 25]
timeout: ${TIMEOUT:-20}
executor: slurm
slurm: {gres: 'gpu:1', max_parallel: 2, time: 2}
${2:-}
YAML
  git_commit_all plan
  expect_rc 0 ab init
}

step "run: a job array, one commit per task, placement recorded; a failing task is an invalid run"
new_repo run
plan "'echo \"{\\\"t\\\": \"{x}\"0}\"; test {x} != 3 || exit 3'"
expect_rc 1 ab run
expect_contains "$OUT" "submitted slurm job"
expect_contains "$OUT" "run 1 x=1: pass"
expect_contains "$OUT" "run 3 x=3: invalid  — command exited with status 3"
expect_eq "$(commit_count)" 5
R=$(rec 2)
expect_eq "$(json "$R" 'd["placement"]["executor"]')" slurm
expect_eq "$(json "$R" 'd["placement"]["array_index"]')" 1
expect_match "$(json "$R" 'd["placement"]["gpu"]')" '^[01]$'
expect_eq "$(json "$R" 'd["placement"]["node"]')" "$(hostname -s)"
expect_eq "$(json "$R" 'd["metrics"]["t"]["samples"]')" "[20.0]"
expect_eq "$(json "$R" 'd["comparison"] is not None')" true
expect_records_valid runs/sl/*.json
expect_rc 0 ab verify
expect_clean
expect_rc 1 ab run
expect_contains "$OUT" "run 4 x=3: invalid" "run submits the cell whose latest run is invalid again"
expect_eq "$(commit_count)" 6
expect_rc 2 ab run --all --rounds 2
expect_contains "$ERR" "abtrack: error: rounds are for the local executor"
expect_eq "$(commit_count)" 6 "a refused --rounds submits nothing"

step "a task that finishes early waits for the tasks before it: commits in plan order"
new_repo order
plan "'if [ {x} = 1 ]; then sleep 1; fi; echo \"{\\\"t\\\": \"{x}\"0}\"'"
expect_rc 1 ab run  # x=3 fails its gate (t = 30)
expect_eq "$(git log --reverse --format=%s | sed -n 's/^abtrack(sl): run \([0-9]*\) \(x=[0-9]\).*/\1 \2/p' | tr '\n' ' ')" \
  "1 x=1 2 x=2 3 x=3 " "run numbers follow the plan, not the finishing order"
expect_eq "$(json "$(rec 2)" 'd["comparison"] is not None')" true "x=2 is compared with the baseline x=1"

step "run --detach returns the job id; two collects at once commit each run exactly once"
new_repo detach
plan "'sleep 1; echo \"{\\\"t\\\": \"{x}\"}\"'"
expect_rc 0 ab run --detach
expect_match "$OUT" '^submitted slurm job [0-9]+ \(3 cells\)'
expect_eq "$(commit_count)" 2
expect_rc 0 ab run   # the cells are out already: nothing is submitted twice
expect_contains "$ERR" "already submitted"
sleep 2
ab collect --wait >"$WORK/c1.out" 2>&1 &
p1=$!
ab collect --wait >"$WORK/c2.out" 2>&1 &
p2=$!
wait $p1; rc1=$?
wait $p2; rc2=$?
expect_eq "$rc1/$rc2" "0/0"
expect_eq "$(commit_count)" 5
expect_eq "$(git ls-tree --name-only HEAD runs/sl/ | wc -l)" 3
expect_eq "$(cat "$WORK/c1.out" "$WORK/c2.out" | grep -c '^run ')" 3
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | grep -c .)" 3
expect_rc 0 ab collect
expect_contains "$ERR" "nothing to collect"
expect_eq "$(commit_count)" 5
expect_rc 0 ab verify
expect_fsck

step "a command past the plan's timeout is an invalid run, as locally"
new_repo timeout
TIMEOUT=2 plan "'if [ {x} = 2 ]; then sleep 30; fi; echo \"{\\\"t\\\": \"{x}\"}\"'"
expect_rc 1 ab run
expect_match "$OUT" "run [0-9] x=2: invalid  — command timed out after 2 s"
expect_eq "$(json "$(rec 2)" 'd["invocations"][0]["timed_out"]')" true

# ab run --detach, then wait (5 s at most) until a task of its job runs; sets $job.
detach_until_running() {
  expect_rc 0 ab run --detach
  job=$(sed -n 's/^submitted slurm job \([0-9]*\).*/\1/p' "$OUT")
  for i in $(seq 1 50); do squeue -h -j "$job" -t running | grep -q . && break; sleep 0.1; done
}

step "cancel: scancel, and the cancelled tasks become invalid runs with the reason"
new_repo cancel
plan "'sleep 60; echo \"{\\\"t\\\": 1}\"'"
detach_until_running
expect_rc 0 ab cancel
expect_contains "$ERR" "cancelled slurm job $job"
# the marker that makes collects wait for the tasks' final states, left before scancel
expect_eq "$(grep -lx "$job" .git/abtrack/slurm/*/cancel-requested | wc -l)" 1
expect_eq "$(git ls-tree --name-only HEAD runs/sl/ | wc -l)" 3
expect_contains "$(git log -1 --format=%B)" "Abtrack-Outcome: invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" "slurm task ${job}_0 was cancelled \\(CANCELLED"
expect_match "$(json "$(rec 3)" 'd["reason"]')" "slurm task ${job}_2 was cancelled \\(CANCELLED"
expect_rc 0 ab collect
expect_eq "$(commit_count)" 5

step "cancel: a command that prints its metrics as it is cancelled is still a cancelled run"
# scancel signals the task's processes one by one; this command answers its SIGTERM with a
# clean result (as `sleep 60; echo` does when only its sleep is hit first).
new_repo cancel_clean
# Each running task leaves ready.X once its trap is set (max_parallel 2: x=1 and x=2 run).
plan "'trap ''echo \"{\\\"t\\\": 1}\"; exit 0'' TERM; touch $WORK/ready.{x}; sleep 60 & wait'"
detach_until_running
for i in $(seq 1 100); do [ "$(ls "$WORK"/ready.* 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
expect_eq "$(ls "$WORK"/ready.* | wc -l)" 2 "two tasks run with their trap set"
expect_rc 0 ab cancel
expect_eq "$(git ls-tree --name-only HEAD runs/sl/ | wc -l)" 3
expect_eq "$(git log --format='%(trailers:key=Abtrack-Outcome,valueonly)' | grep -c invalid)" 3
for x in 1 2 3; do
  expect_match "$(json "$(rec $x)" 'd["reason"]')" "slurm task ${job}_$((x - 1)) was cancelled \\(CANCELLED"
done

step "Ctrl-C on an attached run cancels the job array and exits 130"
new_repo interrupt
plan "'sleep 60; echo \"{\\\"t\\\": 1}\"'"
set -m   # job control: the background abtrack gets SIGINT like from a terminal
"$ABTRACK" run </dev/null >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
set +m
for i in $(seq 1 50); do grep -q submitted "$WORK/int.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid; rc=$?
expect_eq "$rc" 130
expect_contains "$WORK/int.err" "cancelling slurm job"
job=$(sed -n 's/^submitted slurm job \([0-9]*\).*/\1/p' "$WORK/int.out")
expect_eq "$(squeue -h -j "$job" -t pending,running | wc -l)" 0

done_testing
