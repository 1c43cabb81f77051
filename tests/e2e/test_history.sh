#!/usr/bin/env bash
# History: log and log --json come from git (not the work tree); verify catches a hand-edited
# region and an uncommitted record; render restores the regions without committing; compare
# of two runs and of two sample files, with clear usage errors.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: hist
doc: AB.md
axes:
  v: [a, b]
command: python3 -c 'import json,sys; base=10 if sys.argv[1]=="a" else 20; print(json.dumps({"time_us":[base+i*0.5 for i in range(8)]}))' {v}
metrics:
  time_us: {json: time_us, better: lower, unit: us}
EOF
expect_rc 0 ab init
expect_rc 0 ab run
expect_rc 0 ab step --cell v=a
cat >other.yaml <<'EOF'
experiment: other
doc: OTHER.md
axes:
  k: [1]
command: echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab -p other.yaml init
expect_rc 0 ab -p other.yaml step
RUN_COMMITS=$(git log --format='%H|%(trailers:key=Abtrack-Experiment,valueonly,separator=%x2C)|%(trailers:key=Abtrack-Run,valueonly,separator=%x2C)' |
  awk -F'|' '$2=="hist" && $3!="" {print $1}' | tr '\n' ' ')

step "log"
expect_rc 0 ab log
expect_eq "$(grep -c . "$OUT")" 3 "log lists the 3 runs of this experiment (and not the other experiment's)"
expect_not_contains "$OUT" "k=1" "log without --all omits other experiments"
expect_eq "$(awk '{print $2}' "$OUT" | tr '\n' ' ')" "3 2 1 " "log: newest first"
expect_match "$(sed -n 1p "$OUT")" '^[0-9a-f]{7,}.*3.*pass.*v=a' "log line: commit, run, outcome, cell"
cp "$OUT" "$WORK/log.txt"
expect_rc 0 ab log --json
cp "$OUT" "$WORK/log.json"
expect_eq "$(json "$WORK/log.json" '[e["run"] for e in d]')" "[3, 2, 1]" "log --json: runs newest first"
expect_eq "$(json "$WORK/log.json" '" ".join(e["commit"] for e in d) + " "')" "$RUN_COMMITS" "log --json: the commits git shows"
expect_eq "$(json "$WORK/log.json" '[e["cell"] for e in d]')" '["v=a", "v=b", "v=a"]' "log --json: cells"
expect_eq "$(json "$WORK/log.json" '[e["outcome"] for e in d]')" '["pass", "pass", "pass"]' "log --json: outcomes"
expect_eq "$(json "$WORK/log.json" 'sorted({k for e in d for k in ("commit","run","cell","outcome","date") if k not in e})')" "[]" "log --json entries have commit, run, cell, outcome, date"
expect_rc 0 ab log --all
expect_contains "$OUT" "k=1" "log --all includes the other experiment"

step "log reads git, not the work tree"
rm -rf runs
expect_rc 0 ab log
expect_file_eq "$WORK/log.txt" "$OUT" "log output changed when runs/ was deleted from the work tree"
expect_rc 0 ab log --json
expect_file_eq "$WORK/log.json" "$OUT" "log --json changed when runs/ was deleted"
git checkout -q -- runs
expect_clean

step "verify: hand-edited region"
expect_rc 0 ab verify
cp AB.md "$WORK/AB.committed"
python3 - <<'PY'
import re
t = open("AB.md", encoding="utf-8").read()
b = t.index("<!-- abtrack:begin results -->"); e = t.index("<!-- abtrack:end results -->")
region = t[b:e]
assert "| pass |" in region
t = t[:b] + region.replace("| pass |", "| HANDEDITED |", 1) + t[e:]
open("AB.md", "w", encoding="utf-8").write(t)
PY
expect_rc 1 ab verify
cat "$OUT" "$ERR" >"$WORK/verify.out"
expect_match "$WORK/verify.out" '^-.*HANDEDITED' "verify shows a diff with the hand-edited line"
expect_match "$WORK/verify.out" '^\+.*\| pass \|' "verify shows the rendered line"
expect_contains "$WORK/verify.out" "results" "verify names the region"
H=$(git rev-parse HEAD)
expect_rc 0 ab render
expect_eq "$(git rev-parse HEAD)" "$H" "render does not commit"
expect_file_eq "$WORK/AB.committed" AB.md "render restores the region"
expect_rc 0 ab verify
expect_clean

step "verify: prose edits are the user's business"
printf '\nAn uncommitted observation.\n' >>AB.md
expect_rc 0 ab verify
git checkout -q -- AB.md

step "verify: a region marker removed"
grep -v 'abtrack:end runs' AB.md >"$WORK/broken.md" && cp "$WORK/broken.md" AB.md
run_cmd ab verify
expect_true "verify fails when a region's end marker is missing (exit $RC)" test "$RC" = 1 -o "$RC" = 2
expect_match "$ERR" '^abtrack: (error|warning): ' "a broken region is reported"
git checkout -q -- AB.md

step "verify: uncommitted and untracked records"
sed 's/"run": 1,/"run": 9,/' runs/hist/0001.json >runs/hist/0009.json
expect_rc 1 ab verify
expect_contains "$(cat "$OUT" "$ERR")" "0009.json" "verify names the untracked record"
rm runs/hist/0009.json
printf '\n' >>runs/hist/0002.json
expect_rc 1 ab verify
expect_contains "$(cat "$OUT" "$ERR")" "0002.json" "verify names the modified record"
git checkout -q -- runs
expect_rc 0 ab verify

step "render from the committed records"
rm -rf runs
expect_rc 0 ab render
expect_file_eq "$WORK/AB.committed" AB.md "render uses the committed records, not the work tree"
git checkout -q -- runs
expect_clean

step "compare two runs"
expect_rc 0 ab compare 1 2 --json
cp "$OUT" "$WORK/cmp.json"
expect_eq "$(json "$WORK/cmp.json" 'sorted(k for k in ["median_a","median_b","ci_a","ci_b","p_value","delta_pct","delta_ci_pct","verdict","n_a","n_b"] if k not in d)')" "[]" "compare --json has the documented keys"
expect_eq "$(json "$WORK/cmp.json" 'd["n_a"]')" "$(json runs/hist/0001.json 'len(d["metrics"]["time_us"]["samples"])')" "n_a is run 1's sample count"
expect_eq "$(json "$WORK/cmp.json" 'd["median_a"]')" "$(json runs/hist/0001.json 'd["metrics"]["time_us"]["summary"]["median"]')" "median_a is run 1's median"
expect_eq "$(json "$WORK/cmp.json" 'd["median_b"]')" "$(json runs/hist/0002.json 'd["metrics"]["time_us"]["summary"]["median"]')" "median_b is run 2's median"
expect_eq "$(json "$WORK/cmp.json" 'd["verdict"]')" worse "8 vs 8 separated samples, lower is better, B slower: worse"
expect_eq "$(json "$WORK/cmp.json" 'd["delta_pct"] > 0 and d["p_value"] < 0.05')" true "B is slower and significant"
expect_rc 0 ab compare 2 1 --json
expect_eq "$(json "$OUT" 'd["verdict"]')" better "reversed: better"
expect_rc 0 ab compare 1 3 --json
expect_true "identical samples: not better/worse ($(json "$OUT" 'd["verdict"]'))" test "$(json "$OUT" 'd["verdict"] in ("same", "equivalent", "inconclusive")')" = true
expect_rc 0 ab compare 1 2
expect_contains "$OUT" "worse" "compare prints the verdict"
expect_rc 2 ab compare 1 99
expect_contains "$ERR" "99" "an unknown run is named"
expect_rc 2 ab compare 1
expect_match "$ERR" '^abtrack: error: ' "compare with one run"

step "compare --samples"
seq 1 10 >"$WORK/a.txt"
seq 5 14 >"$WORK/b.txt"
expect_rc 0 ab compare --samples "$WORK/a.txt" "$WORK/b.txt" --json
expect_eq "$(json "$OUT" '(d["n_a"], d["n_b"], d["median_a"], d["median_b"])')" "(10, 10, 5.5, 9.5)" "sample files: n and medians"
expect_eq "$(json "$OUT" 'd["verdict"]')" worse "higher values with lower better: worse"
expect_rc 0 ab compare --samples "$WORK/a.txt" "$WORK/b.txt" --better higher --json
expect_eq "$(json "$OUT" 'd["verdict"]')" better "--better higher flips the verdict"
: >"$WORK/empty.txt"
expect_rc 2 ab compare --samples "$WORK/a.txt" "$WORK/empty.txt"
expect_match "$ERR" "^abtrack: error: .*empty\\.txt" "an empty sample file is named"
printf '1.5\n2.5\nfast\n3\n' >"$WORK/words.txt"
expect_rc 2 ab compare --samples "$WORK/words.txt" "$WORK/a.txt"
expect_match "$ERR" "^abtrack: error: .*words\\.txt:3" "the non-number line is named with its line number"
expect_contains "$ERR" "fast"
printf '1\nnan\n2\n' >"$WORK/nan.txt"
expect_rc 2 ab compare --samples "$WORK/nan.txt" "$WORK/a.txt"
expect_match "$ERR" "^abtrack: error: .*nan\\.txt:2" "NaN in a sample file is rejected with its line"
run_cmd ab compare --samples "$WORK/a.txt" "$WORK/missing.txt"
expect_true "a missing sample file is an error (exit $RC)" test "$RC" = 2 -o "$RC" = 3
expect_contains "$ERR" "missing.txt" "the missing file is named"
expect_clean "compare writes nothing"

done_testing
