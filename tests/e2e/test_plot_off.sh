#!/usr/bin/env bash
# `plot: false` turns the per-run SVG plot off: the commit holds the record and the document only,
# and the document links no plot. A non-boolean is a plan error.
source "$(dirname "$0")/lib.sh"
new_repo
cat >abtrack.yaml <<'EOF2'
experiment: noplot
doc: AB.md
axes: {v: [a, b], x: [1, 2]}
baseline: {v: a}
command: "echo '{\"t\": [{x}0, {x}1, {x}2]}'"
metrics: {t: {json: t, better: lower}}
plot: false
EOF2
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(git show --stat --format= HEAD | grep -c '|')" 2 "the last commit holds exactly the record and the document"
expect_false "no SVG in the work tree" test -e AB.svg
expect_not_contains AB.md "AB.svg"
expect_rc 0 ab verify
sed -i 's/^plot: false/plot: maybe/' abtrack.yaml
expect_rc 2 ab status
expect_contains "$ERR" "plot must be true or false, or {y: log|linear}, not 'maybe'"
done_testing
