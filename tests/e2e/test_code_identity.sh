#!/usr/bin/env bash
# The code's identity is its content: the tree without runs/, the experiments' documents and
# plots, and the commands' outputs. Commits that change only data (a note in the document, a
# revert of a run commit, another experiment's runs) keep one pool; files a command writes are
# outputs, not code (no snapshot, no new pool, one warning with the .gitignore line); a real
# code change starts a new pool; a snapshot's diff against its parent shows only code.
source "$(dirname "$0")/lib.sh"

tree_of() { json "$1" 'd["code"]["tree"]'; }

new_repo notes
cat >bench.sh <<'EOF2'
#!/bin/sh
# prints three samples around $1
echo "{\"t\": [$1, $(($1 + 1)), $(($1 + 2))]}"
EOF2
chmod +x bench.sh
cat >abtrack.yaml <<'EOF2'
experiment: ident
doc: AB.md
axes:
  v: [a, b]
baseline: {v: a}
command: "if [ {v} = a ]; then ./bench.sh 100; else ./bench.sh 50; fi"
metrics:
  t: {json: t, better: lower}
EOF2
git add bench.sh && git commit -q -m "user: the bench"
expect_rc 0 ab init
expect_rc 0 ab run

step "a commit that changes only the document keeps the pool"
echo "A note of mine." >>AB.md
git commit -q -am "notes"
expect_rc 0 ab step --cell v=b
expect_eq "$(tree_of runs/ident/0003.json)" "$(tree_of runs/ident/0001.json)" "run 3 (after the notes commit) has run 1's code identity"
expect_eq "$(json runs/ident/0003.json 'd["code"]["dirty"]')" false "the work tree is clean"
expect_not_contains "$(sed -n '/begin summary/,/end summary/p' AB.md)" "other code" "no 'baseline measured on other code' warning"
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| b |')
expect_match "$row" '^\| b \| 6 \|' "the variant's row pools runs 2 and 3: 6 samples ($row)"
expect_contains "$(git log -1 --format=%B)" "vs baseline 101 (n=3, pool to run 1)" "the commit compares with run 1's pool"

step "a revert of a run commit keeps the pool"
git revert --no-edit HEAD >/dev/null
expect_rc 0 ab step --cell v=b
last=$(ls runs/ident/*.json | tail -1)
expect_eq "$(tree_of "$last")" "$(tree_of runs/ident/0001.json)" "the run after the revert has the same code identity"
expect_not_contains "$(sed -n '/begin summary/,/end summary/p' AB.md)" "other code" "still no warning after the revert"

step "a real change of the code starts a new pool, and the summary says so"
sed -i 's/\$1 + 2/$1 + 3/' bench.sh
git commit -q -am "user: change the bench"
expect_rc 0 ab step --cell v=b
last=$(ls runs/ident/*.json | tail -1)
[ "$(tree_of "$last")" != "$(tree_of runs/ident/0001.json)" ] && pass_check || fail "a code change must change the identity"
expect_contains "$(sed -n '/begin summary/,/end summary/p' AB.md)" "baseline measured on other code" "the summary warns"
expect_rc 0 ab verify

step "uncommitted code: a snapshot whose diff shows only code"
echo "# an edit" >>bench.sh
expect_rc 0 ab step --cell v=a
last=$(ls runs/ident/*.json | tail -1)
run=$(json "$last" 'd["run"]')
expect_eq "$(json "$last" 'd["code"]["dirty"]')" true "the edit makes the run dirty"
expect_eq "$(git show --stat --format= "refs/abtrack/snapshots/ident/$run" | grep -c '|')" 1 "the snapshot's diff names one file ($(git show --stat --format= refs/abtrack/snapshots/ident/$run | tr '\n' ' '))"
expect_contains "$(git show --stat --format= "refs/abtrack/snapshots/ident/$run")" "bench.sh"
expect_not_contains "$(git show --stat --format= "refs/abtrack/snapshots/ident/$run")" "AB.md"
expect_eq "$(git ls-tree -r --name-only "refs/abtrack/snapshots/ident/$run" | grep -c '^runs/')" \
  "$(git ls-tree -r --name-only "refs/abtrack/snapshots/ident/$run^" | grep -c '^runs/')" "the snapshot keeps runs/ as its parent has it"
git checkout -q bench.sh

step "files a command writes are outputs, not code"
new_repo outputs
cat >abtrack.yaml <<'EOF2'
experiment: out
doc: AB.md
axes:
  x: [1, 2]
baseline: {x: 1}
command: "head -c 200000 /dev/urandom > out-{x}.bin; echo '{\"t\": [{x}0, {x}1, {x}2]}'"
metrics:
  t: {json: t, better: lower}
EOF2
expect_rc 0 ab init
expect_rc 0 ab run --rounds 2 --seed 1
expect_contains "$ERR" "add to .gitignore" "one warning with the .gitignore line"
expect_contains "$ERR" "/out-*.bin" "the line stars the cell's value"
expect_eq "$(grep -c 'add to .gitignore' "$ERR")" 1 "warned once"
for f in runs/out/*.json; do
  expect_eq "$(json "$f" 'd["code"]["dirty"]')" false "$f: outputs do not make the work tree dirty"
  expect_eq "$(tree_of "$f")" "$(tree_of runs/out/0001.json)" "$f: one code identity"
done
expect_eq "$(git for-each-ref refs/abtrack/snapshots | wc -l | tr -d ' ')" 0 "no snapshot was made"
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| 2 |')
expect_match "$row" '^\| 2 \| 6 \|' "both rounds pool ($row)"
expect_rc 0 ab run --all
expect_not_contains "$ERR" "add to .gitignore" "known outputs are not warned about again"
expect_eq "$(git status --porcelain | grep -v '^?? out-' | wc -l | tr -d ' ')" 0 "git status shows only the outputs"

step "a file written once stays code: the user may have made it while the run went on"
new_repo race
cat >abtrack.yaml <<EOF2
experiment: race
doc: AB.md
axes: {n: [1]}
command: "[ -e $REPO/config.h ] || echo '#define FAST 1' > $REPO/config.h; head -c 1000 /dev/urandom > log.bin; echo '{\\"t\\": [1, 2, 3]}'"
metrics:
  t: {json: t, better: lower}
EOF2
expect_rc 0 ab init
expect_rc 0 ab run --rounds 3 --seed 1
expect_eq "$(json runs/race/0001.json 'd["code"]["dirty"]')" false "run 1: the file did not exist yet"
expect_eq "$(json runs/race/0002.json 'd["code"]["dirty"]')" true "run 2: the file made during run 1 is code"
[ "$(tree_of runs/race/0002.json)" != "$(tree_of runs/race/0001.json)" ] && pass_check ||
  fail "runs made after the file appeared are on other code than run 1"
expect_eq "$(tree_of runs/race/0003.json)" "$(tree_of runs/race/0002.json)" "runs 2 and 3: one code"
expect_contains "$(git show "$(json runs/race/0003.json 'd["code"]["snapshot"]'):config.h")" "FAST" "the snapshot holds the file"
expect_not_contains .git/abtrack/outputs "config.h" "the file written once is not an output"
expect_contains .git/abtrack/outputs "log.bin" "the file written in every run is"
expect_contains "$ERR" "/log.bin" "the .gitignore line names the output"
expect_rc 0 ab verify

step "declared outputs (metric file:) are not code either, even when committed"
new_repo declared
cat >abtrack.yaml <<'EOF2'
experiment: decl
doc: AB.md
axes:
  x: [1, 2]
baseline: {x: 1}
command: "echo '{\"t\": [{x}0, {x}1, {x}2]}' > res-{x}.json"
metrics:
  t: {json: t, file: 'res-{x}.json', better: lower}
EOF2
expect_rc 0 ab init
expect_rc 0 ab run
git add res-1.json && git commit -q -m "user: keep a result file"
expect_rc 0 ab step --cell x=2
expect_eq "$(tree_of runs/decl/0003.json)" "$(tree_of runs/decl/0001.json)" "a committed output does not change the identity"
expect_not_contains "$ERR" "add to .gitignore" "declared outputs need no warning"

step "another experiment's runs and document are data too"
cat >other.yaml <<'EOF2'
experiment: other
doc: OTHER.md
axes:
  y: [1]
command: "echo '{\"u\": 1}'"
metrics:
  u: {json: u}
EOF2
expect_rc 0 ab -p other.yaml init
expect_rc 0 ab -p other.yaml run
expect_rc 0 ab step --cell x=1
before=$(ls runs/decl/*.json | tail -1)
echo "More prose." >>OTHER.md && git commit -q -am "user: notes on the other experiment"
expect_rc 0 ab -p other.yaml run --all
expect_rc 0 ab step --cell x=1
last=$(ls runs/decl/*.json | tail -1)
expect_eq "$(tree_of "$last")" "$(tree_of "$before")" "the other experiment's runs, document and plot do not change this one's code"
expect_rc 0 ab verify
done_testing
