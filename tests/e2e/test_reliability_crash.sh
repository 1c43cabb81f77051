#!/usr/bin/env bash
# Crash safety: `abtrack run` killed with SIGKILL at many points (setup, command,
# journal, commit, work-tree sync): after each kill `git fsck --strict` passes, the document's
# regions parse (never half-written), and the next `abtrack run` commits what was measured and
# journaled and finishes every pending cell; no measurement is committed twice and runs are
# numbered without gaps. SIGINT and SIGTERM while a command runs: exit 130, the command's
# whole process group (grandchildren too) is gone, committed runs stay, the cell stays pending.
source "$(dirname "$0")/lib.sh"

KILLS=${ABTRACK_E2E_KILLS:-40}

# The template repository every kill point starts from (copied: cheaper than init each time).
new_repo template
cat >abtrack.yaml <<'EOF'
experiment: crash
doc: AB.md
axes:
  n: [1, 2, 3, 4]
setup: sleep 0.02
command: sleep 0.03; echo '{"t":[{n}, {n}.5]}'
metrics:
  t: {json: t, better: lower}
baseline: {n: 1}
EOF
expect_rc 0 ab init
TEMPLATE=$REPO

# kill_after MS: start `abtrack run`, SIGKILL it after MS milliseconds (only abtrack: the
# command is in its own process group and finishes on its own, as after a real crash).
kill_after() {
  "$PY" - "$ABTRACK" "$1" <<'PY'
import os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "-q", "run"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(int(sys.argv[2]) / 1000.0)
try:
    os.kill(p.pid, signal.SIGKILL)
except ProcessLookupError:
    pass
rc = p.wait()
print("killed" if rc == -9 else "finished")
PY
}

# regions_parse FILE: every generated region has exactly one begin and one end marker.
regions_parse() {
  local r
  for r in summary results runs; do region "$1" "$r" >/dev/null 2>&1 || return 1; done
}

# The kill points spread over one uninterrupted run's time (at least 7 ms apart), so that they
# reach the journal and the commits however fast this build and this machine are (a sanitizer
# build on a loaded machine takes several times as long); ABTRACK_E2E_KILL_STEP_MS fixes them.
cp -a "$TEMPLATE" "$WORK/timed" && cd "$WORK/timed" || die "cannot copy the template repository"
RUN_MS=$("$PY" -c '
import subprocess, sys, time
t = time.monotonic()
subprocess.run([sys.argv[1], "-q", "run"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
print(int((time.monotonic() - t) * 1000))' "$ABTRACK") || die "the uninterrupted run failed"
cd "$WORK" && rm -rf "$WORK/timed"
STEP_MS=${ABTRACK_E2E_KILL_STEP_MS:-$(( RUN_MS / KILLS > 7 ? RUN_MS / KILLS : 7 ))}

step "SIGKILL at $KILLS points over an uninterrupted run's $RUN_MS ms"
killed=0; finished=0; journaled=0; partial=0; unsynced=0
for i in $(seq 0 $((KILLS - 1))); do
  ms=$((i * STEP_MS))
  CURRENT_STEP="SIGKILL after $ms ms"
  REPO=$WORK/k$i
  cp -a "$TEMPLATE" "$REPO" && cd "$REPO" || die "cannot copy the template repository"
  what=$(kill_after "$ms")
  [ "$what" = killed ] && killed=$((killed + 1)) || finished=$((finished + 1))
  sleep 0.05   # the orphaned command, if any, finishes
  expect_fsck
  expect_true "after a kill at $ms ms the work-tree document's regions parse" regions_parse AB.md
  git show HEAD:AB.md >"$WORK/head.md"
  expect_true "after a kill at $ms ms the committed document's regions parse" regions_parse "$WORK/head.md"
  n_before=$(git rev-list --count HEAD)
  [ -n "$(journal_entries)" ] && journaled=$((journaled + 1))
  [ "$n_before" -gt 1 ] && [ "$n_before" -lt 5 ] && partial=$((partial + 1))
  # A kill between the ref move and the checkout sync leaves the checkout one commit behind
  # (and maybe a temp file); the next invocation finishes that sync.
  [ -n "$(git status --porcelain --untracked-files=all)" ] && unsynced=$((unsynced + 1))

  # The next invocation recovers and finishes.
  expect_rc 0 ab run || continue
  expect_rc 0 ab verify
  expect_rc 0 ab status --json
  expect_eq "$(json "$OUT" 'd["counts"]["pending"]')" 0 "after a kill at $ms ms: no cell pending"
  expect_eq "$("$PY" -c '
import json, glob
recs = [json.load(open(f)) for f in sorted(glob.glob("runs/crash/*.json"))]
ids = [r["measurement"] for r in recs]
runs = sorted(r["run"] for r in recs)
cells = sorted({r["cell"]["n"] for r in recs})
print(len(ids) == len(set(ids)), runs == list(range(1, len(runs) + 1)), cells == [1, 2, 3, 4])')" \
    "True True True" "after a kill at $ms ms: measurement ids unique, runs 1..N without gaps, every cell has a run"
  expect_eq "$(git ls-tree --name-only HEAD runs/crash/ | wc -l)" "$(ls runs/crash | wc -l)" "every record file is committed"
  expect_eq "$(journal_entries | tr '\n' ' ')" "" "journal empty after the follow-up run"
  expect_eq "$(git rev-list --merges --count HEAD)" 0 "linear history"
  expect_clean "after a kill at $ms ms and the follow-up run"
  expect_fsck
  cd "$WORK" && rm -rf "$REPO"
done
CURRENT_STEP="SIGKILL summary"
echo "    $KILLS kill points (0..$(((KILLS - 1) * STEP_MS)) ms): $killed killed, $finished finished first," \
     "$partial with some runs committed, $journaled with a journaled measurement, $unsynced with the checkout left behind"
expect_true "most kill points really killed abtrack mid-run ($killed of $KILLS)" test "$killed" -ge $((KILLS / 2))
expect_true "some kills landed between the journal and the commit ($journaled)" test "$journaled" -ge 1
expect_true "some kills landed between two commits ($partial)" test "$partial" -ge 1

# interrupt SIG: `abtrack run` gets SIG while cell 2's command (with a grandchild) runs.
interrupt() {
  local sig=$1
  step "$sig during run"
  new_repo "int-$sig"
  local uniq="$((RANDOM % 500 + 300)).$$"
  export E2E_STARTED=$WORK/started-$sig
  cat >abtrack.yaml <<EOF
experiment: intr
doc: AB.md
axes:
  n: [1, 2, 3]
command: if [ {n} = 2 ]; then sh -c 'sleep $uniq & sleep $uniq' & touch "\$E2E_STARTED"; wait; fi; echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
  expect_rc 0 ab init
  local init; init=$(git rev-parse HEAD)
  "$ABTRACK" run </dev/null >"$OUT" 2>"$ERR" &
  local pid=$!
  for _ in $(seq 1 100); do [ -e "$E2E_STARTED" ] && break; sleep 0.05; done
  expect_true "cell 2 started" test -e "$E2E_STARTED"
  sleep 0.2
  expect_eq "$(pgrep -f "^sleep $uniq" | wc -l | tr -d ' ')" 2 "child and grandchild running before the $sig"
  kill -"$sig" "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then fail "abtrack run still running 5 s after $sig"; kill -KILL "$pid"; fi
  wait "$pid"; RC=$?
  expect_eq "$RC" 130 "run interrupted by $sig exits 130"
  expect_match "$ERR" "^abtrack: error: .*interrupted" "the interruption is reported"
  for _ in $(seq 1 20); do pgrep -f "sleep $uniq" >/dev/null || break; sleep 0.1; done
  local left; left=$(pgrep -f "sleep $uniq" | tr '\n' ' ')
  expect_eq "$left" "" "the command's process group (child and grandchild) is gone after $sig"
  [ -n "$left" ] && kill $left 2>/dev/null
  expect_eq "$(git rev-list --count "$init"..HEAD)" 1 "the run committed before the $sig stays"
  expect_clean "nothing half-written after $sig"
  expect_rc 0 ab status --json
  expect_eq "$(json "$OUT" 'd["counts"]["pending"]')" 2 "the interrupted cell stays pending"
  expect_eq "$(journal_entries | tr '\n' ' ')" "" "nothing journaled for the interrupted cell"
  expect_rc 0 ab verify
  rm -f "$E2E_STARTED"
}
interrupt INT
interrupt TERM

done_testing
