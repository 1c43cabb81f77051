#!/usr/bin/env bash
# What a revision's run is, and the one run path it takes. A run's identity is its code tree and
# its recipe (the command after substitution, workdir, env, setup, build): a changed command is
# new code to measure and never pools with the old one, while the plan's prose is neither.
# Relative names (HEAD~1) resolve against the user's history, not abtrack's run commits, and
# the record says what each name resolved to. Batch ids are unique per invocation whatever the
# seed. A file the user creates in the work tree while a revisions run goes on is not an output.
# Plans with revisions take the same run path as others: gpus:, fail-fast, --keep-going, -v,
# run --dry-run and step --no-commit.
source "$(dirname "$0")/lib.sh"

new_repo ident
cat >bench.sh <<'EOF2'
#!/bin/sh
# 5 "times" near what the tree's speed file holds plus the first argument, with a little noise
awk -v base="$(( $(cat speed) + ${1:-0} ))" -v seed=$$ 'BEGIN { srand(seed); printf "{\"t\": [";
  for (i = 0; i < 5; i++) printf "%s%.2f", i ? ", " : "", base + rand(); print "]}" }'
EOF2
chmod +x bench.sh
echo 100 >speed
git add bench.sh speed && git commit -q -m "user: c1"
c1=$(git rev-parse HEAD)
echo 120 >speed && git commit -q -am "user: c2"
c2=$(git rev-parse HEAD)
cat >abtrack.yaml <<'EOF2'
experiment: ident
doc: AB.md
why: first words
revisions:
  base: HEAD~1
  mine: HEAD
build: "echo built >> build.log"
baseline: {rev: base}
rounds: 2
command: ./bench.sh 0
metrics:
  t: {json: t, better: lower}
EOF2
echo 90 >speed
git add abtrack.yaml speed && git commit -q -m "user: the plan, and faster"
c3=$(git rev-parse HEAD)
expect_rc 0 ab init
runs() { git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' '; }

step "HEAD~1 is the user's commit before HEAD, however many runs were committed"
expect_rc 0 ab run --seed 1
base_run=$(grep -l '"rev": "base"' runs/ident/*.json | head -1)
expect_eq "$(json "$base_run" 'd["code"]["commit"]')" "$c2" "base: HEAD~1 resolved to the commit before the plan's"
expect_eq "$(json "$base_run" 'd["code"]["revision"]')" "HEAD~1" "the record says what the name was"
expect_match "$(json "$base_run" 'd["code"]["recipe"]')" '^[0-9a-f]{16}$' "the record has the recipe"
expect_eq "$(json "$base_run" 'd["build"]["command"]')" "echo built >> build.log" "the record names the build it measured"
expect_eq "$(json "$base_run" 'd["build"]["log"].startswith(".git/abtrack/trees/") and d["build"]["log"].endswith("/build.log")')" true "and its log"
if command -v cc >/dev/null; then
  expect_contains "$(json "$base_run" 'd["build"]["toolchain"]')" "cc: " "and the compiler on the build's PATH"
fi
expect_rc 0 ab run --all --seed 1
last_base=$(ls runs/ident/*.json | tail -2 | xargs grep -l '"rev": "base"')
expect_eq "$(json "$last_base" 'd["code"]["commit"]')" "$c2" "after 4 run commits HEAD~1 still names the same commit"
expect_eq "$(json "$last_base" 'd["build"]["finished"]')" "$(json "$base_run" 'd["build"]["finished"]')" "a cached build is named: the same build"
expect_contains "$ERR" "revision base = HEAD~1 (${c2:0:12})" "the run says what the name resolved to"

step "a batch id is unique per invocation, whatever the seed"
b1=$(json "$base_run" 'd["schedule"]["batch"]')
b2=$(json "$last_base" 'd["schedule"]["batch"]')
[ -n "$b1" ] && [ "$b1" != "$b2" ] && pass_check || fail "two invocations with --seed 1 share the batch id '$b1'"
row=$(sed -n '/begin results/,/end results/p' AB.md | grep '^| mine |')
expect_contains "$row" "paired ×4" "the 2 rounds of each invocation are 4 pairs, not 2 merged ones ($row)"

step "the plan's prose is not code: nothing to do, nothing built, the pools stay"
builds=$(cat .git/abtrack/trees/*/code/build.log | wc -l)
ntrees=$(ls -d .git/abtrack/trees/*/ | wc -l)
sed -i 's/why: first words/why: second thoughts/' abtrack.yaml
expect_rc 0 ab run
expect_contains "$ERR" "nothing to do" "editing why: leaves every cell measured"
expect_eq "$(cat .git/abtrack/trees/*/code/build.log | wc -l)" "$builds" "nothing was built again"
expect_eq "$(ls -d .git/abtrack/trees/*/ | wc -l)" "$ntrees" "no tree was written again"
git checkout -q abtrack.yaml

step "--rev measures the code it names, even when measured before"
n=$(runs)
expect_rc 0 ab run --rev base=HEAD~1 --rounds 1
expect_not_contains "$ERR" "nothing to do" "--rev asks for a measurement"
expect_eq "$(runs)" "$((n + 2))" "one round of the group"

step "--rebuild builds again, and a build naming a path outside the repository says it is not in the key"
echo 'echo harness' >"$WORK/harness.sh"
sed -i "s|^build: .*|build: \"sh $WORK/harness.sh >/dev/null; echo built >> build.log\"|" abtrack.yaml
expect_rc 0 ab run --all --rounds 1
builds=$(cat .git/abtrack/trees/*/code/build.log | wc -l)
expect_rc 0 ab run --all --rounds 1
expect_contains "$ERR" "outside the repository, which is not part of what builds are cached by (--rebuild builds again)" "the cache's blind spot is named"
expect_eq "$(cat .git/abtrack/trees/*/code/build.log | wc -l)" "$builds" "the cached builds were used"
expect_rc 0 ab run --all --rounds 1 --rebuild
expect_eq "$(cat .git/abtrack/trees/*/code/build.log | wc -l)" "$((builds + 2))" "--rebuild built both revisions again"
git checkout -q abtrack.yaml

step "a changed command is new code: it runs, and never pools with the old command's runs"
n=$(runs)
sed -i 's|command: ./bench.sh 0|command: ./bench.sh 50|' abtrack.yaml
expect_rc 0 ab run --seed 2
expect_not_contains "$ERR" "nothing to do" "the cells are measured with the new command"
expect_eq "$(runs)" "$((n + 4))" "2 rounds x 2 revisions"
new_base=$(ls runs/ident/*.json | tail -2 | xargs grep -l '"rev": "base"')
[ "$(json "$new_base" 'd["code"]["recipe"]')" != "$(json "$base_run" 'd["code"]["recipe"]')" ] && pass_check ||
  fail "the recipe changed with the command"
expect_rc 0 ab run --all --seed 3
summary=$(sed -n '/begin results/,/end results/p' AB.md)
expect_match "$(echo "$summary" | grep '^| base |')" "\| 17[01]" "base's median is the new command's (120 + 50), not a pool of both"
git checkout -q abtrack.yaml

step "a file the user creates during a revisions run stays code"
cat >user-writes.sh <<EOF2
#!/bin/sh
# the user keeps working while the run goes on
[ -e "$REPO/config.h" ] || echo "#define NEW 1" > "$REPO/config.h"
./bench.sh 0
EOF2
chmod +x user-writes.sh
git add user-writes.sh && git commit -q -m "user: a harness"
sed -i "s|command: ./bench.sh 0|command: $REPO/user-writes.sh|" abtrack.yaml
expect_rc 0 ab run --all --rounds 1 --seed 4
[ -e config.h ] && pass_check || fail "the user's file was created"
expect_not_contains "$(cat .git/abtrack/outputs 2>/dev/null)" "config.h" "the user's file is not an output"
expect_not_contains "$ERR" "config.h" "nor warned about as one"
git add config.h && git commit -q -m "user: config.h"
expect_rc 0 ab run --all --rounds 1 --seed 5
mine_tree=$(ls runs/ident/*.json | tail -2 | xargs grep -l '"rev": "mine"')
tree=$(json "$mine_tree" 'd["code"]["tree"]')
expect_contains "$(git ls-tree --name-only "$tree")" "config.h" "mine's code (HEAD) holds the committed file"
git checkout -q abtrack.yaml

step "gpus: apply to a plan with revisions"
sed -i 's|command: ./bench.sh 0|command: ./bench.sh $CUDA_VISIBLE_DEVICES|; s|^rounds: 2|rounds: 1\ngpus: ["7"]|' abtrack.yaml
expect_rc 0 ab run --all --seed 6
last=$(ls runs/ident/*.json | tail -1)
expect_eq "$(json "$last" 'd["placement"]["gpu"]')" "7" "the run's placement names the plan's GPU"
expect_match "$(json "$last" 'd["metrics"]["t"]')" "(97|127)\." "the command saw CUDA_VISIBLE_DEVICES=7 (t = speed + 7)"
git checkout -q abtrack.yaml

step "--retry runs the groups whose latest run on their code failed a gate"
printf 'gates:\n  - t <= 1\n' >>abtrack.yaml
expect_rc 1 ab run --all --rounds 1
n=$(runs)
expect_rc 0 ab run
expect_contains "$ERR" "nothing to do" "a failed gate is a valid run: nothing pending"
expect_rc 1 ab run --retry --rounds 1
expect_eq "$(runs)" "$((n + 2))" "--retry measured the failing group again"
git checkout -q abtrack.yaml

step "run --dry-run and step --no-commit measure revisions and commit nothing"
head=$(git rev-parse HEAD)
expect_rc 0 ab run --dry-run --all --rounds 1
expect_contains "$OUT" "dry run rev=base" "the dry run prints its result lines"
expect_rc 0 ab step --no-commit --cell rev=mine
expect_contains "$OUT" "dry run rev=mine" "step --no-commit measures one cell"
expect_eq "$(git rev-parse HEAD)" "$head" "nothing was committed"
expect_eq "$(git status --porcelain -- runs AB.md)" "" "nothing was written"

step "-v streams the commands' output"
expect_rc 0 ab -v run --all --rounds 1
expect_contains "$ERR" '{"t": ' "the command's stdout on stderr"

step "a typo'd command stops after the first runs; --keep-going runs them all"
sed -i 's|command: ./bench.sh 0|command: ./bnech.sh|; s|^rounds: 2|rounds: 5|' abtrack.yaml
n=$(runs)
expect_rc 1 ab run --all
expect_contains "$ERR" "stopped after the first 2 runs" "fail-fast, as without revisions"
expect_eq "$(runs)" "$((n + 2))" "2 invalid runs committed, not 10"
expect_rc 1 ab run --all --keep-going --rounds 2
expect_eq "$(runs)" "$((n + 6))" "--keep-going runs every cell"
git checkout -q abtrack.yaml
expect_rc 0 ab verify
done_testing
