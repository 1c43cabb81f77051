#!/usr/bin/env bash
# Verdicts from the rounds, on a real program whose timings come from a noise model (awk seeded
# per invocation from a counter file: a 2% offset per invocation, 3% per sample, 10 samples, the
# base value from the cell): 3 fixed rounds decide a ±40% change (better and worse, in `check`
# and the document); identical code gets no better/worse verdict; `rounds: auto` stops well
# before max_rounds on a big change and runs to max_rounds on none; `run --dry-run` prints the
# rounds each design is expected to need from the recorded pools; bad rounds input is an error at
# its plan line with nothing written; integer-rounded samples whose per-round medians tie give no
# exact verdict and no `worse`.
#
# The seeds are fixed (the counter file's start and --seed), so every outcome here is
# deterministic: a wrong verdict would fail every time, never now and then.
source "$(dirname "$0")/lib.sh"
command -v awk >/dev/null || { echo "SKIP: no awk" >&2; DONE=1; exit 77; }

COUNT=$WORK/count  # the invocations so far: each one's seed
# write_noisy_bench: bench.sh CELL prints {"t": [10 samples]} from the noise model, around the
# cell's base value: base 100, slow 140 (+40%), fast 60 (-40%), same 100 (identical code); lo
# 100.3 and hi 100.7 with 0.8% per-sample noise, no offset, rounded to whole numbers.
write_noisy_bench() {
  cat >bench.sh <<EOF_BENCH
#!/bin/sh
SB=0.02; SW=0.03; FMT=%.3f
case "\$1" in
  base|same) B=100 ;; slow) B=140 ;; fast) B=60 ;;
  lo) B=100.3; SB=0; SW=0.008; FMT=%.0f ;; hi) B=100.7; SB=0; SW=0.008; FMT=%.0f ;;
  *) echo "no such cell \$1" >&2; exit 1 ;;
esac
n=\$(cat "$COUNT" 2>/dev/null || echo 0); echo \$((n + 1)) >"$COUNT"
awk -v seed="\$n" -v base="\$B" -v sb="\$SB" -v sw="\$SW" -v fmt="\$FMT" '
function z() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand()) }
BEGIN { srand(seed + 1); off = sb * z(); printf "{\"t\": ["
        for (i = 0; i < 10; i++) printf "%s" fmt, (i ? ", " : ""), base * exp(off + sw * z())
        print "]}" }'
EOF_BENCH
}

# write_plan EXPERIMENT CELLS BASELINE ROUNDS_LINES...: abtrack.yaml for one sweep over v.
write_plan() {
  local exp=$1 cells=$2 base=$3; shift 3
  {
    echo "experiment: $exp"
    echo "doc: AB.md"
    echo "axes: {v: [$cells]}"
    echo "baseline: {v: $base}"
    printf '%s\n' "$@"
    echo "command: sh bench.sh {v}"
    echo "metrics:"
    echo "  t: {json: t, better: lower, unit: us}"
  } >abtrack.yaml
}

# setup_repo NAME EXPERIMENT CELLS BASELINE ROUNDS_LINES...: a fresh repo with the bench and the
# plan committed and initialised, the counter reset to 0.
setup_repo() {
  local name=$1; shift
  new_repo "$name"
  write_noisy_bench
  write_plan "$@"
  git add bench.sh abtrack.yaml && git commit -q -m "the bench and its plan" || die "git commit"
  expect_rc 0 ab init
}

# run_commits: how many run commits HEAD has.
run_commits() { git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' '; }
# last_round: the highest round in the experiment's records.
last_round() { for f in runs/"$1"/*.json; do json "$f" 'd["schedule"]["round"]'; done | sort -n | tail -1; }

step "3 fixed rounds decide a ±40% change"
for start in 0 1000; do
  setup_repo "forty-$start" forty "base, slow, fast" base "rounds: 3"
  echo "$start" >"$COUNT"
  expect_rc 0 ab run --seed "$((start + 1))"
  expect_eq "$(run_commits)" 9 "3 rounds x 3 cells (counter from $start)"
  expect_eq "$(last_round forty)" 3
  expect_rc 1 ab check
  expect_match "$OUT" '^v=slow .* \+[0-9.]+% \[\+[0-9.]+, \+[0-9.]+\] +worse \(paired ×3 ' "slow is worse after 3 rounds (counter from $start)"
  expect_match "$OUT" '^v=fast .* -[0-9.]+% \[-[0-9.]+, -[0-9.]+\] +better \(paired ×3 ' "fast is better after 3 rounds (counter from $start)"
  expect_contains "$OUT" "check failed: worse: v=slow"
  expect_not_contains "$OUT" "inconclusive"
  results=$(region AB.md results)
  expect_match "$results" '^\| slow \| 30 \| .* \| \+[0-9.]+% \[\+[0-9.]+, \+[0-9.]+\] worse, p=[0-9.e-]+, paired ×3' "the document says worse"
  expect_match "$results" '^\| fast \| 30 \| .* \| -[0-9.]+% \[-[0-9.]+, -[0-9.]+\] better, p=[0-9.e-]+, paired ×3' "the document says better"
done
expect_records_valid runs/forty/*.json
expect_rc 0 ab verify

step "run --dry-run after recorded pools: the rounds each design is expected to need"
head_before=$(git rev-parse HEAD)
expect_rc 0 ab run --dry-run
expect_match "$ERR" '^abtrack: expected: v=slow: t \+[0-9.]+%, per-round noise [0-9.]+% \(from 3 paired rounds\): fixed rounds ~[0-9]+, rounds: auto ~[0-9]+ \(max_rounds 20\)$' \
  "the expected rounds for slow, from its 3 paired rounds (max_rounds' default 20)"
expect_match "$ERR" '^abtrack: expected: v=fast: t -[0-9.]+%, per-round noise' "and for fast"
# Two comparisons: Holm's first step asks alpha/2 = 0.025, which no anytime-valid interval
# reaches before round 4 (its boundary is infinite at 3 rounds), however large the change.
expect_match "$ERR" 'expected: v=slow: .*rounds: auto ~([4-9]|[1-9][0-9]) ' "rounds: auto needs 4 rounds or more"
expect_not_contains "$ERR" "expected: v=base" "the baseline is not judged"
expect_rc 0 ab run --dry-run --rounds auto --max-rounds 6
expect_contains "$ERR" "(max_rounds 6)" "--max-rounds is the one shown"
expect_eq "$(git rev-parse HEAD)" "$head_before" "a dry run commits nothing"
expect_clean "a dry run writes nothing"

# An A/A test: both cells run the same code, so any better/worse verdict is a false positive,
# which a test at alpha = 0.05 makes with probability 5% by design. With the seeds fixed, these
# two trials are two draws that do not (checked when they were chosen), and stay so.
step "identical code: no better/worse verdict"
for start in 0 1000; do
  setup_repo "aa-$start" aa "base, same" base "rounds: 5"
  echo "$start" >"$COUNT"
  expect_rc 0 ab run --seed "$((start + 1))"
  expect_eq "$(run_commits)" 10 "5 rounds x 2 cells (counter from $start)"
  expect_rc 0 ab check
  expect_match "$OUT" '^v=same .*\(paired ×5 ' "same is compared by round (counter from $start)"
  expect_not_match "$OUT" '^v=same .* (better|worse) ' "no better/worse verdict on identical code (counter from $start)"
  expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
  expect_not_match "$(region AB.md results)" '^\| same .* (better|worse),' "nor in the document"
done

step "rounds: auto stops early on a big change"
setup_repo auto-big big "base, slow, fast" base "rounds: auto" "max_rounds: 12"
echo 0 >"$COUNT"
expect_rc 0 ab run --seed 3
expect_contains "$ERR" "rounds: auto, up to 12 rounds of 2 cells"
expect_match "$ERR" '^abtrack: v=slow: worse t \+[0-9.]+% \[\+[0-9.]+%, \+[0-9.]+%\] \(decided after [2-5] rounds\)$' "slow decided worse within 5 of 12 rounds"
expect_match "$ERR" '^abtrack: v=fast: better t -[0-9.]+% \[-[0-9.]+%, -[0-9.]+%\] \(decided after [2-5] rounds\)$' "fast decided better within 5 of 12 rounds"
last=$(last_round big)
expect_true "the records' schedule stops at round $last, well below max_rounds 12" test "$last" -le 5
expect_eq "$(json runs/big/0001.json 'd["schedule"]["design"]')" auto "the records say the design"
expect_eq "$(json runs/big/0001.json 'd["schedule"]["rounds"]')" 12 "and its max_rounds"
n_runs=$(run_commits)
expect_true "at most $last rounds of 3 cells ($n_runs runs)" test "$n_runs" -le "$((3 * last))"
expect_eq "$(ls runs/big/*.json | wc -l | tr -d ' ')" "$n_runs" "one commit per record"
expect_rc 1 ab check
expect_match "$OUT" '^v=slow .* worse \(' "check: slow worse"
expect_match "$OUT" '^v=fast .* better \(' "check: fast better"
expect_records_valid runs/big/*.json
head_before=$(git rev-parse HEAD)
expect_rc 0 ab run --dry-run
expect_match "$ERR" '^abtrack: expected: v=slow: t \+[0-9.]+%, per-round noise [0-9.]+% \(from [0-9]+ paired rounds\): fixed rounds ~[0-9]+, rounds: auto ~[0-9]+ \(max_rounds 12\)$' \
  "dry run of an auto plan: the expected rounds with its max_rounds"
expect_eq "$(git rev-parse HEAD)" "$head_before" "the dry run commits nothing"
expect_clean

step "rounds: auto runs to max_rounds on no change"
setup_repo auto-none none "base, same" base "rounds: auto" "max_rounds: 4"
echo 0 >"$COUNT"
expect_rc 0 ab run --seed 5
expect_match "$ERR" '^abtrack: v=same: undecided after 4 rounds \(max_rounds 4\)' "identical code: undecided at max_rounds"
expect_eq "$(last_round none)" 4 "the records reach round 4"
expect_eq "$(run_commits)" 8 "4 rounds x 2 cells"
expect_rc 0 ab check
expect_not_match "$OUT" '^v=same .* (better|worse) ' "no better/worse verdict"
# --rounds auto on the command line, over a plan's fixed rounds, with --max-rounds.
setup_repo auto-cli cli "base, same" base "rounds: 3"
echo 0 >"$COUNT"
expect_rc 0 ab run --rounds auto --max-rounds 3 --seed 5
expect_contains "$ERR" "v=same: undecided after 3 rounds (max_rounds 3)"
expect_eq "$(run_commits)" 6 "--max-rounds 3 over the default 20"

step "an unfinished rounds: auto batch is continued by the next run, not started over"
# The first run stops at --max-rounds 3, undecided, below the plan's max_rounds 6 (as a budget
# or an interrupted run stops one): the next `run` adds rounds 4-6 to the same batch, judged
# with the first three; once the batch is finished, `run` has nothing to do.
setup_repo auto-resume resume "base, same" base "rounds: auto" "max_rounds: 6"
echo 0 >"$COUNT"
expect_rc 0 ab run --seed 5 --max-rounds 3
expect_contains "$ERR" "v=same: undecided after 3 rounds (max_rounds 3)"
batch=$(json runs/resume/0001.json 'd["schedule"]["batch"]')
expect_rc 0 ab run --seed 6
expect_contains "$ERR" "continuing batch $batch after its round 3"
expect_contains "$ERR" "v=same: undecided after 6 rounds (max_rounds 6)"
expect_eq "$(run_commits)" 12 "rounds 4-6 of both cells added"
expect_eq "$(last_round resume)" 6 "the records go on from round 4"
expect_eq "$(json runs/resume/0012.json 'd["schedule"]["batch"]')" "$batch" "in the same batch"
expect_rc 0 ab check
expect_match "$OUT" '^v=same .*\(paired ×6 \(auto' "check judges the batch's 6 rounds together"
expect_rc 0 ab run
expect_contains "$ERR" "nothing to do" "a finished batch is not continued"
expect_eq "$(run_commits)" 12
expect_rc 0 ab run --all --max-rounds 2 --seed 7
expect_not_contains "$ERR" "continuing" "--all starts a new batch"
expect_true "with a new id" test "$(json runs/resume/0016.json 'd["schedule"]["batch"]')" != "$batch"

step "an unfinished batch is not continued on other code"
# Rounds on new code pool apart from the batch's: continuing would give them only the rounds the
# batch has left. `run` says so and has nothing to do; `--all` starts a batch on the new code.
setup_repo auto-newcode newcode "base, same" base "rounds: auto" "max_rounds: 6"
echo 0 >"$COUNT"
expect_rc 0 ab run --seed 5 --max-rounds 3
batch=$(json runs/newcode/0001.json 'd["schedule"]["batch"]')
echo "# new code" >>bench.sh && git commit -q -am "new code" || die "git commit"
expect_rc 0 ab run --seed 6
expect_contains "$ERR" "not continuing the unfinished rounds: auto batch $batch (3 of 6 rounds): it measured code"
expect_contains "$ERR" "\`abtrack run --all\` starts a batch on this code"
expect_not_contains "$ERR" "continuing batch"
expect_eq "$(run_commits)" 6 "nothing run on the new code"
expect_rc 0 ab run --dry-run
expect_eq "$(run_commits)" 6 "a dry run records nothing"
git revert --no-edit HEAD >/dev/null || die "git revert"
expect_rc 0 ab run --seed 6 --max-rounds 4
expect_contains "$ERR" "continuing batch $batch after its round 3" "back on the batch's code, it goes on"
expect_eq "$(run_commits)" 8 "round 4 of both cells"

step "an unfinished batch is continued only on the kind of GPU it ran on"
# Rounds on an H100 do not pair with rounds on an H200: `run` on another card refuses to go on
# with the batch (exit 3, nothing recorded) and says how to start one there; on the same card
# it goes on. The cards are the fake NVML's (tests/fake_nvml/).
FAKE=${ABTRACK_BUILD_DIR:-$E2E_DIR/../../build}/tests/libfakenvml.so
[ -f "$FAKE" ] || die "the fake NVML is not built: $FAKE (cmake --build build --target fakenvml)"
on() { local name=$1; shift; env ABTRACK_NVML_LIBRARY="$FAKE" FAKE_NVML_NAME="$name" "$ABTRACK" "$@"; }
setup_repo auto-cards cards "base, same" base "rounds: auto" "max_rounds: 6"
echo 0 >"$COUNT"
expect_rc 0 on "Card A" run --seed 5 --max-rounds 3
batch=$(json runs/cards/0001.json 'd["schedule"]["batch"]')
expect_eq "$(json runs/cards/0006.json 'd["env"]["gpus"][0]["name"]')" "Card A"
expect_rc 3 on "Card B" run --seed 6
expect_contains "$ERR" "abtrack: error: the unfinished rounds: auto batch $batch (3 of 6 rounds) ran on Card A; this machine has Card B"
expect_contains "$ERR" "abtrack run --all"
expect_eq "$(run_commits)" 6 "nothing recorded on the other card"
expect_eq "$(git status --porcelain)" "" "the work tree is as it was"
expect_rc 0 on "Card A" run --seed 6
expect_contains "$ERR" "continuing batch $batch after its round 3"
expect_eq "$(run_commits)" 12 "rounds 4-6 on the same card"
expect_rc 0 on "Card B" run
expect_contains "$ERR" "nothing to do"
expect_contains "$ERR" "the cells' latest runs are on Card A; this machine has Card B: \`abtrack run --all\` measures every cell here"
expect_rc 0 on "Card A" run
expect_not_contains "$ERR" "latest runs are on" "on their own card, nothing more is said"
expect_rc 0 on "Card B" run --all --max-rounds 2 --seed 7
expect_true "--all starts a batch on the other card" test "$(json runs/cards/0016.json 'd["schedule"]["batch"]')" != "$batch"
expect_rc 0 ab check
expect_match "$OUT" '^v=same .*\(paired ×2 \(auto' "the check reads the new card's pool: its 2 rounds, not the other card's 6"

# The per-round medians tie (the same ratio of medians in both rounds), the samples vary: that is
# no exact change, and 2 rounds cannot show that +0.4% is beyond min_effect 0.5%. Each trial is new
# code (a comment in bench.sh: a new pool), with the counter from its seed; the seeds are ones
# whose medians tie, which the test checks, so it exercises what it says.
step "integer-rounded samples whose per-round medians tie: no exact verdict, no worse"
setup_repo ties ties "lo, hi" lo "rounds: 2"
for seed in 16 56 72 116; do
  echo "# trial $seed" >>bench.sh && git commit -q -am "trial $seed" || die "git commit"
  echo "$seed" >"$COUNT"
  expect_rc 0 ab run --all --seed "$seed"
  expect_eq "$("$PY" - runs/ties <<'PY'
import glob, json, statistics, sys
recs = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
batch = recs[-1]["schedule"]["batch"]
med = {(r["schedule"]["round"], r["cell"]["v"]): statistics.median(r["metrics"]["t"]["samples"])
       for r in recs if r["schedule"]["batch"] == batch}
samples = [x for r in recs if r["schedule"]["batch"] == batch for x in r["metrics"]["t"]["samples"]]
ratios = {med[(k, "hi")] / med[(k, "lo")] for (k, v) in med if v == "lo"}
print(len(med), len(ratios), all(x == int(x) for x in samples), len(set(samples)) > 1)
PY
)" "4 1 True True" "seed $seed: 2 rounds of 2 cells, one ratio of medians, whole-number samples that vary"
  expect_rc 0 ab check
  expect_match "$OUT" '^v=hi .*\(paired ×2 ' "seed $seed: compared by round"
  expect_not_contains "$OUT" "exact" "seed $seed: no exact verdict"
  expect_not_match "$OUT" '^v=hi .* worse ' "seed $seed: not worse"
  expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
  results=$(region AB.md results)
  expect_not_contains "$results" "exact" "seed $seed: the document has no exact verdict"
  expect_not_match "$results" '^\| hi .* worse,' "seed $seed: nor worse"
done

step "bad rounds input: an error at its line, nothing written"
setup_repo bad bad "base, slow" base "rounds: 3"
echo 0 >"$COUNT"
head_before=$(git rev-parse HEAD)
# refused ERROR HINT: run and init both exit 2 with ERROR and HINT, and write nothing: git log
# unchanged, git status shows only the user's own plan edit, nothing measured.
refused() {
  local cmd
  for cmd in run init; do
    expect_rc 2 ab $cmd
    expect_contains "$ERR" "$1"
    expect_contains "$ERR" "$2"
    expect_eq "$(git rev-parse HEAD)" "$head_before" "git log unchanged ($cmd: $1)"
    expect_eq "$(git status --porcelain --untracked-files=all)" " M abtrack.yaml" "git status: only the plan edit ($cmd: $1)"
  done
}
write_plan bad "base, slow" base "rounds: auto"
sed -i '/^baseline:/d' abtrack.yaml
refused "abtrack: error: abtrack.yaml:4:9: rounds: auto runs until each cell's comparison with its baseline is decided, and the plan names no baseline" \
  "hint: add baseline: {axis: value} (with revisions:, e.g. baseline: {rev: base}), or give a number of rounds"
sed -i 's/^rounds: auto$/rounds: 2/' abtrack.yaml
expect_rc 2 ab run --rounds auto
expect_contains "$ERR" "abtrack: error: rounds: auto runs until each cell's comparison with its baseline is decided, and the plan names no baseline" \
  "--rounds auto on a plan without a baseline"
expect_eq "$(git rev-parse HEAD)" "$head_before" "git log unchanged (--rounds auto, no baseline)"
write_plan bad "base, slow" base "rounds: auto"
sed -i 's/, better: lower//' abtrack.yaml
refused "abtrack: error: abtrack.yaml:5:9: rounds: auto needs a metric with better: to decide on, and the plan has none" \
  "hint: add better: lower (or higher) to the metric you compare"
write_plan bad "base, slow" base "rounds: auto" "max_rounds: 1"
refused "abtrack: error: abtrack.yaml:6:13: max_rounds must be a whole number from 2 to 10000, not 1" \
  "hint: rounds: auto needs at least 2 rounds to see how much the rounds vary"
write_plan bad "base, slow" base "rounds: auto" "budget: soon"
refused "abtrack: error: abtrack.yaml:6:9: budget must be a duration, not 'soon'" "hint: e.g. budget: 30m, 2h, 1h30m or 90s"
git checkout -q abtrack.yaml
for args in "--max-rounds 4" "--budget 1m"; do
  expect_rc 2 ab run $args
  expect_contains "$ERR" "abtrack: error: --max-rounds and --budget are for rounds: auto" "$args without --rounds auto"
  expect_contains "$ERR" "hint: add --rounds auto"
done
expect_rc 2 ab run --rounds auto --max-rounds 1
expect_contains "$ERR" "--max-rounds must be a whole number from 2 to 10000, not '1'"
expect_rc 2 ab run --rounds auto --budget soon
expect_contains "$ERR" "--budget must be a duration, not 'soon'"
expect_eq "$(git rev-parse HEAD)" "$head_before" "git log unchanged after the usage errors"
expect_clean "and the work tree clean"
expect_eq "$(cat "$COUNT" 2>/dev/null || echo 0)" 0 "nothing was measured"
done_testing
