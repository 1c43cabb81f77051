#!/usr/bin/env bash
# Plan errors: exit 2, `abtrack: error: FILE:LINE:COL: message`, "did you mean" where a near
# name exists, every mistake of a plan reported, and nothing written (no commit, no runs/, no
# document, git status unchanged, nothing outside the repository).
source "$(dirname "$0")/lib.sh"

new_repo
printf 'readme\n' >README
git add README && git commit -q -m "user: readme" || die "git commit"
mkdir -p "$WORK/outside"
ln -s "$WORK/outside" link_out
git add link_out && git commit -q -m "user: symlink" || die "git commit"
HEAD0=$(git rev-parse HEAD)

# bad_plan NAME: write stdin as abtrack.yaml, run init and step, expect exit 2 and nothing
# written. Then each `has LINE PATTERN` checks one reported error.
bad_plan() {
  step "$1"
  # Undo whatever a previous (buggy) case may have written, so cases stay independent.
  git reset -q --hard "$HEAD0" && git clean -qfdx
  rm -rf "$WORK/outside"/*
  cat >abtrack.yaml
  git status --porcelain --untracked-files=all >"$WORK/status.before"
  for cmd in init step run status; do
    expect_rc 2 ab "$cmd" || continue
    expect_eq "$(git rev-parse HEAD)" "$HEAD0" "$cmd: no commit for a bad plan"
    expect_false "$cmd: no runs/ folder for a bad plan" test -e runs
    expect_false "$cmd: no document created for a bad plan" test -e AB.md
    expect_eq "$(ls "$WORK/outside" | tr '\n' ' ')" "" "$cmd: nothing written outside the repository"
    git status --porcelain --untracked-files=all >"$WORK/status.after"
    expect_file_eq "$WORK/status.before" "$WORK/status.after" "$cmd: git status changed for a bad plan"
    expect_false "$cmd: stdout is empty for a bad plan" test -s "$OUT"
  done
  # Every stderr line is an error in the documented format (or an indented hint).
  expect_false "stderr lines are '^abtrack: error: ' or '  hint:'" grep -vqE '^(abtrack: error: |  )' "$ERR" || cat "$ERR" >&2
  cp "$ERR" "$WORK/errors"
  # House style: lowercase message, no final period.
  expect_not_match "$WORK/errors" '^abtrack: error: .*[^.]\.$' "error messages end without a period"
  expect_not_match "$WORK/errors" '^abtrack: error: ([^ :]+:[0-9]+:[0-9]+: )?[A-Z][a-z]' "error messages start lowercase"
}
# has LINE ERE: an error at abtrack.yaml:LINE:COL whose message matches ERE.
has() {
  expect_match "$WORK/errors" "^abtrack: error: abtrack\\.yaml:$1:[0-9]+: .*$2" "error at line $1 matching /$2/"
}
count_errors() { grep -c '^abtrack: error: abtrack\.yaml:[0-9]*:[0-9]*: ' "$WORK/errors"; }

bad_plan "unknown key with did you mean" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
comand: echo hi
metrics:
  t: {json: t}
EOF
has 5 "comand.*did you mean.*command"

bad_plan "duplicate key" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
command: echo hi
experiment: other
metrics:
  t: {json: t}
EOF
has 6 "duplicate.*experiment"

bad_plan "duplicate axis value key" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
  n: [2]
command: echo hi
metrics:
  t: {json: t}
EOF
has 5 "duplicate.*n"

bad_plan "wrong types" <<'EOF'
experiment: pe
doc: AB.md
axes: [1, 2]
command: echo hi
timeout: soon
repeats: [3]
metrics:
  t: {json: t}
EOF
has 3 "axes"
has 5 "timeout"
has 6 "repeats"

bad_plan "empty axis" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1, 2]
  m: []
command: echo hi
metrics:
  t: {json: t}
EOF
has 5 "'?m'?.*(no values|empty)"

bad_plan "baseline and exclude naming unknown axes and values" <<'EOF'
experiment: pe
doc: AB.md
axes:
  warps: [4, 8]
  batch: [16, 64]
baseline: {wraps: 4}
exclude: [{warps: 5}, {btch: 16}]
command: echo hi
metrics:
  t: {json: t}
EOF
has 6 "wraps.*did you mean.*warps"
has 7 "warps.*5|5.*warps"
has 7 "btch.*did you mean.*batch"
expect_eq "$(count_errors)" 3 "three errors reported"

bad_plan "baseline naming an unknown value" <<'EOF'
experiment: pe
doc: AB.md
axes:
  warps: [4, 8]
baseline: {warps: 16}
command: echo hi
metrics:
  t: {json: t}
EOF
has 5 "16"

bad_plan "gate naming an unknown metric" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
command: echo hi
metrics:
  time_us: {json: t}
  rel_err: {json: e}
gates:
  - rel_err <= 6.7e-3
  - rel_eror <= 1
EOF
has 11 "rel_eror.*did you mean.*rel_err"

bad_plan "doc outside the repository (..)" <<'EOF'
experiment: pe
doc: ../x.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
has 2 "outside"
expect_false "no ../x.md written" test -e ../x.md

bad_plan "doc outside the repository (absolute path)" <<EOF
experiment: pe
doc: $WORK/outside/abs.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
has 2 "doc"

bad_plan "doc outside the repository (sneaky ..)" <<'EOF'
experiment: pe
doc: docs/../../x.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
has 2 "outside"

bad_plan "doc outside the repository (through a symlink)" <<'EOF'
experiment: pe
doc: link_out/sym.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
has 2 "(outside|link)"

bad_plan "doc inside .git" <<'EOF'
experiment: pe
doc: .git/AB.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
has 2 "\\.git"
expect_false "nothing written into .git" test -e .git/AB.md

for name in '../evil' 'A B' 'Upper' '-dash' 'a/b' ''; do
  bad_plan "bad experiment name '$name'" <<EOF
experiment: '$name'
doc: AB.md
axes:
  n: [1]
command: echo hi
metrics:
  t: {json: t}
EOF
  has 1 "experiment"
done

bad_plan "regex that does not compile" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
command: echo hi
metrics:
  tput: {regex: 'tput: ([0-9'}
EOF
has 7 "regex|tput"

bad_plan "negative and zero timeout, zero repeats" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1]
command: echo hi
timeout: -5
repeats: 0
metrics:
  t: {json: t}
EOF
has 6 "timeout"
has 7 "repeats"

bad_plan "invalid YAML" <<'EOF'
experiment: pe
doc: AB.md
axes:
  n: [1, 2
command: echo hi
EOF
expect_match "$WORK/errors" '^abtrack: error: abtrack\.yaml:[0-9]+:[0-9]+: ' "a YAML syntax error has a position"

bad_plan "several mistakes: all reported" <<'EOF'
experiment: Bad Name
doc: ../elsewhere.md
timeout: -1
axes:
  warps: [4, 8]
  stages: []
baseline: {wraps: 4}
comand: ./bench {warps}
metrics:
  time_us: {json: t, better: lowr}
  tput: {regex: '(['}
gates:
  - time_uss < 5
EOF
has 1 "experiment"
has 2 "outside"
has 3 "timeout"
has 6 "stages"
has 7 "wraps.*did you mean.*warps"
has 8 "comand.*did you mean.*command"
has 10 "lowr"
has 11 "regex|tput"
has 13 "time_uss.*did you mean.*time_us"
expect_true "at least 9 positioned errors reported ($(count_errors))" test "$(count_errors)" -ge 9

step "plan file missing"
git reset -q --hard "$HEAD0" && git clean -qfdx
expect_rc 2 ab init
expect_contains "$ERR" "abtrack.yaml" "a missing plan is named"
expect_rc 2 ab -p nope.yaml step
expect_contains "$ERR" "nope.yaml" "a missing -p plan is named"
expect_eq "$(git rev-parse HEAD)" "$HEAD0" "no commit"

step "usage errors"
expect_rc 2 ab frobnicate
expect_match "$ERR" '^abtrack: error: ' "unknown command"
expect_rc 2 ab
expect_contains "$ERR" "abtrack: error: no command given"
expect_rc 2 ab help nope
expect_contains "$ERR" "hint: abtrack help lists the commands"
expect_rc 2 ab -p
expect_contains "$ERR" "hint: write -p VALUE"
expect_rc 0 ab help
expect_contains "$OUT" "step"
expect_rc 0 ab help step
expect_contains "$OUT" "--cell"
expect_rc 2 ab help step extra
expect_contains "$ERR" "abtrack: error: help takes one command, not 'extra'"
expect_rc 2 ab --version extra
expect_contains "$ERR" "abtrack: error: --version takes no argument"
printf '1\n2\n' >"$WORK/a.txt"
expect_rc 2 ab compare --samples "$WORK/a.txt" "$WORK/a.txt" --metric t
expect_contains "$ERR" "abtrack: error: --metric picks a metric of two runs"

step "the document inside runs/, and more cells than supported"
cat >abtrack.yaml <<'EOF'
experiment: inside
doc: runs/inside/notes.md
axes: {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], b: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], c: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], d: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], e: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], f: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
command: echo 1
metrics: {t: {regex: '([0-9]+)'}}
EOF
expect_rc 2 ab init
expect_contains "$ERR" "abtrack.yaml:2:6: doc 'runs/inside/notes.md' is inside runs/, where abtrack keeps its records"
expect_contains "$ERR" "the axes make more than 100000 cells"
expect_eq "$(git rev-parse HEAD)" "$HEAD0" "no commit"

step "a folder as the document or the plan, a missing template or workdir: plan errors"
mkdir -p adir
cat >abtrack.yaml <<'EOF'
experiment: paths
doc: adir
template: nope.md
workdir: nodir
axes: {a: [1, 2]}
command: echo 1
metrics: {t: {regex: '([0-9]+)'}}
EOF
expect_rc 2 ab init
expect_contains "$ERR" "abtrack.yaml:2:6: doc 'adir' is a folder"
expect_contains "$ERR" "abtrack.yaml:3:11: template 'nope.md' is not a file"
expect_contains "$ERR" "abtrack.yaml:4:10: workdir 'nodir' is not a folder"
expect_rc 2 ab -p adir status
expect_contains "$ERR" "abtrack: error: the plan adir is not a file"
expect_eq "$(git rev-parse HEAD)" "$HEAD0" "no commit"

done_testing
