#!/usr/bin/env bash
# Per-run export shows each run's own recorded comparison: the number its result line, its
# commit and its record gave, not one recomputed against today's baseline pool (a later run of
# the baseline cell changes the pool, not what an earlier run said).
source "$(dirname "$0")/lib.sh"

new_repo
SCALE=$WORK/scale   # outside the repository: the code stays the same, so the baseline runs pool
echo 100 >"$SCALE"
cat >abtrack.yaml <<YAML
experiment: rec
doc: AB.md
axes: {v: [a, b]}
baseline: {v: a}
command: python3 -c 'import json,sys; s=float(open(sys.argv[2]).read()) if sys.argv[1]=="a" else 90.0; print(json.dumps({"t":[s*(1+0.002*i) for i in range(8)]}))' {v} $SCALE
metrics:
  t: {json: t, better: lower, unit: us}
YAML
git add abtrack.yaml && git commit -q -m plan || die "git commit"
expect_rc 0 ab init

step "run 1 (baseline), run 2 (variant, compared with run 1), run 3 (baseline again, slower)"
expect_rc 0 ab step --cell v=a
expect_rc 0 ab step --cell v=b
LINE=$(grep '^run 2 ' "$OUT")
expect_match "$LINE" '^run 2 v=b: pass  t 90\.[0-9]+ \(-10\.[0-9]% better\)' "run 2's result line"
SAID=$(printf '%s' "$LINE" | sed -E 's/.*\(([-+][0-9.]+)% better\).*/\1/')
expect_contains "$(git log -1 --format=%B)" "; ${SAID}% better" "the commit body says the same change"
echo 300 >"$SCALE"
expect_rc 0 ab step --cell v=a
expect_eq "$(json runs/rec/0002.json '"%+.1f" % d["comparison"]["metrics"]["t"]["delta_pct"]')" "$SAID" "the record says the same change"

step "export: run 2's row is its recorded comparison"
expect_rc 0 ab export --format json
expect_eq "$(json "$OUT" '"%+.1f" % [r for r in d if r["run"] == 2][0]["t delta_pct"]')" "$SAID" \
  "per-run export shows run 2's own change, not one against the pool of runs 1 and 3"
expect_eq "$(json "$OUT" '[r for r in d if r["run"] == 2][0]["t verdict"]')" "better" "and its own verdict"
expect_rc 0 ab export --format md
expect_contains "$OUT" "| 2 | b | pass | 90.63 | ${SAID}% |" "the markdown row, rounded as the document rounds"
# The per-cell export is today's view: the variant against the pool of runs 1 and 3.
expect_rc 0 ab export --format json --cells
expect_eq "$(json "$OUT" 'd[1]["runs"]')" "2" "the variant cell's pool"
expect_eq "$(json "$OUT" 'd[1]["t delta_pct"] < -40')" "true" "per cell: against today's baseline pool (runs 1 and 3)"
done_testing
