#!/usr/bin/env bash
# `warmup: N` drops the first N samples of every invocation from the analysis: the record keeps
# them apart (`warmup_samples`), the medians, comparisons and the document use only the rest, the
# document says how many were dropped, and gates still hold for every sample. A warm-up that would
# drop every sample an invocation gives is an error naming the plan's line, with nothing written;
# a warm-up that is not a whole number >= 0 is a plan error.
source "$(dirname "$0")/lib.sh"

new_repo
# Each invocation prints two slow first samples (100), then 10 11 12 (times k); and one err value.
cat >bench.sh <<'SH'
k=$1
echo "{\"t\": [100, 100, $((10 * k)), $((11 * k)), $((12 * k))], \"err\": 0}"
SH
cat >abtrack.yaml <<'YAML'
experiment: wu
doc: AB.md
axes: {k: [1, 2]}
baseline: {k: 1}
repeats: 2
warmup: 2
command: sh bench.sh {k}
metrics:
  t: {json: t, better: lower, unit: us}
  err: {json: err, warmup: 0}
gates: [t < 1000, err == 0]
YAML
git add . && git commit -q -m plan || die "git commit"
expect_rc 0 ab init

step "the record keeps the warm-up samples apart"
expect_rc 0 ab run
expect_contains "$OUT" "run 1 k=1: pass  t 11" "the result line: the median of the kept samples (12 with the warm-up ones)"
R=runs/wu/0001.json
expect_eq "$(json "$R" 'd["metrics"]["t"]["samples"]')" "[10.0, 11.0, 12.0, 10.0, 11.0, 12.0]"
expect_eq "$(json "$R" 'd["metrics"]["t"]["warmup_samples"]')" "[100.0, 100.0, 100.0, 100.0]"
expect_eq "$(json "$R" 'd["metrics"]["t"]["warmup"]')" "2"
expect_eq "$(json "$R" 'd["metrics"]["t"]["summary"]["median"]')" "11.0"
expect_eq "$(json "$R" 'd["metrics"]["t"]["summary"]["n"]')" "6"
expect_eq "$(json "$R" 'd["metrics"]["err"]["samples"]')" "[0.0, 0.0]" "a metric's warmup: 0 keeps its one sample per invocation"
expect_eq "$(json "$R" '"warmup_samples" in d["metrics"]["err"]')" "false"
expect_eq "$(json "$R" 'd["gates"][0]["worst"]')" "100.0" "gates hold for the warm-up samples too"
expect_eq "$(json runs/wu/0002.json 'd["comparison"]["metrics"]["t"]["baseline_median"]')" "11.0"
expect_eq "$(json runs/wu/0002.json 'd["comparison"]["metrics"]["t"]["median"]')" "22.0"
expect_records_valid runs/wu/*.json

step "a --record file is one invocation: its first samples are warm-up too"
sh bench.sh 2 >"$WORK/out.json"
expect_rc 0 ab step --cell k=2 --record "$WORK/out.json" --no-commit
expect_contains "$OUT" "k=2: pass  t 22"
expect_eq "$(git status --porcelain)" "" "a dry run writes nothing"

step "the document uses the kept samples and says how many were dropped"
expect_contains AB.md "| 1 | 6 | 11 [10, 12] | baseline |"
expect_contains AB.md "| 2 | 6 | 22 [20, 24] |"
expect_contains AB.md "The first 2 samples of every invocation were dropped as warm-up (\`warmup: 2\`; none of \`err\`)"
expect_rc 0 ab verify

step "a gate that only a warm-up sample breaks fails the run"
sed -i 's/gates: \[t < 1000, err == 0\]/gates: [t < 50, err == 0]/' abtrack.yaml
expect_rc 1 ab step --cell k=1 --no-commit
expect_contains "$OUT" "gate 't < 50' does not hold: worst 100 (4 of 10 samples, warm-up included)"
git checkout -q abtrack.yaml

step "another warm-up count starts a new pool"
sed -i 's/^warmup: 2$/warmup: 1/' abtrack.yaml
git commit -q -am "warmup 1" || die "git commit"
expect_rc 0 ab run --all
expect_contains "$OUT" "run 3 k=1: pass"
expect_eq "$(json runs/wu/0003.json 'd["metrics"]["t"]["warmup_samples"]')" "[100.0, 100.0]"
expect_eq "$(json runs/wu/0003.json 'd["metrics"]["t"]["samples"]')" "[100.0, 10.0, 11.0, 12.0, 100.0, 10.0, 11.0, 12.0]"
expect_contains AB.md "| 1 | 8 |" "a pool of its own: the runs with warmup: 2 are not pooled with it"
expect_contains AB.md "The first 1 sample of every invocation were dropped as warm-up (\`warmup: 1\`; none of \`err\`)"

step "warmup at or above the samples an invocation gives: an error, nothing written"
sed -i 's/^warmup: 1$/warmup: 5/' abtrack.yaml
git commit -q -am "warmup 5" || die "git commit"
HEAD_BEFORE=$(git rev-parse HEAD)
expect_rc 2 ab run --all
expect_contains "$ERR" "abtrack: error: abtrack.yaml:6:9: warmup: 5 drops every sample of 't': invocation 1 of 2 of cell k=1 gave 5; nothing was recorded for this run"
expect_contains "$ERR" "hint: warmup must be below the samples one invocation gives"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "git log unchanged"
expect_eq "$(git status --porcelain)" "" "nothing written to the work tree"
expect_eq "$(journal_entries wu | wc -l)" "0" "nothing journaled"
expect_rc 2 ab step --cell k=2
expect_contains "$ERR" "abtrack.yaml:6:9: warmup: 5 drops every sample of 't'"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "git log unchanged after step"
expect_rc 2 ab step --cell k=1 --record "$WORK/out.json"
expect_contains "$ERR" "warmup: 5 drops every sample of 't': the --record file for cell k=1 gave 5"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "git log unchanged after step --record"

step "a metric's own warm-up is named where it is given"
sed -i 's/^warmup: 5$/warmup: 2/; s/err: {json: err, warmup: 0}/err: {json: err, warmup: 1}/' abtrack.yaml
git commit -q -am "err warmup 1" || die "git commit"
HEAD_BEFORE=$(git rev-parse HEAD)
expect_rc 2 ab step --cell k=1
expect_contains "$ERR" "abtrack.yaml:10:28: warmup: 1 drops every sample of 'err': invocation 1 of 2 of cell k=1 gave 1"
expect_contains "$ERR" "metrics: {err: {..., warmup: 0}}"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "git log unchanged"

step "warmup must be a whole number of samples, 0 or more"
for bad in -1 2.5; do
  sed -i "s/^warmup: .*/warmup: $bad/" abtrack.yaml
  expect_rc 2 ab run --all
  expect_contains "$ERR" "abtrack: error: abtrack.yaml:6:9: warmup must be a whole number of samples, 0 or more, not $bad"
  expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "nothing committed for warmup: $bad"
done
sed -i "s/^warmup: .*/warmup: some/" abtrack.yaml
expect_rc 2 ab run --all
expect_contains "$ERR" "abtrack: error: abtrack.yaml:6:9: warmup must be a number, not 'some'"
sed -i "s/^warmup: .*/warmup: 2/; s/err: {json: err, warmup: 1}/err: {json: err, warmup: x}/" abtrack.yaml
expect_rc 2 ab run --all
expect_contains "$ERR" "abtrack.yaml:10:28: metric 'err': warmup must be a number, not 'x'"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE"
done_testing
