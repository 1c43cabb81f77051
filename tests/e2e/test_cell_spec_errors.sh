#!/usr/bin/env bash
# `step --cell` mistakes: an unknown axis gets "did you mean" when a near name exists and always
# the list of axes with an example; an unknown value lists the axis's values; a bare value names
# its axis. Exit 2, nothing run, nothing committed.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: cells
doc: AB.md
axes:
  codec: [gzip, zstd]
  level: [1, 6]
command: 'echo "{\"t\": 1}"; touch ran'
metrics: {t: {json: t}}
EOF
git_commit_all "plan"
expect_rc 0 ab init
HEAD0=$(git rev-parse HEAD)

step "an unknown axis near a real one: did you mean, and the axes"
expect_rc 2 ab step --cell codek=gzip,level=1
expect_contains "$ERR" "abtrack: error: --cell: unknown axis 'codek', did you mean 'codec'?"
expect_contains "$ERR" "hint: the axes are: codec, level; e.g. --cell codec=gzip,level=1"

step "an unknown axis with no near name still lists the axes"
expect_rc 2 ab step --cell compressor=gzip,level=1
expect_contains "$ERR" "abtrack: error: --cell: unknown axis 'compressor'"
expect_contains "$ERR" "hint: the axes are: codec, level"

step "an unknown value lists the axis's values"
expect_rc 2 ab step --cell codec=xz,level=1
expect_contains "$ERR" "abtrack: error: --cell: axis 'codec' has no value 'xz'"
expect_contains "$ERR" "hint: its values are: gzip, zstd"

step "a bare value names its axis"
expect_rc 2 ab step --cell zstd,level=1
expect_contains "$ERR" "abtrack: error: --cell: 'zstd' is not axis=value"
expect_contains "$ERR" "hint: 'zstd' is a value of axis 'codec': write codec=zstd"

step "nothing ran, nothing was committed"
expect_false "no cell ran" test -e ran
expect_eq "$(git rev-parse HEAD)" "$HEAD0" "no commit"
expect_rc 0 ab step --cell codec=zstd,level=6
expect_eq "$(json runs/cells/0001.json 'd["cell"]')" '{"codec": "zstd", "level": 6}' "a right --cell runs that cell"

done_testing
