#!/usr/bin/env bash
# Messages about revisions name what the user wrote, where it was written: a `--rev` naming no
# commit is the command line's mistake, not the plan file's; a revision in the plan naming no
# commit is the plan's. Nothing is committed.
source "$(dirname "$0")/lib.sh"

new_repo reverr
echo 1 >code.txt
git add code.txt && git commit -q -m "user: code"
cat >abtrack.yaml <<'EOF2'
experiment: re
doc: AB.md
revisions: {base: main, mine: WORKTREE}
command: 'echo "{\"t\": [1]}"'
metrics:
  t: {json: t}
EOF2
expect_rc 0 ab init
head_before=$(git rev-parse HEAD)

step "--rev NAME=SPEC naming no commit: the command line's mistake"
expect_rc 2 ab run --rev base=no-such-branch
expect_contains "$ERR" "abtrack: error: --rev base=no-such-branch: 'no-such-branch' names no commit"
expect_not_contains "$ERR" "abtrack.yaml" "the plan file is not blamed"

step "a revision of the plan naming no commit: the plan's mistake"
sed -i 's/base: main/base: no-such-branch/' abtrack.yaml
expect_rc 2 ab run
expect_contains "$ERR" "abtrack: error: abtrack.yaml: revision 'base': 'no-such-branch' names no commit"
expect_not_contains "$ERR" "--rev"
expect_eq "$(git rev-parse HEAD)" "$head_before" "nothing was committed"

done_testing
