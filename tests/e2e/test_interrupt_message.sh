#!/usr/bin/env bash
# After Ctrl-C the message says what became of the interrupted cell: "still pending" only for a
# cell without a run; a cell with runs keeps them.
source "$(dirname "$0")/lib.sh"

export E2E_STARTED=$WORK/started
UNIQ=$RANDOM$RANDOM
new_repo
cat >abtrack.yaml <<EOF
experiment: im
doc: AB.md
axes:
  x: [1, 2]
command: 'if [ -e slow ]; then touch "\$E2E_STARTED"; sleep 7$UNIQ; fi; echo "{\"t\": [1]}"'
metrics:
  t: {json: t}
EOF
printf 'slow\n' >.gitignore
git_commit_all "user: plan"
expect_rc 0 ab init
expect_rc 0 ab step --cell x=1

# interrupt ARGS...: runs abtrack ARGS in the background, sends SIGINT once the command runs.
interrupt() {
  rm -f "$E2E_STARTED"
  touch slow
  set -m
  "$ABTRACK" "$@" </dev/null >"$OUT" 2>"$ERR" &
  local pid=$!
  set +m
  for _ in $(seq 1 100); do [ -e "$E2E_STARTED" ] && break; sleep 0.1; done
  kill -INT "$pid"
  wait "$pid"; RC=$?
  rm -f slow
}

step "a cell with runs is not called pending"
interrupt step --cell x=1
expect_eq "$RC" 130
expect_contains "$ERR" "interrupted by SIGINT"
expect_not_contains "$ERR" "still pending" "x=1 has a run: it is not pending"
expect_contains "$ERR" "x=1 keeps its 1 earlier run"

step "a cell without runs is"
interrupt step --cell x=2
expect_eq "$RC" 130
expect_contains "$ERR" "x=2 is still pending"

step "a parallel run names both kinds"
cat >abtrack.yaml <<EOF
experiment: im
doc: AB.md
jobs: 2
axes:
  x: [1, 2]
command: 'if [ -e slow ]; then touch "\$E2E_STARTED"; sleep 7$UNIQ; fi; echo "{\"t\": [1]}"'
metrics:
  t: {json: t}
EOF
git_commit_all "user: jobs"
interrupt run --all
expect_eq "$RC" 130
expect_contains "$ERR" "x=1 keeps its 1 earlier run"
expect_contains "$ERR" "x=2 is still pending"
expect_eq "$(pgrep -fc "sleep 7$UNIQ")" 0 "nothing left running"
expect_clean

done_testing
