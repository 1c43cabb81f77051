#!/usr/bin/env bash
# `run` retries the cells whose latest run is invalid (and, with --retry, those whose latest run
# failed a gate); an invalid latest baseline run does not blank the changes when earlier valid
# runs on the same code exist; a run whose first cells all fail the same way stops early
# (--keep-going goes on), keeping what it committed.
source "$(dirname "$0")/lib.sh"

new_repo
# broken-X makes cell X exit 3 (invalid); slow-X makes it fail its gate. Both are ignored
# files: the code stays the same.
printf 'broken-*\nslow-*\n' >.gitignore
cat >cell.sh <<'EOF'
x=$1
if [ -e "broken-$x" ]; then echo "broken $x" >&2; exit 3; fi
e=0
if [ -e "slow-$x" ]; then e=1; fi
echo "{\"t\": [${x}0, ${x}1, ${x}2, ${x}3, ${x}4], \"err\": $e}"
EOF
cat >abtrack.yaml <<'EOF'
experiment: rt
doc: AB.md
axes:
  x: [1, 2, 3]
baseline: {x: 1}
command: sh cell.sh {x}
metrics:
  t: {json: t, better: lower}
  err: {json: err}
gates:
  - err == 0
EOF
git_commit_all "user: plan"
expect_rc 0 ab init

step "a cell whose latest run is invalid is run again by run"
touch broken-2
expect_rc 1 ab run
expect_contains "$OUT" "run 2 x=2: invalid"
rm broken-2
expect_rc 0 ab run
expect_contains "$OUT" "run 4 x=2: pass" "the invalid cell is run again"
expect_not_contains "$OUT" "x=1" "cells with a valid latest run are not"
expect_not_contains "$ERR" "nothing to do"
expect_rc 0 ab run
expect_contains "$ERR" "every cell of rt has a valid run; nothing to do"
expect_clean

step "a failed gate is run again only with --retry"
touch slow-3
expect_rc 1 ab step --cell x=3
expect_contains "$OUT" "run 5 x=3: fail"
rm slow-3
expect_rc 0 ab run
expect_contains "$ERR" "nothing to do"
expect_contains "$ERR" "--retry"
expect_eq "$(ls runs/rt | wc -l | tr -d ' ')" 5 "nothing ran"
expect_rc 0 ab run --retry
expect_contains "$OUT" "run 6 x=3: pass"
expect_not_contains "$OUT" "x=2"

step "an invalid latest baseline run keeps the earlier pool's changes"
touch broken-1
expect_rc 1 ab step --cell x=1
expect_contains "$OUT" "run 7 x=1: invalid"
rm broken-1
expect_not_contains AB.md "baseline invalid" "the changes are not blanked"
results=$(region AB.md results)
expect_match "$results" '\| 2 \|.*\+[0-9.]+%' "x=2 keeps its change against the baseline's valid runs"
expect_rc 0 ab status
expect_match "$OUT" 'x=1 +pass +run 7 \(pool of 2\) \(latest run invalid\)' "status: the pool passes, its latest run is invalid"
expect_rc 0 ab verify
# A run measured now still compares with the baseline's valid runs.
expect_rc 0 ab step --cell x=2
expect_match "$OUT" 'run 8 x=2: pass  t 22 \(\+[0-9.]+% worse\)' "the new run is compared with the earlier valid baseline runs"
# ... and the baseline, invalid at its latest, is run again by `run`.
expect_rc 0 ab run
expect_contains "$OUT" "run 9 x=1: pass"

step "the first cells failing the same way stop the run"
new_repo stop
cat >abtrack.yaml <<'EOF'
experiment: st
doc: AB.md
axes:
  x: [1, 2, 3, 4, 5, 6]
command: ./no-such-bench --x {x}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)
expect_rc 1 ab run
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 2 "two runs committed, not six"
expect_contains "$OUT" "run 2 x=2: invalid"
expect_contains "$ERR" "abtrack: error:"
expect_contains "$ERR" "stopped after the first 2 runs"
expect_contains "$ERR" "status 127"
expect_contains "$ERR" "hint:"
expect_contains "$ERR" "--keep-going"
expect_clean
expect_rc 1 ab run --keep-going
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 8 "--keep-going runs every cell (the two invalid ones again)"

step "the same invalid reason three times stops the run"
new_repo same
cat >abtrack.yaml <<'EOF'
experiment: sm
doc: AB.md
axes:
  x: [1, 2, 3, 4, 5, 6]
command: echo "no json here"
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)
expect_rc 1 ab run
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 3 "three runs committed, not six"
expect_contains "$ERR" "stopped after the first 3 runs"
expect_contains "$ERR" "--keep-going"

step "a parallel run stops the same way"
new_repo stoppar
cat >abtrack.yaml <<'EOF'
experiment: sp
doc: AB.md
jobs: 2
axes:
  x: [1, 2, 3, 4, 5, 6, 7, 8]
command: ./no-such-bench --x {x}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)
expect_rc 1 ab run
n=$(git rev-list --count "$INIT"..HEAD)
expect_true "the parallel run stopped early ($n runs)" test "$n" -lt 8
expect_contains "$ERR" "stopped after the first"
expect_clean

step "a run that starts well is not stopped"
new_repo good
cat >abtrack.yaml <<'EOF'
experiment: gd
doc: AB.md
axes:
  x: [1, 2, 3, 4, 5]
command: if [ {x} = 1 ]; then echo '{"t":[1]}'; else ./no-such-bench; fi
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)
expect_rc 1 ab run
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 5 "every cell ran"

done_testing
