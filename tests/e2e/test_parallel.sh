#!/usr/bin/env bash
# Local parallelism: jobs: N runs cells at once, gpus: gives each its own CUDA_VISIBLE_DEVICES,
# one committer keeps history linear, and a parallel run records what a serial run records
# (timings apart). SIGINT stops every running process group.
. "$(dirname "$0")/lib.sh"

plan() {  # plan EXTRA_YAML
  cat >abtrack.yaml <<YAML
experiment: par
doc: AB.md
axes: {warps: [4, 8], batch: [16, 64]}
baseline: {warps: 4}
command: |
  sleep 0.3; printf '{"t": [%s%s, 1%s], "gpu": "%s"}\\n' {warps} {batch} {batch} "\${CUDA_VISIBLE_DEVICES:-none}"
metrics: {t: {json: t, better: lower}}
gates: [t > 0]
$1
YAML
  git_commit_all plan
  expect_rc "${EXPECT_INIT:-0}" ab init
}

# The records without what differs between two measurements of the same thing.
normalized() {
  "$PY" - "$@" <<'PY'
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    for k in ("measurement", "started", "finished", "code", "env", "plan_sha256"):
        d.pop(k, None)
    for inv in d.get("invocations", []):
        inv.pop("duration_s", None)
    print(json.dumps(d, sort_keys=True))
PY
}

step "serial and jobs: 2 give the same records apart from timings, in one linear history"
new_repo serial
plan ""
expect_rc 0 ab run
normalized runs/par/*.json >"$WORK/serial.json"
new_repo parallel
plan "jobs: 2"
start=$(date +%s.%N)
expect_rc 0 ab run
elapsed=$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo 0)
normalized runs/par/*.json >"$WORK/parallel.json"
expect_file_eq "$WORK/parallel.json" "$WORK/serial.json"
expect_eq "$(git rev-list --count --merges HEAD)" 0
expect_eq "$(commit_count)" 6
expect_eq "$(grep -c '^run ' "$OUT")" 4
expect_rc 0 ab verify
expect_clean
expect_fsck

step "run --jobs overrides the plan; more jobs than GPUs is refused"
new_repo jobsflag
plan "gpus: [0, 1]"
expect_rc 2 ab run --jobs 3
expect_contains "$ERR" "--jobs 3 but gpus lists 2"

step "gpus: each running cell gets its own GPU, recorded in the placement"
expect_rc 0 ab run
for f in runs/par/*.json; do
  g=$(json "$f" 'd["placement"]["gpu"]')
  expect_match "$g" '^[01]$'
  expect_contains "$(json "$f" 'd["invocations"][0]["stdout_tail"]')" "\"gpu\": \"$g\""
done

step "step runs its cell on a GPU of gpus: too"
expect_rc 0 ab step --cell warps=8,batch=16
f=$(ls runs/par/*.json | tail -n 1)
expect_eq "$(json "$f" 'd["placement"]["gpu"]')" 0 "step takes the plan's first GPU"
expect_contains "$(json "$f" 'd["invocations"][0]["stdout_tail"]')" '"gpu": "0"'

step "plan errors for the new keys"
new_repo errors
EXPECT_INIT=2 plan "gpus: [0, 0]
jobs: 0
executor: slurmm"
expect_contains "$ERR" "gpu id '0' is listed twice"
expect_contains "$ERR" "jobs must be a whole number from 1 to 1024, not 0"
expect_contains "$ERR" "executor must be local or slurm, not 'slurmm'"

step "SIGINT stops every running cell's process group; finished runs stay committed"
new_repo interrupt
UNIQ=$RANDOM$RANDOM
cat >abtrack.yaml <<YAML
experiment: par
doc: AB.md
axes: {x: [1, 2, 3]}
command: 'if [ {x} = 1 ]; then echo "{\"t\": 1}"; else sleep 3$UNIQ; fi'
metrics: {t: {json: t}}
jobs: 3
YAML
git_commit_all plan
expect_rc 0 ab init
set -m
"$ABTRACK" run </dev/null >"$OUT" 2>"$ERR" &
pid=$!
set +m
for _ in $(seq 1 50); do [ "$(pgrep -fc "^sleep 3$UNIQ")" = 2 ] && break; sleep 0.1; done
expect_eq "$(pgrep -fc "^sleep 3$UNIQ")" 2
kill -INT "$pid"
wait "$pid"; RC=$?
expect_eq "$RC" 130
sleep 0.3
expect_eq "$(pgrep -fc "^sleep 3$UNIQ")" 0
expect_eq "$(git ls-tree --name-only HEAD runs/par/ | wc -l)" 1
expect_contains "$OUT" "run 1 x=1: pass"

done_testing
