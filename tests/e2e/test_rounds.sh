#!/usr/bin/env bash
# Statistics in the loop: `run --rounds R --seed S` interleaves shuffled rounds (recorded in
# each record, reproducible from the seed); a cell's runs on the same code pool their samples;
# new code starts a new pool; the model line appears in the summary.
source "$(dirname "$0")/lib.sh"

write_plan() {
  cat >abtrack.yaml <<'EOF2'
experiment: rounds
doc: AB.md
axes:
  v: [a, b]
  x: [1, 2]
baseline: {v: a}
command: "echo '{\"t\": [{x}0, {x}1, {x}2]}'"
metrics:
  t: {json: t, better: lower}
model: {metric: t, x: x}
EOF2
}

new_repo one
write_plan
expect_rc 0 ab init
expect_rc 0 ab run --rounds 3 --seed 42 --all
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' ')" 12 "3 rounds x 4 cells = 12 runs"
expect_eq "$(json runs/rounds/0001.json 'd["schedule"]["seed"]')" 42 "the seed is recorded"
expect_eq "$(json runs/rounds/0012.json 'd["schedule"]["round"]')" 3 "the last run is in round 3"
for r in 1 2 3; do
  n=$(for f in runs/rounds/*.json; do json "$f" 'd["schedule"]["round"]'; done | grep -cx "$r")
  expect_eq "$n" 4 "round $r runs every cell once"
done
order_one=$(git log --reverse --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d' | tr '\n' '|')
expect_contains "$(ab status)" "pool of 3" "status shows pooled runs"
expect_eq "$(json runs/rounds/0012.json 'd["metrics"]["t"]["summary"]["n"]')" 3 "one run has its own 3 samples"
expect_records_valid runs/rounds/*.json
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| b | 2 |')
expect_match "$row" '^\| b \| 2 \| 9 \|' "the results row pools 9 samples of 3 runs ($row)"
expect_contains "$(sed -n '/begin summary/,/end summary/p' AB.md)" "1 fixed + 10 per x" "the model fits t = 1 + 10x per variant"
expect_rc 0 ab verify

step "the same seed gives the same schedule"
new_repo two
write_plan
expect_rc 0 ab init
expect_rc 0 ab run --rounds 3 --seed 42 --all
order_two=$(git log --reverse --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d' | tr '\n' '|')
expect_eq "$order_two" "$order_one" "same seed, same order"
expect_rc 0 ab run --rounds 3 --seed 7 --all
order_three=$(git log --reverse --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d' | tail -n 12 | tr '\n' '|')
[ "$order_three" != "$order_one" ] || fail "another seed should give another order"

step "new code starts a new pool"
echo "change" >code.txt && git add code.txt && git commit -q -m "user: change the code"
expect_rc 0 ab step --cell v=b,x=2
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| b | 2 |')
expect_match "$row" '^\| b \| 2 \| 3 \|' "after a code change the row has only the new run's 3 samples ($row)"
expect_rc 2 ab run --rounds 0
expect_contains "$ERR" "--rounds must be a whole number from 1 to 10000"
done_testing
