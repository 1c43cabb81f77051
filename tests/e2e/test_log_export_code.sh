#!/usr/bin/env bash
# `abtrack log` and `abtrack export` say which code each run measured: the commit (12 digits),
# with "+snapshot ID" for a snapshot of the work tree; for a plan with revisions, the cell's
# rev=NAME and the commit that revision resolved to.
source "$(dirname "$0")/lib.sh"

new_repo logcode
echo 10 >code.txt
git add code.txt && git commit -q -m "user: the code"
git checkout -q -b other
echo 20 >code.txt && git commit -q -am "user: other code"
other=$(git rev-parse other)
git checkout -q main
cat >abtrack.yaml <<'EOF2'
experiment: lc
doc: AB.md
revisions: {base: other, mine: WORKTREE}
baseline: {rev: base}
rounds: 1
command: 'echo "{\"t\": [$(cat code.txt)]}"'
metrics:
  t: {json: t, better: lower}
EOF2
expect_rc 0 ab init
echo 30 >code.txt   # mine: the work tree, uncommitted
expect_rc 0 ab run --seed 1
mine_rec=$(grep -l '"rev": "mine"' runs/lc/*.json | head -1)
head12=$(json "$mine_rec" 'd["code"]["commit"][:12]')
snap12=$(json "$mine_rec" 'd["code"]["snapshot"][:12]')
expect_match "$snap12" '^[0-9a-f]{12}$' "mine ran on a snapshot"
base_code=${other:0:12}
mine_code="$head12 +snapshot $snap12"
mine_re="$head12 \\+snapshot $snap12"   # as an extended regex

step "log: the code of each run"
expect_rc 0 ab log
expect_match "$OUT" "^[0-9a-f]{12} +1  [^ ]+  pass +rev=base  code $base_code\$" "base's run names the commit 'other' resolved to"
expect_match "$OUT" "^[0-9a-f]{12} +2  [^ ]+  pass +rev=mine  code $mine_re\$" "mine's run names the snapshot"
expect_rc 0 ab log --all
expect_contains "$OUT" "rev=mine  code $mine_code  (lc)"
expect_rc 0 ab log --json
expect_eq "$(json "$OUT" '[e["code"] for e in d][-1]')" "$other" "--json keeps the trailer in full"

step "export: a code column"
expect_rc 0 ab export --format csv
expect_eq "$(head -1 "$OUT" | tr -d '\r')" "run,rev,outcome,t,t delta_pct,t delta_abs,t verdict,reason,code" "the CSV header"
expect_match "$OUT" "^1,base,pass,20,,,baseline,,$base_code"$'\r'"?\$" "base's row: the commit it measured"
expect_match "$OUT" "^2,mine,pass,30,[^,]*,,[^,]*,,$mine_re"$'\r'"?\$" "mine's row: HEAD and the snapshot"
expect_rc 0 ab export --format json
expect_eq "$(json "$OUT" '[r["code"] for r in d]')" "[\"$base_code\", \"$mine_code\"]" "json: the code of each run"
expect_rc 0 ab export --format md
expect_contains "$OUT" "| reason | code |" "markdown: the code column"
expect_rc 0 ab export --format json --cells
expect_eq "$(json "$OUT" '[r["code"] for r in d]')" "[\"$base_code\", \"$mine_code\"]" "--cells: the code of each cell's pool"

done_testing
