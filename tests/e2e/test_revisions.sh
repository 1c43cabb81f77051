#!/usr/bin/env bash
# revisions: code versions as an axis. A small C program on main and a slower version in the
# work tree (uncommitted, with an untracked file): each revision is checked out as a work tree
# under .git/abtrack/trees/, built once (a second run does not build again), run round after round
# with the revisions alternating, and compared paired by round. The work tree, the index and a
# staged change are left as they were. A failing build makes only that revision's runs invalid.
# Bad input (an unknown revision, a `rev` axis, --rev naming no revision, a bad name) is a
# clear error with nothing written.
source "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || { echo "SKIP: no C compiler" >&2; DONE=1; exit 77; }

new_repo revs
BUILDS=$WORK/builds.log
write_timed_bench 3000000
echo "notes" >NOTES.txt
git add bench.c NOTES.txt && git commit -q -m "user: the bench"
cat >abtrack.yaml <<EOF2
experiment: revs
doc: AB.md
revisions:
  base: main
  mine: WORKTREE
build: "mkdir -p build && cc -O1 \$(cat flags 2>/dev/null) -o build/bench bench.c && echo built >> $BUILDS"
baseline: {rev: base}
rounds: 8
command: build/bench
metrics:
  t: {json: t, better: lower, unit: us}
EOF2
expect_rc 0 ab init

step "the work tree holds a slower version, uncommitted, and an untracked file"
sed -i 's/#define WORK 3000000/#define WORK 12000000/' bench.c
echo "-DUNUSED=1" >flags               # untracked, read by the build
echo "staged" >>NOTES.txt && git add NOTES.txt
before_status=$(git status --porcelain)
index_now() { git ls-files -s | grep -v -P '\t(runs/|AB\.)' | sha1sum; }
before_index=$(index_now)
main=$(git rev-parse main~1)  # main's tip is abtrack's init commit: a name means the user's commit below it
expect_rc 0 ab run --seed 3
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 2 "each revision built once"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d " ")" 16 "8 rounds x 2 revisions"
expect_eq "$(git status --porcelain)" "$before_status" "the work tree and index look as they did (git status)"
expect_eq "$(index_now)" "$before_index" "the index is untouched but for the run's own files: the staged change stays staged"
expect_contains "$(git diff --cached)" "+staged" "the staged change is still staged"
[ ! -e build ] && pass_check || fail "no build output in the work tree"
base_run=$(grep -l '"rev": "base"' runs/revs/*.json | head -1)
mine_run=$(grep -l '"rev": "mine"' runs/revs/*.json | head -1)
expect_eq "$(json "$base_run" 'd["code"]["commit"]')" "$main" "the base runs name main's commit"
expect_eq "$(json "$base_run" 'd["code"]["dirty"]')" false "base is clean code"
expect_eq "$(json "$mine_run" 'd["code"]["dirty"]')" true "mine is the work tree: a snapshot"
snap=$(json "$mine_run" 'd["code"]["snapshot"]')
expect_eq "$(git show "$snap:flags")" "-DUNUSED=1" "the snapshot holds the untracked file"
expect_contains "$(git show "$snap:bench.c")" "12000000" "the snapshot holds the uncommitted change"
base_commit=$(git log --format='%H %(trailers:key=Abtrack-Cell,valueonly)' | grep 'rev=base' | head -1 | cut -d' ' -f1)
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Code,valueonly)' "$base_commit" | tr -d '\n')" "$main" "Abtrack-Code of a base run names main"
expect_eq "$(json "$mine_run" 'd["schedule"]["rounds"]')" 8 "the schedule is recorded"
orders=$(for f in runs/revs/*.json; do echo "$(json "$f" 'd["schedule"]["round"]') $(json "$f" 'd["cell"]["rev"]')"; done | sort -s -n -k1,1 | awk '{a[$1]=a[$1] $2 " "} END {for (r in a) print r, a[r]}' | sort -n)
expect_contains "$orders" "1 base mine" "round 1: base first ($orders)"
expect_contains "$orders" "2 mine base" "round 2: mine first: the order alternates"
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| mine |')
expect_contains "$row" "worse" "mine (twice the work) is worse than base ($row)"
expect_contains "$row" "paired ×8" "the comparison is paired by round over the 8 rounds ($row)"
expect_match "$row" "paired ×8 \((samples|rounds), σw [0-9.]+%, σb [0-9.]+%\)" "the table names the basis and both variance components ($row)"
expect_contains "$(sed -n '/begin results/,/end results/p' AB.md)" "Kalibera & Jones" "the footnote says what paired means"
expect_rc 0 ab verify

step "a second run builds nothing"
expect_rc 0 ab run
expect_contains "$ERR" "nothing to do" "every cell has a run on its revision's code"
expect_rc 0 ab run --all --rounds 2 --seed 4
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 2 "the cached builds are used"
expect_eq "$(git status --porcelain)" "$before_status" "still untouched"

step "a failing build makes only that revision's runs invalid"
git stash -q
git checkout -q -b broken
echo "syntax error" >>bench.c && git commit -q -am "user: break the build"
git checkout -q main
git stash pop -q
expect_rc 1 ab run --all --rounds 1 --rev mine=broken
expect_contains "$ERR" "build of revision 'mine' (broken) failed" "the failure is named"
last_mine=$(ls runs/revs/*.json | tail -2 | xargs grep -l '"rev": "mine"')
last_base=$(ls runs/revs/*.json | tail -2 | xargs grep -l '"rev": "base"')
expect_eq "$(json "$last_mine" 'd["outcome"]')" invalid "mine's run is invalid"
expect_contains "$(json "$last_mine" 'd["reason"]')" "build of revision 'mine'" "its reason names the build"
expect_contains "$(json "$last_mine" 'd["setup"]["stderr_tail"]')" "error" "the build's output tail is in the record"
expect_eq "$(json "$last_base" 'd["outcome"]')" pass "base still ran"
log=$(ls .git/abtrack/trees/*/build.log | xargs grep -l "syntax" | head -1)
[ -n "$log" ] && pass_check || fail "the full build log is kept beside the tree"

step "clean removes the trees the plan no longer names"
ntrees=$(ls -d .git/abtrack/trees/*/ | wc -l)
expect_rc 0 ab clean --keep 0
expect_eq "$(ls -d .git/abtrack/trees/*/ 2>/dev/null | wc -l | tr -d ' ')" 1 "only main's tree is left (was $ntrees)"

step "bad input: a clear error and nothing written"
head_before=$(git rev-parse HEAD)
expect_rc 2 ab run --rev nosuch=main
expect_contains "$ERR" "no revision 'nosuch'" "--rev naming no revision"
expect_rc 2 ab run --rev mine
expect_contains "$ERR" "is not NAME=REVISION"
sed 's/base: main/base: no-such-branch/' abtrack.yaml >bad1.yaml
expect_rc 2 ab -p bad1.yaml run
expect_contains "$ERR" "'no-such-branch' names no commit" "an unknown revision"
sed 's/^revisions:/axes: {rev: [x]}\nrevisions:/' abtrack.yaml >bad2.yaml
expect_rc 2 ab -p bad2.yaml run
expect_contains "$ERR" "cannot be called rev" "rev as an ordinary axis beside revisions:"
sed 's/  base: main/  base-line: main/; s/{rev: base}/{rev: base-line}/' abtrack.yaml >bad3.yaml
expect_rc 2 ab -p bad3.yaml run
expect_contains "$ERR" "revision name 'base-line' must be" "a name that is not an identifier"
expect_eq "$(git rev-parse HEAD)" "$head_before" "nothing was committed"
done_testing
