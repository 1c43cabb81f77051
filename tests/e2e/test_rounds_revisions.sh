#!/usr/bin/env bash
# Rounds over real code versions: `revisions:` naming branches whose code differs (a file of times
# the program reads), built once each, run round after round, on a program whose samples come from
# a noise model (awk seeded per invocation from a counter file: a 2% offset per invocation, 3% per
# sample, 10 lines "time_ms: X" read by a regex metric). 3 fixed rounds decide a ±40% change
# between commits; a commit that changes only a README (identical code) gets no better/worse
# verdict; `rounds: auto` with a second axis stops measuring the group whose change is decided and
# runs the other to max_rounds; `--rounds auto` overrides a plan's fixed rounds; `run --dry-run`
# prints the expected rounds from the recorded pools; `rounds: auto` without a baseline is an error
# at its line with nothing written. (test_rounds_auto.sh does the same over an ordinary axis.)
#
# The seeds are fixed (the counter file's start and --seed), so every outcome is deterministic.
source "$(dirname "$0")/lib.sh"
command -v awk >/dev/null || { echo "SKIP: no awk" >&2; DONE=1; exit 77; }

COUNT=$WORK/count    # the invocations so far: each one's seed (mawk seeds well from small numbers)
BUILDS=$WORK/builds  # one line per build
export COUNT

# bench.sh SIZE: 10 lines "time_ms: X" around the time times.txt gives SIZE in this revision.
write_bench() {
  cat >bench.sh <<'EOF_BENCH'
#!/bin/sh
B=$(sed -n "s/^$1 //p" times.txt)
n=$(cat "$COUNT" 2>/dev/null || echo 0); echo $((n + 1)) >"$COUNT"
awk -v seed="$n" -v base="$B" -v sb=0.02 -v sw=0.03 '
function z() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand()) }
BEGIN { srand(seed + 1); off = sb * z()
        for (i = 0; i < 10; i++) printf "time_ms: %.3f\n", base * exp(off + sw * z()) }'
EOF_BENCH
}

# setup_repo NAME: main (small 50, large 100 ms) and the branches slow (large 140: +40%), fast
# (large 60: -40%), same (only README changes), mine (large 140, small unchanged).
setup_repo() {
  new_repo "$1"
  write_bench
  printf 'small 50\nlarge 100\n' >times.txt
  echo "a bench" >README
  git add . && git commit -q -m "the bench" || die "git commit"
  git checkout -q -b slow && sed -i 's/^large 100$/large 140/' times.txt && git commit -q -am "slower" || die "slow"
  git checkout -q -b fast main && sed -i 's/^large 100$/large 60/' times.txt && git commit -q -am "faster" || die "fast"
  git checkout -q -b same main && echo "a bench, reworded" >README && git commit -q -am "reword" || die "same"
  git checkout -q -b mine main && sed -i 's/^large 100$/large 140/' times.txt && git commit -q -am "mine" || die "mine"
  git checkout -q main
}

# write_plan REVISIONS_FLOW_MAP COMMAND ROUNDS_LINES...: abtrack.yaml, committed, and init.
write_plan() {
  local revs=$1 cmd=$2; shift 2
  {
    echo "experiment: revs"
    echo "doc: AB.md"
    echo "revisions: $revs"
    echo "baseline: {rev: base}"
    printf '%s\n' "$@"
    echo "build: \"mkdir -p build && cp bench.sh times.txt build/ && echo built >> $BUILDS\""
    echo "command: $cmd"
    echo "metrics:"
    echo "  t: {regex: 'time_ms: ([0-9.]+)', better: lower, unit: ms}"
  } >abtrack.yaml
  git add abtrack.yaml && git commit -q -m "the plan" || die "git commit"
  expect_rc 0 ab init
}

run_commits() { git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' '; }
# runs_of CELL: how many run commits measured CELL (its Abtrack-Cell trailer).
runs_of() { git log --format='%(trailers:key=Abtrack-Cell,valueonly)' | grep -cxF "$1"; }
last_round() { for f in runs/revs/*.json; do json "$f" 'd["schedule"]["round"]'; done | sort -n | tail -1; }

step "3 fixed rounds decide a ±40% change between commits"
setup_repo forty
write_plan "{base: main, slow: slow, fast: fast}" "sh build/bench.sh large" "rounds: 3"
: >"$BUILDS"; echo 0 >"$COUNT"
expect_rc 0 ab run --seed 1
expect_eq "$(run_commits)" 9 "3 rounds x 3 revisions"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 3 "each revision built once"
expect_eq "$(last_round)" 3
slow_run=$(grep -l '"rev": "slow"' runs/revs/*.json | head -1)
expect_eq "$(json "$slow_run" 'd["code"]["commit"]')" "$(git rev-parse slow)" "a slow run names the slow branch's commit"
expect_eq "$(json "$slow_run" 'len(d["metrics"]["t"]["samples"])')" 10 "the regex reads the 10 time_ms lines"
expect_rc 1 ab check
expect_match "$OUT" '^rev=slow .* \+[0-9.]+% \[\+[0-9.]+, \+[0-9.]+\] +worse \(paired ×3 ' "slow is worse after 3 rounds"
expect_match "$OUT" '^rev=fast .* -[0-9.]+% \[-[0-9.]+, -[0-9.]+\] +better \(paired ×3 ' "fast is better after 3 rounds"
expect_contains "$OUT" "check failed: worse: rev=slow"
expect_not_contains "$OUT" "inconclusive"
results=$(region AB.md results)
expect_match "$results" '^\| slow \| 30 \| .* worse, p=[0-9.e-]+, paired ×3' "the document says worse"
expect_match "$results" '^\| fast \| 30 \| .* better, p=[0-9.e-]+, paired ×3' "the document says better"
expect_records_valid runs/revs/*.json
expect_rc 0 ab verify

step "run --dry-run: the expected rounds from the recorded pools, nothing written"
head_before=$(git rev-parse HEAD)
expect_rc 0 ab run --dry-run --all
expect_match "$ERR" '^abtrack: expected: rev=slow: t \+[0-9.]+%, per-round noise [0-9.]+% \(from 3 paired rounds\): fixed rounds ~[0-9]+, rounds: auto ~[0-9]+ \(max_rounds 20\)$' \
  "the expected rounds for slow"
expect_match "$ERR" '^abtrack: expected: rev=fast: t -[0-9.]+%' "and for fast"
expect_eq "$(git rev-parse HEAD)" "$head_before" "a dry run commits nothing"
expect_clean "a dry run writes nothing"

# An A/A test between two commits with the same code: any better/worse verdict is a false
# positive, which a test at alpha = 0.05 makes 5% of the time by design. The counter starts and
# seeds are fixed: these two trials are draws without one (20 such trials were checked when the
# test was written: none had a verdict), so the test is deterministic, never flaky.
step "a commit that changes only the README: no better/worse verdict"
for start in 0 1000; do
  setup_repo "aa-$start"
  write_plan "{base: main, same: same}" "sh build/bench.sh large" "rounds: 5"
  echo "$start" >"$COUNT"
  expect_rc 0 ab run --seed "$((start + 1))"
  expect_eq "$(run_commits)" 10 "5 rounds x 2 revisions (counter from $start)"
  expect_rc 0 ab check
  expect_match "$OUT" '^rev=same .*\(paired ×5 ' "compared by round (counter from $start)"
  expect_not_match "$OUT" '^rev=same .* (better|worse) ' "no better/worse verdict (counter from $start)"
  expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
  expect_not_match "$(region AB.md results)" '^\| same .* (better|worse),' "nor in the document"
done

step "rounds: auto stops the decided group and runs the other to max_rounds"
setup_repo auto
write_plan "{base: main, mine: mine}" "sh build/bench.sh {size}" "axes: {size: [small, large]}" "rounds: auto" "max_rounds: 6"
: >"$BUILDS"; echo 0 >"$COUNT"
expect_rc 0 ab run --seed 7
expect_contains "$ERR" "rounds: auto, up to 6 rounds of 2 cells"
expect_match "$ERR" '^abtrack: rev=mine size=large: worse t \+[0-9.]+% \[\+[0-9.]+%, \+[0-9.]+%\] \(decided after [2-5] rounds\)$' \
  "large (+40%) decided worse before max_rounds"
expect_match "$ERR" '^abtrack: rev=mine size=small: undecided after 6 rounds \(max_rounds 6\)' "small (no change) runs to max_rounds"
decided=$(sed -n 's/^abtrack: rev=mine size=large: worse .*(decided after \([0-9]*\) rounds)$/\1/p' "$ERR")
expect_eq "$(runs_of 'rev=mine size=large') $(runs_of 'rev=base size=large')" "$decided $decided" \
  "the large group ran only until decided ($decided rounds), base and mine alike"
expect_eq "$(runs_of 'rev=mine size=small') $(runs_of 'rev=base size=small')" "6 6" "the small group ran all 6 rounds"
expect_eq "$(run_commits)" "$((12 + 2 * decided))" "one commit per run"
expect_eq "$(last_round)" 6
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 2 "each revision built once, whatever the rounds"
expect_eq "$(json runs/revs/0001.json 'd["schedule"]["design"]') $(json runs/revs/0001.json 'd["schedule"]["rounds"]')" "auto 6" \
  "the records say the design and its max_rounds"
expect_rc 1 ab check
expect_match "$OUT" "^rev=mine size=large .* worse \(paired ×$decided " "check: large worse, over its $decided rounds"
expect_not_match "$OUT" '^rev=mine size=small .* (better|worse) ' "check: small has no verdict"
expect_records_valid runs/revs/*.json
expect_rc 0 ab verify
expect_clean

step "--rounds auto over a plan's fixed rounds"
setup_repo cli
write_plan "{base: main, same: same}" "sh build/bench.sh large" "rounds: 3"
echo 0 >"$COUNT"
expect_rc 0 ab run --rounds auto --max-rounds 4 --seed 5
expect_contains "$ERR" "rev=same: undecided after 4 rounds (max_rounds 4)"
expect_eq "$(run_commits)" 8 "4 rounds x 2 revisions"
expect_rc 0 ab check
expect_not_match "$OUT" '^rev=same .* (better|worse) ' "no better/worse verdict"
# Stopped undecided below a larger max_rounds, the batch is continued by the next run.
expect_rc 0 ab run --rounds auto --max-rounds 6 --seed 6
expect_contains "$ERR" "continuing batch $(json runs/revs/0001.json 'd["schedule"]["batch"]') after its round 4"
expect_contains "$ERR" "rev=same: undecided after 6 rounds (max_rounds 6)"
expect_eq "$(run_commits)" 12 "rounds 5 and 6 of both revisions"
expect_eq "$(last_round)" 6

step "rounds: auto with revisions and no baseline: an error at its line, nothing written"
head_before=$(git rev-parse HEAD)
count_before=$(cat "$COUNT")
sed -i '/^baseline:/d; s/^rounds: 3$/rounds: auto/' abtrack.yaml
expect_rc 2 ab run
expect_contains "$ERR" "abtrack: error: abtrack.yaml:4:9: rounds: auto runs until each cell's comparison with its baseline is decided, and the plan names no baseline"
expect_contains "$ERR" "baseline: {rev: base}"
expect_eq "$(git rev-parse HEAD)" "$head_before" "git log unchanged"
expect_eq "$(git status --porcelain)" " M abtrack.yaml" "only the user's plan edit in git status"
expect_eq "$(cat "$COUNT")" "$count_before" "nothing was measured"
done_testing
