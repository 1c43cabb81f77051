#!/usr/bin/env bash
# abtrack check, the CI gate: exit 1 when a cell is worse than its baseline beyond min_effect
# (after Holm, the document's verdicts), when a cell's pool failed a gate, or when a cell's latest
# run is invalid; 4 when nothing was compared (the baseline has no runs, --history finds no earlier
# code, no cell has a run); 0 otherwise (pending cells are listed, they do not fail); 2 for usage
# errors.
# --history compares each cell's newest code with its previous code. Text and markdown output.
source "$(dirname "$0")/lib.sh"

# plan_repo NAME BASELINE_LINE: a fresh repository with bench.sh (committed) and a plan over
# variant a, b, c reading the samples bench.sh prints. bench.sh is written by the caller.
write_plan() {
  cat >abtrack.yaml <<EOF
experiment: gate
doc: AB.md
axes:
  variant: [a, b, c]
$1
command: sh bench.sh {variant}
metrics:
  t: {json: t, better: lower, unit: us}
  err: {json: err}
gates:
  - err <= 0.01
EOF
}

# 8 samples per arm; B_* are 20% above A.
A='[100, 101, 102, 103, 104, 105, 106, 107]'
A2='[107, 106, 105, 104, 103, 102, 101, 100]'
SLOW='[120, 121.2, 122.4, 123.6, 124.8, 126, 127.2, 128.4]'

step "a variant clearly worse: exit 1"
new_repo worse
write_plan "baseline: {variant: a}"
cat >bench.sh <<EOF
case \$1 in
  a) echo '{"t": $A, "err": 0.001}' ;;
  b) echo '{"t": $SLOW, "err": 0.001}' ;;
  c) echo '{"t": $A2, "err": 0.001}' ;;
esac
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
expect_rc 0 ab -q run
expect_rc 1 ab check
cp "$OUT" "$WORK/worse.txt"
expect_contains "$OUT" "abtrack check: gate, each cell against its baseline variant=a"
expect_match "$OUT" '^cell +n +baseline median +median +Δ \[CI\] +verdict +p +outcome$'
expect_match "$OUT" '^variant=b +8 +103\.5 +124\.2 +\+20\.0% \[\+[0-9.]+, \+[0-9.]+\] +worse +[0-9.]+ +pass$'
expect_match "$OUT" '^variant=a +8 +— +103\.5 +— +baseline +— +pass$'
expect_match "$OUT" '^variant=c +8 +103\.5 +103\.5 +'
expect_not_match "$OUT" '^variant=c .* worse '
expect_contains "$OUT" "1 worse, 0 failed gates, 0 invalid"
expect_contains "$OUT" "Holm-adjusted over 2 comparisons"
expect_contains "$OUT" "check failed: worse: variant=b"
# The verdict is the document's: its results table says worse for b, and only for b.
expect_match "$(region AB.md results | grep '| b |')" 'worse'
expect_not_match "$(region AB.md results | grep '| c |')" 'worse'
expect_clean "check writes nothing"

step "--format md: a pull-request comment"
expect_rc 1 ab check --format md
expect_match "$OUT" '^### abtrack check: gate, each cell against its baseline variant=a$'
expect_contains "$OUT" "| cell | n | baseline median | median | Δ [CI] | verdict | p | outcome |"
expect_contains "$OUT" "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |"
expect_match "$OUT" '^\| variant=b \| 8 \| 103\.5 \| 124\.2 \| \+20\.0% \[\+[0-9.]+, \+[0-9.]+\] \| worse \| [0-9.]+ \| pass \|$'
expect_contains "$OUT" "**1 worse, 0 failed gates, 0 invalid**"
expect_eq "$(grep -c '^|' "$OUT")" 5 "md: header, separator and one row per cell"
expect_eq "$(grep '^|' "$OUT" | table_columns | sort -u | tr '\n' ' ')" "8 " "md: every row has 8 columns"
expect_rc 1 ab check --format=text
expect_file_eq "$OUT" "$WORK/worse.txt" "--format=text is the default"

step "nothing worse, a pending cell: exit 0"
new_repo same
write_plan "baseline: {variant: a}"
cat >bench.sh <<EOF
case \$1 in
  a) echo '{"t": $A, "err": 0.001}' ;;
  *) echo '{"t": $A2, "err": 0.001}' ;;
esac
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
expect_rc 0 ab -q step --cell variant=a
expect_rc 0 ab -q step --cell variant=b
expect_rc 0 ab check
expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
expect_contains "$OUT" "1 pending (not measured yet: pending cells do not fail the check)"
expect_match "$OUT" '^variant=c +103\.5 +— +— +pending +— +pending$'
expect_match "$OUT" '^variant=b +8 +103\.5 +103\.5 +'
expect_not_match "$OUT" '^variant=b .* worse '
expect_contains "$OUT" "check passed"
expect_rc 0 ab check --format md
expect_contains "$OUT" "| variant=c |  | 103.5 | — | — | pending | — | pending |"
expect_rc 4 ab check --history
expect_contains "$ERR" "nothing was compared" "--history with a pending cell: no earlier code anywhere"
expect_match "$OUT" '^variant=c .*pending'

step "a comparison across machines or with other code: warned, as the document does"
# variant=b again on another kind of GPU (the fake NVML's): its pool is that run alone, against
# a baseline measured here; variant=c on code changed since the baseline ran.
FAKE=${ABTRACK_BUILD_DIR:-$E2E_DIR/../../build}/tests/libfakenvml.so
[ -f "$FAKE" ] || die "the fake NVML is not built: $FAKE (cmake --build build --target fakenvml)"
expect_rc 0 env ABTRACK_NVML_LIBRARY="$FAKE" FAKE_NVML_NAME="Card B" "$ABTRACK" -q step --cell variant=b
echo "# a comment" >>bench.sh && git_commit_all "user: touch the bench"
expect_rc 0 ab -q step --cell variant=c
expect_rc 0 ab check
machines="variant=b is compared with its baseline across different machines: baseline run 1 on $(hostname)"
expect_contains "$OUT" "⚠ $machines"
expect_contains "$OUT" "; cell run 3 on $(hostname) (Card B, driver 999.99.99)"
expect_contains "$OUT" "⚠ variant=c is compared with a baseline measured on other code: baseline run 1 on"
expect_contains "$(region AB.md summary)" "- ⚠ $machines"
expect_contains "$OUT" "check passed" "a warning does not fail the check"
expect_rc 0 ab check --format md
expect_contains "$OUT" "- ⚠ $machines"
expect_eq "$(grep '^|' "$OUT" | table_columns | sort -u | tr '\n' ' ')" "8 " "md: the table is whole"

step "the baseline has no runs: nothing compared, exit 4"
new_repo nobase
write_plan "baseline: {variant: a}"
cat >bench.sh <<EOF
echo '{"t": $A, "err": 0.001}'
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
expect_rc 4 ab check
expect_contains "$ERR" "abtrack: warning: nothing was compared (no cell has a run): exit 4"
expect_contains "$OUT" "check compared nothing: no cell has a run"
expect_not_contains "$OUT" "check passed"
expect_rc 0 ab -q step --cell variant=b
expect_rc 0 ab -q step --cell variant=c
expect_rc 4 ab check
expect_contains "$ERR" "nothing was compared (the baseline variant=a has no runs): exit 4"
expect_contains "$OUT" "check compared nothing: the baseline variant=a has no runs"
expect_match "$OUT" '^variant=b +8 +— +103\.5 +— +baseline pending +— +pass$'
expect_rc 4 ab -q check --format md
expect_contains "$ERR" "nothing was compared" "-q does not hide it"
expect_contains "$OUT" "check compared nothing: the baseline variant=a has no runs."
expect_rc 0 ab -q step --cell variant=a
expect_rc 0 ab check
expect_contains "$OUT" "check passed"
expect_eq "$(cat "$ERR")" "" "a check that compared something says nothing on stderr"

step "a gate failure: exit 1"
new_repo gate
write_plan "baseline: {variant: a}"
cat >bench.sh <<EOF
case \$1 in
  b) echo '{"t": $A2, "err": 0.5}' ;;
  *) echo '{"t": $A, "err": 0.001}' ;;
esac
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
expect_rc 1 ab -q run
expect_rc 1 ab check
expect_contains "$OUT" "0 worse, 1 failed gates, 0 invalid"
expect_match "$OUT" '^variant=b .* no verdict: a gate failed +— +fail$'
expect_contains "$OUT" "check failed: failed gates: variant=b"

step "an invalid latest run: exit 1, even when the pool's earlier run passed"
new_repo invalid
write_plan "baseline: {variant: a}"
cat >bench.sh <<EOF
[ -n "\${BREAK:-}" ] && exit 7
echo '{"t": $A, "err": 0.001}'
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
expect_rc 0 ab -q run
expect_rc 0 ab check
expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
BREAK=1 expect_rc 1 ab -q step --cell variant=c
expect_eq "$(git log -1 --format=%s)" "abtrack(gate): run 4 variant=c: invalid" "the invalid run is committed"
expect_rc 1 ab check
expect_contains "$OUT" "0 worse, 0 failed gates, 1 invalid"
expect_match "$OUT" '^variant=c .* pass \(latest run invalid\)$'
expect_contains "$OUT" "check failed: invalid: variant=c"
expect_rc 0 ab -q step --cell variant=c
expect_rc 0 ab check
expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid" "a valid run after the invalid one passes the check again"

step "--history: a code change that makes a cell slower"
new_repo history
write_plan ""   # no baseline: plain check only gates runs
cat >bench.sh <<EOF
case \$1 in
  *) echo '{"t": $A, "err": 0.001}' ;;
esac
EOF
git_commit_all "user: bench"
expect_rc 0 ab -q init
OLD=$(git rev-parse --short=12 HEAD)
expect_rc 0 ab -q run
expect_rc 4 ab check --history
expect_contains "$ERR" "nothing was compared (no cell has runs on earlier code): exit 4"
expect_contains "$OUT" "abtrack check --history: gate, each cell's newest code against its earlier code"
expect_match "$OUT" '^cell +n +earlier code +earlier median +median +Δ \[CI\] +verdict +p +outcome$'
expect_eq "$(grep -c 'no earlier code' "$OUT")" 3 "every cell: no earlier code"
expect_contains "$OUT" "0 worse, 0 failed gates, 0 invalid"
expect_contains "$OUT" "check compared nothing: no cell has runs on earlier code"
cat >bench.sh <<EOF
case \$1 in
  b) echo '{"t": $SLOW, "err": 0.001}' ;;
  *) echo '{"t": $A2, "err": 0.001}' ;;
esac
EOF
git_commit_all "user: b gets slower"
NEW=$(git rev-parse --short=12 HEAD)
expect_rc 0 ab -q run --all
expect_rc 0 ab check
expect_contains "$OUT" "no baseline: gates and invalid runs only"
expect_rc 1 ab check --history
expect_match "$OUT" "^variant=b +8 +$OLD → $NEW +103\.5 +124\.2 +\+20\.0% \[\+[0-9.]+, \+[0-9.]+\] +worse +[0-9.]+ +pass$"
expect_match "$OUT" "^variant=a +8 +$OLD → $NEW +103\.5 +103\.5 "
expect_not_match "$OUT" '^variant=[ac] .* worse '
expect_not_contains "$OUT" "no earlier code"
expect_contains "$OUT" "1 worse, 0 failed gates, 0 invalid"
expect_contains "$OUT" "Holm-adjusted over 3 comparisons"
expect_contains "$OUT" "check failed: worse: variant=b"
# A wider band for history across machines: +20% is within ±25%, not within ±10%.
expect_rc 0 ab check --history --min-effect 25%
expect_match "$OUT" "^variant=b +8 .* \+20\.0% .* (~|same|equivalent) "
expect_contains "$OUT" "beyond ±25%"
expect_rc 1 ab check --history --min-effect 10
expect_rc 1 ab check --history --format md
expect_contains "$OUT" "| cell | n | earlier code | earlier median | median | Δ [CI] | verdict | p | outcome |"
expect_match "$OUT" '^\| variant=b \| 8 \| .* \| worse \| '
# A cell measured again on the new code without the earlier code's pool: one new run of a
# single cell on newer code starts its own pool, compared with the code before.
printf '# faster\n' >>bench.sh
git_commit_all "user: comment"
expect_rc 0 ab -q step --cell variant=a
expect_rc 1 ab check --history
expect_match "$OUT" "^variant=a +8 +$NEW → [0-9a-f]{12} +103\.5 +103\.5 "
expect_not_match "$OUT" "^variant=a .*$OLD" "a's newest code is compared with the code just before it"
expect_match "$OUT" "^variant=b +8 +$OLD → $NEW .* worse "

step "usage errors: exit 2; outside a repository: exit 3"
expect_rc 2 ab check --bogus
expect_contains "$ERR" "check: unknown argument '--bogus'"
expect_rc 2 ab check --format csv
expect_contains "$ERR" "--format 'csv' is not text or md"
expect_rc 2 ab check --format
expect_rc 2 ab check --min-effect 120%
expect_contains "$ERR" "--min-effect '120%' is not a percentage from 0% to below 100%"
expect_rc 2 ab check extra
mkdir -p "$WORK/nogit" && cd "$WORK/nogit" || die "cd"
expect_rc 3 ab check

step "help documents it"
expect_rc 0 ab help check
expect_contains "$OUT" "usage: abtrack [-p PLAN] [-q] [-v] check [--format text|md] [--history] [--min-effect PCT]"
expect_contains "$OUT" "2 usage or plan error; 3 environment error"
expect_contains "$OUT" "4 when nothing was compared"
expect_rc 0 ab help
expect_match "$OUT" '^  check +the CI gate'

done_testing
