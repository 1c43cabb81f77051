#!/usr/bin/env bash
# The document `init` makes says where each cell runs: the repository root, `workdir`, or for a
# plan with revisions each revision's own checkout of its code (never the user's work tree),
# where `build:` built it; and that is where the command really ran.
source "$(dirname "$0")/lib.sh"

# plan_with EXTRA: a plan whose command prints its working directory's name into the record.
plan_with() {
  cat >abtrack.yaml <<EOF2
experiment: where
doc: AB.md
$1
command: 'echo "{\"t\": [1]}"; pwd >&2'
metrics:
  t: {json: t}
EOF2
}

step "a plan without revisions: the repository root"
new_repo plain
plan_with "axes: {v: [a]}"
expect_rc 0 ab init
expect_contains AB.md "Each cell runs from the repository root:"

step "workdir: that folder"
new_repo workdir
mkdir -p bench && touch bench/.keep
plan_with "axes: {v: [a]}
workdir: bench"
expect_rc 0 ab init
expect_contains AB.md 'Each cell runs from `bench` in the repository:'

step "revisions: each revision's own checkout, not the repository root"
new_repo revs
echo 1 >code.txt && git add code.txt && git commit -q -m "user: code"
plan_with "revisions: {base: main, mine: WORKTREE}
build: 'true'"
expect_rc 0 ab init
expect_contains AB.md "Each cell runs from the root of its revision's own checkout of that revision's code (never your work tree), once \`build:\` has built it there:"
expect_not_contains AB.md "repository root"
expect_rc 0 ab run --rounds 1
ran_in=$(json runs/where/0001.json 'd["invocations"][0]["stderr_tail"].strip()')
expect_false "the command did not run from the repository root ($ran_in)" test "$ran_in" = "$(pwd -P)"
expect_true "it ran in a checkout of the revision's code ($ran_in holds code.txt)" test -f "$ran_in/code.txt"

done_testing
