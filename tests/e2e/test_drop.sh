#!/usr/bin/env bash
# `abtrack drop RUN` takes back a junk run in one commit: the record goes, the document and the
# plot are re-rendered, a tombstone keeps the number taken (never reused), the user's staged
# changes stay staged and `git status` is clean. `run --dry-run` and `step --no-commit` run and
# print without committing or journaling anything.
source "$(dirname "$0")/lib.sh"

new_repo
cat >cell.sh <<'EOF'
x=$1
echo "{\"t\": [${x}0, ${x}1, ${x}2, ${x}3, ${x}4]}"
EOF
cat >abtrack.yaml <<'EOF'
experiment: dr
doc: AB.md
axes:
  x: [1, 2, 3]
baseline: {x: 1}
command: sh cell.sh {x}
metrics:
  t: {json: t, better: lower}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init

step "dry run: run --dry-run runs and prints, commits nothing"
INIT=$(git rev-parse HEAD)
expect_rc 0 ab run --dry-run
expect_contains "$OUT" "dry run x=1: pass"
expect_contains "$OUT" "dry run x=3: pass"
expect_eq "$(git rev-parse HEAD)" "$INIT" "nothing committed"
expect_eq "$(journal_entries | wc -l | tr -d ' ')" 0 "nothing journaled"
expect_clean
expect_false "no record written" test -e runs/dr

step "run, then drop run 2"
expect_rc 0 ab run
expect_eq "$(ls runs/dr | tr '\n' ' ')" "0001.json 0002.json 0003.json " "three runs"
echo "mine" >user.txt && git add user.txt   # the user's staged change
BEFORE=$(git rev-parse HEAD)
expect_rc 0 ab drop 2 --reason "wrong binary"
expect_eq "$(git rev-list --count "$BEFORE"..HEAD)" 1 "one commit"
expect_eq "$(git log -1 --format=%s)" "abtrack(dr): drop run 2" "subject"
trailers=$(git log -1 --format=%B | git interpret-trailers --parse)
expect_contains "$trailers" "Abtrack-Experiment: dr"
expect_contains "$trailers" "Abtrack-Dropped: 2"
expect_contains "$(git log -1 --format=%B)" "wrong binary" "the reason is in the message"
expect_false "the record is gone from HEAD" git cat-file -e HEAD:runs/dr/0002.json
expect_false "and from the work tree" test -e runs/dr/0002.json
expect_eq "$(git diff --cached --name-only)" "user.txt" "the user's staged change is still staged, nothing else"
git reset -q user.txt && rm user.txt
expect_clean "after drop"
expect_fsck
expect_rc 0 ab verify
expect_not_match "$(region AB.md results)" '\| 2 \|.*\| 2 \|' "run 2 is out of the results"
expect_rc 0 ab status
expect_contains "$OUT" "pending" "x=2 is pending again"

step "numbers are never reused"
expect_rc 0 ab step
expect_contains "$OUT" "run 4 x=2: pass" "the next run is 4, not 2"
expect_rc 0 ab drop 4
expect_rc 0 ab step
expect_contains "$OUT" "run 5 x=2: pass" "dropping the newest run does not free its number"
expect_clean
expect_rc 0 ab log
expect_match "$OUT" 'dropped' "log shows the drop"
expect_eq "$(grep -c ' 2  ' "$OUT")" 2 "log: run 2 and its drop"

step "mistakes"
expect_rc 2 ab drop 2
expect_contains "$ERR" "run 2 was dropped"
expect_rc 2 ab drop 99
expect_contains "$ERR" "no run 99"
expect_rc 2 ab drop
expect_contains "$ERR" "drop needs a run number"
expect_rc 2 ab drop x
echo "edit" >>AB.md
expect_rc 3 ab drop 1
expect_contains "$ERR" "uncommitted changes in AB.md"
git checkout -q AB.md
expect_clean

step "dry run: step --no-commit compares with HEAD's records"
HEAD_BEFORE=$(git rev-parse HEAD)
expect_rc 0 ab step --no-commit --cell x=3
expect_match "$OUT" 'dry run x=3: pass  t 32 \(\+[0-9.]+% worse\)' "compared with the committed baseline"
expect_eq "$(git rev-parse HEAD)" "$HEAD_BEFORE" "nothing committed"
expect_eq "$(journal_entries | wc -l | tr -d ' ')" 0 "nothing journaled"
expect_clean

done_testing
