#!/usr/bin/env bash
# Finding the plan: without -p, the nearest abtrack.yaml from the current directory up to the
# repository root (and not above it); -p FILE is a path from the current directory. Without a
# plan the error says where abtrack looked and how to name or start one, naming no file that
# only abtrack's own repository has.
source "$(dirname "$0")/lib.sh"

new_repo outer
# A plan above the repository root must never be picked up.
cat >"$WORK/abtrack.yaml" <<'EOF'
experiment: outside
doc: OUT.md
axes: {n: [1]}
command: "echo '{\"t\": 1}'"
metrics: {t: {json: t}}
EOF

step "no plan anywhere: where abtrack looked, and how to name or start one"
mkdir -p src/deep
git commit -q --allow-empty -m "user: start" || die "git commit"
cd src/deep || die "cd"
expect_rc 2 ab status
expect_contains "$ERR" "abtrack: error: no plan: no abtrack.yaml in $REPO/src/deep or in a folder above it up to the repository root $REPO"
expect_contains "$ERR" "hint: name the plan with -p FILE, or start one"
expect_not_contains "$ERR" "examples/occupancy" "the hint names no file of abtrack's own repository"
expect_not_contains "$ERR" "outside" "the plan above the repository root is not used"
cd "$REPO" || die "cd"
expect_rc 2 ab status
expect_contains "$ERR" "abtrack: error: no plan: no abtrack.yaml in $REPO"
expect_not_contains "$ERR" "or in a folder above"

step "status, step and verify from a subdirectory use the root's plan"
cat >abtrack.yaml <<'EOF'
experiment: disc
doc: AB.md
axes: {n: [1, 2]}
command: 'echo "{\"t\": 1, \"cwd\": \"$(pwd)\"}"'
metrics: {t: {json: t}}
EOF
git_commit_all "plan"
cd src/deep || die "cd"
expect_rc 0 ab init
expect_true "init from a subdirectory writes the document at the root" test -f "$REPO/AB.md"
expect_rc 0 ab status
expect_contains "$OUT" "n=1"
expect_not_contains "$ERR" "error"
expect_rc 0 ab step
expect_true "the record is under the root's runs/" test -f "$REPO/runs/disc/0001.json"
expect_eq "$(json "$REPO/runs/disc/0001.json" 'd["outcome"]')" pass "the run passed"
expect_rc 0 ab verify

step "a plan's mistake is named by its path from the current directory"
cd "$REPO" || die "cd"
sed -i 's/^doc: AB.md/doc: AB.md\ncomand: x/' abtrack.yaml
cd src/deep || die "cd"
expect_rc 2 ab status
expect_contains "$ERR" "abtrack: error: ../../abtrack.yaml:3:1: unknown plan key 'comand'"
cd "$REPO" && git checkout -q abtrack.yaml || die "checkout"

step "the nearest plan wins; the search stops at the repository root"
mkdir -p sub/inner
cat >sub/abtrack.yaml <<'EOF'
experiment: sub
doc: sub/AB.md
axes: {n: [7]}
command: "echo '{\"t\": 1}'"
metrics: {t: {json: t}}
EOF
cd sub/inner || die "cd"
expect_rc 0 ab status
expect_contains "$OUT" "n=7" "sub/abtrack.yaml is the nearest plan"

step "-p FILE is a path from the current directory"
expect_rc 0 ab -p ../../abtrack.yaml status
expect_contains "$OUT" "n=2" "-p ../../abtrack.yaml is the root's plan"
expect_rc 2 ab -p abtrack.yaml status
expect_contains "$ERR" "abtrack: error: no plan at abtrack.yaml"
expect_contains "$ERR" "hint: -p takes a path from the current directory ($REPO/sub/inner)"
expect_not_contains "$ERR" "examples/occupancy"

done_testing
