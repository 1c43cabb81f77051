#!/usr/bin/env bash
# A run of a revision measures code that HEAD's history need not hold (another branch, a
# snapshot of the work tree). `abtrack run` killed with SIGKILL after such a run was measured
# and journaled but before its commit: the next `abtrack run` commits it, naming the code it
# measured, and leaves no journal entry behind.
#
# The kill lands between the journal and the commit every time: the first command starts a
# helper (in its own session, so the command's process group is not it) that takes abtrack's
# commit lock (.git/abtrack/commit.lock, an flock) and holds it until the test lets go; abtrack
# then waits for the lock with the measurement journaled, and is killed there.
source "$(dirname "$0")/lib.sh"
command -v setsid >/dev/null || { echo "SKIP: no setsid" >&2; DONE=1; exit 77; }

HOLDER=$WORK/hold_lock.py
cat >"$HOLDER" <<'PY'
import fcntl, os, sys, time
lock, held, release = sys.argv[1:4]
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
open(held, "w").close()
deadline = time.time() + 60
while not os.path.exists(release) and time.time() < deadline:
    time.sleep(0.01)
PY
CMD=$WORK/cmd.sh
cat >"$CMD" <<EOF_CMD
if [ -n "\${E2E_HOLD:-}" ] && [ ! -e "\$E2E_HOLD.held" ]; then
  setsid "$PY" "$HOLDER" "\$E2E_HOLD" "\$E2E_HOLD.held" "\$E2E_HOLD.release" </dev/null >/dev/null 2>&1 &
  for _ in \$(seq 1 500); do [ -e "\$E2E_HOLD.held" ] && break; sleep 0.01; done
fi
echo "{\"t\": [\$(cat code.txt)]}"
EOF_CMD

new_repo recover
echo 10 >code.txt
git add code.txt && git commit -q -m "user: the code"
git checkout -q -b other
echo 20 >code.txt && git commit -q -am "user: other code"
other=$(git rev-parse other)
git checkout -q main
cat >abtrack.yaml <<EOF2
experiment: rec
doc: AB.md
revisions: {base: other, mine: WORKTREE}
baseline: {rev: base}
rounds: 1
command: sh $CMD
metrics:
  t: {json: t, better: lower}
EOF2
expect_rc 0 ab init
echo 30 >code.txt   # mine: the work tree, uncommitted

step "abtrack run killed between the journal and the commit of a revision's run"
LOCK=$(pwd -P)/.git/abtrack/commit.lock
heads_before=$(commit_count)
E2E_HOLD=$LOCK "$ABTRACK" run --seed 1 </dev/null >"$WORK/killed.out" 2>"$WORK/killed.err" &
pid=$!
entries=""
for _ in $(seq 1 1000); do
  entries=$(journal_entries)
  [ -n "$entries" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
touch "$LOCK.release"
for _ in $(seq 1 500); do "$PY" -c 'import fcntl,os,sys; fd=os.open(sys.argv[1],os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX|fcntl.LOCK_NB)' "$LOCK" 2>/dev/null && break; sleep 0.02; done
expect_eq "$(printf '%s\n' "$entries" | sed '/^$/d' | wc -l | tr -d ' ')" 1 "one measurement journaled when abtrack was killed"
expect_eq "$(commit_count)" "$heads_before" "nothing committed before the kill"
entry=$WORK/entry.json
journal_entry "$(printf '%s\n' "$entries" | head -1)" >"$entry"
expect_eq "$(json "$entry" 'd["cell"]["rev"]')" base "the journaled run is base's (the first of round 1)"
expect_eq "$(json "$entry" 'd["code"]["commit"]')" "$other" "it measured the other branch's commit"
measurement=$(json "$entry" 'd["measurement"]')

step "the next run commits the recovered measurement"
expect_rc 0 ab run --seed 2
expect_contains "$OUT" "measured by an earlier invocation" "the recovered run is printed as such"
expect_not_contains "$ERR" "does not contain" "no refusal of a revision's code"
expect_eq "$(journal_entries)" "" "the journal is empty"
rec=$(grep -l "\"measurement\": \"$measurement\"" runs/rec/*.json | head -1)
[ -n "$rec" ] && pass_check || fail "no committed record holds the journaled measurement"
if [ -n "$rec" ]; then
  expect_eq "$(json "$rec" 'd["cell"]["rev"]')" base "the recovered record is base's run"
  expect_eq "$(json "$rec" 'd["code"]["commit"]')" "$other" "and names the code it measured"
  n=$(json "$rec" 'd["run"]')
  c=$(git log --format='%H %(trailers:key=Abtrack-Run,valueonly,separator=)' | awk -v n="$n" '$2 == n {print $1}')
  expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Code,valueonly)' "$c" | tr -d '\n')" "$other" "Abtrack-Code names the other branch's commit"
fi
expect_eq "$(grep -l "\"measurement\": \"$measurement\"" runs/rec/*.json | wc -l | tr -d ' ')" 1 "committed once"
expect_eq "$(git branch --show-current)" main "committed on the branch checked out"
expect_rc 0 ab verify
expect_fsck

done_testing
