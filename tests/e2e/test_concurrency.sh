#!/usr/bin/env bash
# Concurrency and interruption: parallel steps number runs 1..N without gaps or duplicates,
# every run lands as its own commit on a linear history; Ctrl-C during `run` exits 130, kills
# the running command's process group, keeps committed runs and leaves the cell pending.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: conc
doc: AB.md
axes:
  w: [1, 2, 3, 4]
command: echo '{"t":[{w}]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)

step "4 parallel writers x 5 steps"
pids=()
for w in 1 2 3 4; do
  (
    rc=0
    for _ in 1 2 3 4 5; do "$ABTRACK" -q step --cell "w=$w" </dev/null >/dev/null 2>>"$WORK/par.err" || rc=1; done
    exit $rc
  ) &
  pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
expect_eq "$bad" 0 "every parallel step succeeded ($(head -5 "$WORK/par.err" | tr '\n' ' '))"
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 20 "20 commits for 20 steps"
expect_eq "$(git rev-list --merges --count HEAD)" 0 "linear history"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | sort -n | tr '\n' ' ')" \
  "$(seq 1 20 | tr '\n' ' ')" "runs numbered 1..20 without gaps or duplicates"
expect_eq "$(git ls-tree --name-only HEAD runs/conc/ | wc -l | tr -d ' ')" 20 "20 records committed"
for w in 1 2 3 4; do
  expect_eq "$(git log --format='%(trailers:key=Abtrack-Cell,valueonly)' | grep -cx "w=$w")" 5 "5 runs of w=$w"
done
expect_eq "$(python3 -c '
import json, glob
runs = sorted(json.load(open(f))["run"] for f in glob.glob("runs/conc/*.json"))
print(runs == list(range(1, len(runs) + 1)))')" True "record files are numbered 1..N without gaps"
expect_eq "$(ls -A runs/conc | grep -v '^[0-9]*\.json$' | tr '\n' ' ')" "" "no temporary files left in runs/conc"
expect_clean "after parallel steps"
expect_rc 0 ab verify
expect_fsck

step "Ctrl-C during run"
new_repo interrupt
UNIQ="$((RANDOM % 500 + 300)).$$"
export E2E_STARTED=$WORK/started
cat >abtrack.yaml <<EOF
experiment: intr
doc: AB.md
axes:
  n: [1, 2, 3]
command: if [ {n} = 2 ]; then touch "\$E2E_STARTED"; sleep $UNIQ; fi; echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)
set -m   # job control: the background abtrack gets SIGINT like from a terminal
"$ABTRACK" run </dev/null >"$OUT" 2>"$ERR" &
pid=$!
set +m
for _ in $(seq 1 100); do [ -e "$E2E_STARTED" ] && break; sleep 0.1; done
expect_true "cell 2 started" test -e "$E2E_STARTED"
sleep 0.2
kill -INT "$pid"
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  fail "abtrack run still running 5 s after SIGINT"
  kill -KILL "$pid"
fi
wait "$pid"; RC=$?
expect_eq "$RC" 130 "interrupted run exits 130"
for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -f "sleep $UNIQ" >/dev/null || break; sleep 0.2; done
left=$(pgrep -f "sleep $UNIQ" | tr '\n' ' ')
expect_eq "$left" "" "the running command was stopped"
[ -n "$left" ] && kill $left 2>/dev/null
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 1 "the run committed before the interrupt stays; nothing else"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d')" "n=1" "cell 1 committed"
expect_clean "no half-written record or document after the interrupt"
expect_rc 0 ab status --json
expect_eq "$(json "$OUT" 'd["counts"]["pending"]')" 2 "the interrupted cell stays pending"
expect_rc 0 ab verify
rm -f "$E2E_STARTED"

step "HEAD moves while the command runs"
# A step builds its commit on the tip it finds after its command, not on the HEAD it started
# from: the run another step committed meanwhile and the prose the user committed meanwhile are
# both kept (a build that reused a read of HEAD made before the command fails all four checks
# below: it overwrote run 1 and lost the prose).
new_repo moving
cat >abtrack.yaml <<'EOF'
experiment: mov
doc: AB.md
axes:
  n: [1, 2]
command: >-
  if [ {n} = 2 ]; then
  "$E2E_ABTRACK" -q step --cell n=1 >/dev/null &&
  sed -i "s/^## Why\$/## Why $E2E_EDIT/" AB.md && git commit -q -m "user: prose" AB.md;
  fi; echo '{"t":[{n}]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_contains AB.md "## Why" "the template has a Why section"
INIT=$(git rev-parse HEAD)
export E2E_ABTRACK=$ABTRACK E2E_EDIT="(edited while n=2 ran)"
expect_rc 0 ab step --cell n=2
expect_eq "$(git rev-list --count "$INIT"..HEAD)" 3 "the inner run, the user's commit, the outer run"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d')" 2 "the outer run is run 2"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d')" "n=2" "the outer run is n=2"
expect_eq "$(git ls-tree --name-only HEAD runs/mov/ | tr '\n' ' ')" "runs/mov/0001.json runs/mov/0002.json " "both records"
expect_contains "$(git show HEAD:AB.md)" "## Why (edited while n=2 ran)" "the prose committed meanwhile is in the outer run's document"
expect_contains "$(git show HEAD:AB.md)" "**2 of 2 cells measured**" "the inner run is in the outer run's summary"
expect_clean "work tree and index agree with HEAD"
expect_rc 0 ab verify

step "files replaced while steps read the work tree"
# libgit2 hashes a changed file with the size it stat'ed: a file replaced meanwhile (an editor
# saving, another abtrack renaming its document into place) made the step fail with "error
# reading file for hashing". A temp file of another abtrack's atomic write is neither code nor
# an output of the command.
new_repo replaced
cat >abtrack.yaml <<'EOF'
experiment: rep
doc: AB.md
axes:
  n: [1, 2]
command: >-
  if [ {n} = 2 ]; then echo partial >.AB.md.abtrack-5eed.tmp; fi; echo '{"t":[{n}]}'
metrics:
  t: {json: t}
EOF
seq 1 20000 >big.txt
git add big.txt && git commit -q -m "user: data"
expect_rc 0 ab init
(
  for i in $(seq 1 400); do
    if [ $((i % 2)) = 0 ]; then seq 1 20000 >.big.new; else echo x >.big.new; fi
    touch -d "@$((1700000000 + i))" .big.new && mv .big.new big.txt
  done
) &
writer=$!
failed=0 steps=0
while kill -0 "$writer" 2>/dev/null; do
  "$ABTRACK" -q step --cell n=1 </dev/null >/dev/null 2>>"$WORK/rep.err" || failed=$((failed + 1))
  steps=$((steps + 1))
done
wait "$writer"
expect_true "steps ran while the file was replaced ($steps)" test "$steps" -ge 3
expect_eq "$failed" 0 "no step failed ($(grep -m3 error "$WORK/rep.err" | tr '\n' ' '))"
git checkout -q big.txt
# One such file there before the step (a write in progress), one the command writes meanwhile.
echo partial >.AB.md.abtrack-beef.tmp
expect_rc 0 ab step --cell n=2
expect_not_contains "$ERR" "abtrack-5eed" "another abtrack's temp file is not reported as an output"
expect_eq "$(json "runs/rep/$(git ls-tree --name-only HEAD runs/rep/ | tail -1 | xargs basename)" 'd["code"]["dirty"]')" \
  false "another abtrack's temp file does not make the code dirty"
rm .AB.md.abtrack-5eed.tmp .AB.md.abtrack-beef.tmp
expect_clean "after the steps"
expect_rc 0 ab verify

done_testing
