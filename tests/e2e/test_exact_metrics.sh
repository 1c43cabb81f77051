#!/usr/bin/env bash
# Deterministic metrics (a size, a register count) get their exact change, marked exact, with no
# p-value, everywhere a verdict shows: the result line, the commit body, the record, the
# document and export. A metric that is 0 on one side (a corrupted count) gets its absolute
# change instead of a bare "—".
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'YAML'
experiment: ex
doc: AB.md
axes: {opt: [O2, O3], batch: [1, 2]}
baseline: {opt: O2}
repeats: 3
command: python3 -c 'import json,sys,random; o3=sys.argv[1]=="O3"; print(json.dumps({"t":[(90 if o3 else 100)*(1+0.01*random.random()) for _ in range(6)],"bytes":3584 if o3 else 4096,"corrupted":3 if o3 else 0}))' {opt}
metrics:
  t: {json: t, better: lower, unit: us}
  bytes: {json: bytes, better: lower, unit: B}
  corrupted: {json: corrupted, better: lower}
YAML
git add abtrack.yaml && git commit -q -m plan || die "git commit"
expect_rc 0 ab init
expect_rc 0 ab step --cell opt=O2,batch=1

step "the result line and the commit body"
expect_rc 0 ab step --cell opt=O3,batch=1
expect_contains "$OUT" "bytes 3584 (-12.5% better (exact))" "the result line: the exact change, no 'inconclusive'"
expect_contains "$OUT" "corrupted 3 (+3 (abs) worse (exact))" "a metric that is 0 on one side: its absolute change"
BODY=$(git log -1 --format=%B)
expect_contains "$BODY" "bytes median 3584 (n=3) vs baseline 4096 (n=3, pool to run 1); -12.5% better (exact)"
expect_contains "$BODY" "corrupted median 3 (n=3) vs baseline 0 (n=3, pool to run 1); +3 (abs) worse (exact)"

step "the record"
R=runs/ex/0002.json
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["bytes"]["exact"]')" "true" "bytes: exact"
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["bytes"]["verdict"]')" "better"
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["bytes"]["p_value"]')" "null" "an exact change has no p-value"
expect_eq "$(json "$R" 'round(d["comparison"]["metrics"]["bytes"]["delta_pct"], 6)')" "-12.5"
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["corrupted"]["delta_abs"]')" "3.0" "corrupted: the absolute change"
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["corrupted"]["delta_pct"]')" "null"
expect_eq "$(json "$R" 'd["comparison"]["metrics"]["t"]["exact"]')" "false" "a noisy metric is not exact"
expect_records_valid runs/ex/*.json

step "the document and export"
expect_rc 0 ab run
expect_contains AB.md "| -12.5% better (exact) |"
expect_contains AB.md "| +3 (abs) worse (exact) |"
expect_not_contains AB.md "inconclusive"
expect_contains AB.md "*(exact)*: every sample of each arm is the same value"
expect_contains AB.md "*(abs)*: a sample is ≤ 0"
expect_contains AB.md "| opt=O3 | -12.5% over 2 of 2 cells | 2 better (exact) |"
expect_rc 0 ab verify
expect_rc 0 ab export --format json --cells
expect_eq "$(json "$OUT" 'd[2]["bytes verdict"]')" "better (exact)"
expect_eq "$(json "$OUT" 'd[2]["corrupted delta_abs"]')" "3"
expect_rc 0 ab export --format json
expect_eq "$(json "$OUT" '[r["bytes verdict"] for r in d if r["opt"] == "O3"]')" '["better (exact)", "better (exact)"]' "per run"

step "compare --samples: constant arms"
printf '4096\n4096\n4096\n' >"$WORK/a.txt"
printf '3584\n3584\n3584\n' >"$WORK/b.txt"
expect_rc 0 ab compare --samples "$WORK/a.txt" "$WORK/b.txt"
expect_contains "$OUT" "B vs A: -12.5%  better (exact)  (p n/a n=3+3)"
done_testing
