#!/usr/bin/env bash
# `build:` runs once per code tree (or once per invocation without revisions), never for a cell,
# so no `{name}` in it is replaced: each one is a plan warning at the build's line, as a
# command's near-miss is (`{warp}` for `warps`: did you mean), and the shell's own `${NAME}` is
# left alone. The plan still loads and runs.
source "$(dirname "$0")/lib.sh"

new_repo buildph
echo 1 >code.txt
git add code.txt && git commit -q -m "user: the code"
cat >abtrack.yaml <<'EOF2'
experiment: bp
doc: AB.md
revisions: {base: main, mine: WORKTREE}
axes:
  warps: [4]
build: echo N={nope} W={warps} M={warp} F={nope} H=${HOME} >build.txt
command: 'echo "{\"t\": [1]}"'
metrics:
  t: {json: t}
EOF2
git add abtrack.yaml && git commit -q -m "user: plan"

step "each {name} of build: is a warning naming it"
expect_rc 0 ab status
expect_contains "$ERR" "abtrack: warning: abtrack.yaml:6:8: build has '{nope}', which is not an axis and is left as it is"
expect_contains "$ERR" "build has '{warp}', which is not an axis and is left as it is; did you mean '{warps}'?"
expect_contains "$ERR" "build has '{warps}', which is left as it is: the build runs once per code tree, not per cell"
expect_eq "$(grep -c "build has '{nope}'" "$ERR")" 1 "one warning per placeholder"
expect_not_contains "$ERR" "HOME" "\${HOME} is the shell's"
expect_not_contains "$ERR" "command has" "the command's placeholders are all axes"

step "the plan still runs, the build with its text as written"
expect_rc 0 ab init
expect_rc 0 ab run --rounds 1
expect_contains "$ERR" "build has '{nope}'"
expect_contains "$(cat .git/abtrack/trees/*/code/build.txt)" "N={nope} W={warps} M={warp}" "the build ran in the revision's work tree"

step "without revisions: the same warnings"
sed -i '/^revisions:/d' abtrack.yaml
expect_rc 0 ab status
expect_contains "$ERR" "build has '{nope}', which is not an axis and is left as it is"
expect_contains "$ERR" "did you mean '{warps}'?"

step "a build without braces: no warning"
sed -i 's/^build: .*/build: echo built >build.txt/' abtrack.yaml
expect_rc 0 ab status
expect_not_contains "$ERR" "warning"

done_testing
