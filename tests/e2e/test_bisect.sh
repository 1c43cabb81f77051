#!/usr/bin/env bash
# bisect: a scripted first-parent history of 8 commits of a small C program where the 5th
# doubles the work. `abtrack bisect --good <1st> --bad <8th>` measures bad against good, then
# binary-searches the commits between them, each measured against good as the plan's candidate
# revision (interleaved rounds, committed as normal runs), and prints the 5th as the first bad
# commit. Each commit's tree is built at most once. Good not an ancestor of bad, and bad not
# worse than good, are clear errors.
source "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || { echo "SKIP: no C compiler" >&2; DONE=1; exit 77; }

new_repo bis
BUILDS=$WORK/builds.log
write_timed_bench 400000
cat >abtrack.yaml <<EOF2
experiment: bis
doc: BIS.md
revisions: {base: main, mine: main}
build: "mkdir -p build && cc -O1 -o build/bench bench.c && pwd >> $BUILDS"
baseline: {rev: base}
axes: {size: [small, large]}
rounds: 6
min_effect: 10%
command: build/bench {size}
metrics:
  t: {json: t, better: lower, unit: us}
EOF2
git add bench.c abtrack.yaml && git commit -q -m "c1: the bench"
expect_rc 0 ab init
c=("")   # c[1..8]: the scripted history
c[1]=$(git rev-parse HEAD)
for i in 2 3 4 5 6 7 8; do
  if [ "$i" = 5 ]; then sed -i 's/#define WORK 400000/#define WORK 800000/' bench.c
  else echo "// change $i" >>bench.c; fi
  git commit -q -am "c$i: change $i" && c[$i]=$(git rev-parse HEAD)
done
runs_before=$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' ')

step "bisect finds the 5th commit"
expect_rc 0 ab bisect --good "${c[1]}" --bad "${c[8]}" --cell size=small --seed 7
expect_contains "$OUT" "first bad commit: ${c[5]} c5: change 5" "the 5th commit is the first bad one"
expect_match "$OUT" "good ${c[1]:0:7} vs bad ${c[8]:0:7}: \+[0-9.]+% worse vs good" "bad is measured against good first"
expect_match "$OUT" "step 1/3: ${c[4]:0:7} c4: change 4: like good" "step 1 tests the middle commit"
expect_match "$OUT" "step [0-9]/3: ${c[5]:0:7} c5: change 5: like bad \(\+[0-9.]+% worse vs good" "the 5th is like bad"
expect_not_contains "$OUT" "skipped" "no commit was skipped"
expect_eq "$(grep -c '^step' "$OUT")" 3 "3 steps for 6 commits between good and bad"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" "$(sort -u "$BUILDS" | wc -l | tr -d ' ')" "no tree was built twice"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 5 "good, bad and 3 tested commits: 5 builds"
runs_after=$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' ')
expect_eq "$((runs_after - runs_before))" 48 "4 measurements x 6 rounds x 2 revisions, committed as runs"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Experiment,valueonly)' | tr -d '\n')" bis "the last commit is a run of the experiment"
expect_eq "$(grep -L '"size": "small"' runs/bis/*.json | wc -l | tr -d ' ')" 0 "only the named cell was measured"
c5_run=$(grep -l "\"commit\": \"${c[5]}\"" runs/bis/*.json | head -1)
expect_eq "$(json "$c5_run" 'd["cell"]["rev"]')" mine "the tested commit runs as the candidate revision"
expect_eq "$(git status --porcelain)" "" "the work tree is clean"
[ ! -e build ] && pass_check || fail "no build output in the work tree"
expect_rc 0 ab verify

step "errors: good not an ancestor of bad, no such revision, bad not worse"
git checkout -q -b side "${c[3]}" && echo "// side" >>bench.c && git commit -q -am "side" && git checkout -q main
head_before=$(git rev-parse HEAD)
expect_rc 2 ab bisect --good side --bad "${c[8]}" --cell size=small
expect_contains "$ERR" "is not a first-parent ancestor of --bad" "good not an ancestor"
expect_rc 2 ab bisect --good nosuch --bad "${c[8]}" --cell size=small
expect_contains "$ERR" "--good 'nosuch' names no commit" "an unknown revision"
expect_rc 2 ab bisect --good "${c[1]}" --bad "${c[8]}"
expect_contains "$ERR" "bisect needs --cell" "the cell is needed"
expect_rc 2 ab bisect --good "${c[1]}" --bad "${c[8]}" --cell rev=mine,size=small
expect_contains "$ERR" "without rev" "--cell names no rev"
expect_eq "$(git rev-parse HEAD)" "$head_before" "nothing was committed"
expect_rc 1 ab bisect --good "${c[5]}" --bad "${c[8]}" --cell size=small --seed 8
expect_contains "$ERR" "bad is not worse than good on t (Δ" "bad not worse"
expect_contains "$ERR" "nothing to bisect"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 5 "the cached builds of c5 and c8 are used"
done_testing
