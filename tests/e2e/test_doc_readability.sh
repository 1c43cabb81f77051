#!/usr/bin/env bash
# What the document, the plot and the markdown export show a reader: a summary table for every
# metric with `better:`, markdown export rounded as the document rounds with units in its
# headers, SI-prefixed tick labels, a log y axis across decades (or when the plan asks for
# one), and no CI in a tooltip of a point without one.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'YAML'
experiment: rd
doc: AB.md
axes: {v: [a, b], size: [1, 100]}
baseline: {v: a}
command: python3 -c 'import json,sys; v,s=sys.argv[1],int(sys.argv[2]); k=0.9 if v=="b" else 1.0; print(json.dumps({"t":[153.2201035*s*k*(1+0.001*i) for i in range(8)],"gbps":[5e6*k*(1+0.001*i) for i in range(8)]}))' {v} {size}
metrics:
  t: {json: t, better: lower, unit: us}
  gbps: {json: gbps, better: higher, unit: B/s}
YAML
git add abtrack.yaml && git commit -q -m plan || die "git commit"
expect_rc 0 ab init
expect_rc 0 ab run

step "the summary covers every better: metric"
expect_contains AB.md "| variant | Δ \`t\` vs baseline (geometric mean) | verdicts |"
expect_contains AB.md "| variant | Δ \`gbps\` vs baseline (geometric mean) | verdicts |"
expect_contains AB.md "| v=b | -10.0% over 2 of 2 cells | 2 worse |" "gbps 10% lower is worse"

step "export --format md: rounded, with units"
expect_rc 0 ab export --format md
expect_not_contains "$OUT" "153.2201035"
expect_contains "$OUT" "| run | v | size | outcome | t (us) | gbps (B/s) | t delta_pct | t delta_abs (us) | t verdict |"
expect_match "$OUT" '^\| 1 \| a \| 1 \| pass \| 153\.8 \| 5017500 \|' "medians as the document rounds them"
expect_contains "$OUT" "| -10.0% |" "changes as the document shows them"
expect_rc 0 ab export --format csv
expect_contains "$OUT" "153.7563739" "CSV keeps the digits"

step "the plot: SI tick labels and a log y axis across decades"
expect_contains AB.svg " M</text>" "5e6 B/s ticks read '5 M'"
expect_not_contains AB.svg "e+06</text>"
expect_contains AB.svg "t (us) (log scale)" "t spans two decades (size 1 and 100): log y"
expect_contains AB.svg ">1 k</text>"
expect_not_contains AB.svg "gbps (B/s) (log scale)"

step "plot: {y: log} and {y: linear}"
sed -i 's/^metrics:/plot: {y: linear}\nmetrics:/' abtrack.yaml
expect_rc 0 ab render
expect_not_contains AB.svg "t (us) (log scale)" "{y: linear} keeps t linear"
sed -i 's/^plot: {y: linear}/plot: {y: log}/' abtrack.yaml
expect_rc 0 ab render
expect_contains AB.svg "gbps (B/s) (log scale)"
sed -i 's/^plot: {y: log}/plot: {y: sideways}/' abtrack.yaml
expect_rc 2 ab render
expect_contains "$ERR" "plot.y must be log or linear, not 'sideways'"
git checkout -q abtrack.yaml AB.md AB.svg

step "a tooltip without a CI for n = 1"
new_repo one
cat >abtrack.yaml <<'YAML'
experiment: one
doc: AB.md
axes: {size: [1, 2]}
command: "echo '{\"t\": 5, \"size\": {size}}'"
metrics:
  t: {json: t, better: lower}
YAML
git add abtrack.yaml && git commit -q -m plan || die "git commit"
expect_rc 0 ab init
expect_rc 0 ab run
expect_contains AB.svg "median 5 (n=1: no 95% CI below 6 samples)"
expect_not_contains AB.svg "95% CI [5, 5]"
done_testing
