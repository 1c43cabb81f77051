#!/usr/bin/env bash
# A failed build is named as the build, not as "setup": with revisions (the build of each code
# tree) and without (the build runs before the cells; "build or setup" when the plan has both).
source "$(dirname "$0")/lib.sh"

new_repo buildfail
echo 1 >code.txt
git add code.txt && git commit -q -m "user: code"
cat >abtrack.yaml <<'EOF2'
experiment: bf
doc: AB.md
revisions: {base: main, mine: WORKTREE}
build: echo compiling; exit 3
command: 'echo "{\"t\": [1]}"'
metrics:
  t: {json: t}
EOF2
expect_rc 0 ab init

step "with revisions: the build of a revision"
expect_rc 1 ab run --rounds 1
expect_contains "$ERR" "build of revision 'base' (main) failed: build exited with status 3"
expect_not_contains "$ERR" "setup exited"
expect_contains "$(json runs/bf/0001.json 'd["reason"]')" "failed: build exited with status 3" "the record's reason names the build"

step "without revisions: the build before the cells"
sed -i '/^revisions:/d; s/^command:/axes: {v: [a]}\ncommand:/' abtrack.yaml
expect_rc 1 ab step
expect_contains "$OUT" "build exited with status 3"
expect_not_contains "$OUT" "setup exited"
expect_not_contains "$ERR" "setup exited"

step "without revisions, with a setup too: either may have failed"
sed -i 's/^build:/setup: "true"\nbuild:/' abtrack.yaml
expect_rc 1 ab step --cell v=a
expect_contains "$OUT" "build or setup exited with status 3"

done_testing
