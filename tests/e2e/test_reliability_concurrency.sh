#!/usr/bin/env bash
# Concurrency at scale: 8 processes x 10 steps on one repository number the runs
# 1..80 without gaps or duplicates on a linear history, lose nothing and leave no lock file;
# a stale git ref lock (left by a crashed git) is reported with its path after a bounded wait,
# exit 3, and the measurement is not lost: it stays in the journal and the next invocation
# commits it once the lock is gone. A stale index.lock does not lose the run either.
source "$(dirname "$0")/lib.sh"

WRITERS=${ABTRACK_E2E_WRITERS:-8}
STEPS=${ABTRACK_E2E_STEPS:-10}
TOTAL=$((WRITERS * STEPS))

# no_lock_files: git lock files under .git (abtrack's own flock files under .git/abtrack are
# released by the kernel when a process dies, so they are never stale and are left out).
no_lock_files() {
  find .git -name '*.lock' ! -path '.git/abtrack/*' | sort
}

new_repo
cat >abtrack.yaml <<EOF
experiment: scale
doc: AB.md
axes:
  w: [$(seq -s ', ' 1 "$WRITERS")]
command: echo '{"t":[{w}]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
INIT=$(git rev-parse HEAD)

step "$WRITERS parallel writers x $STEPS steps"
pids=()
start=$SECONDS
for w in $(seq 1 "$WRITERS"); do
  (
    rc=0
    for _ in $(seq 1 "$STEPS"); do
      "$ABTRACK" -q step --cell "w=$w" </dev/null >/dev/null 2>>"$WORK/par.$w.err" || rc=1
    done
    exit $rc
  ) &
  pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
echo "    $TOTAL concurrent steps took $((SECONDS - start)) s"
expect_eq "$bad" 0 "every parallel step succeeded ($(cat "$WORK"/par.*.err | head -5 | tr '\n' ' '))"
expect_eq "$(git rev-list --count "$INIT"..HEAD)" "$TOTAL" "$TOTAL commits for $TOTAL steps"
expect_eq "$(git rev-list --merges --count HEAD)" 0 "linear history"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | sort -n | tr '\n' ' ')" \
  "$(seq 1 "$TOTAL" | tr '\n' ' ')" "runs numbered 1..$TOTAL without gaps or duplicates"
expect_eq "$(git ls-tree --name-only HEAD runs/scale/ | wc -l | tr -d ' ')" "$TOTAL" "$TOTAL records committed"
for w in $(seq 1 "$WRITERS"); do
  expect_eq "$(git log --format='%(trailers:key=Abtrack-Cell,valueonly)' | grep -cx "w=$w")" "$STEPS" "$STEPS runs of w=$w"
done
expect_eq "$("$PY" -c '
import json, glob
recs = [json.load(open(f)) for f in glob.glob("runs/scale/*.json")]
ids = [r["measurement"] for r in recs]
print(len(ids) == len(set(ids)) and all(ids))')" True "every record has its own measurement id"
expect_eq "$(no_lock_files | tr '\n' ' ')" "" "no lock file left in .git (refs, index, HEAD, packed-refs)"
expect_eq "$(journal_entries | tr '\n' ' ')" "" "the journal is empty: every measurement committed"
expect_eq "$(ls -A runs/scale | grep -v '^[0-9]*\.json$' | tr '\n' ' ')" "" "no temporary files in runs/scale"
expect_clean "after $TOTAL parallel steps"
expect_rc 0 ab verify
expect_fsck

step "a stale ref lock: bounded wait, path named, exit 3, measurement kept"
HEAD1=$(git rev-parse HEAD)
: >.git/refs/heads/main.lock
start=$SECONDS
expect_rc 3 ab step --cell w=1
took=$((SECONDS - start))
expect_true "the wait is bounded (took $took s)" test "$took" -lt 60
expect_contains "$ERR" ".git/refs/heads/main.lock" "the error names the lock file"
expect_match "$ERR" '^abtrack: error: ' "the error is in the documented format"
expect_contains "$ERR" "remove" "the hint says what to do"
expect_eq "$(git rev-parse HEAD)" "$HEAD1" "no commit while the ref is locked"
journaled=$(journal_entries | grep -c .)
expect_eq "$journaled" 1 "the measurement stays in the journal"
mid=""
[ "$journaled" = 1 ] && journal_entry "$(journal_entries)" >"$WORK/entry.json" && mid=$(json "$WORK/entry.json" 'd["measurement"]')
expect_clean "nothing half-written while the ref was locked"
rm -f .git/refs/heads/main.lock
expect_rc 0 ab step --cell w=2
expect_eq "$(git rev-list --count "$HEAD1"..HEAD)" 2 "the journaled measurement and the new one are both committed"
if [ -n "$mid" ]; then
  expect_eq "$(grep -l "\"$mid\"" runs/scale/*.json | wc -l | tr -d ' ')" 1 "the journaled measurement is committed exactly once"
  expect_contains "$OUT" "killed before committing" "the recovery is reported"
fi
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | sort -n | uniq | wc -l | tr -d ' ')" \
  "$(git rev-list --count "$INIT"..HEAD)" "run numbers stay unique"
expect_eq "$(journal_entries | tr '\n' ' ')" "" "the journal is empty again"
expect_eq "$(no_lock_files | tr '\n' ' ')" "" "no lock file left"
expect_clean
expect_rc 0 ab verify
expect_fsck

step "a stale index.lock: the run is not lost"
HEAD2=$(git rev-parse HEAD)
: >.git/index.lock
run_cmd ab step --cell w=3
rm -f .git/index.lock
CHECKS=$((CHECKS + 1))
case $RC in
  0) expect_eq "$(git rev-list --count "$HEAD2"..HEAD)" 1 "committed despite the index lock" ;;
  3) expect_contains "$ERR" "index" "the error names the index"
     expect_eq "$(git rev-list --count "$HEAD2"..HEAD)" 1 "the commit is made; only the index sync failed" ;;
  *) fail "step with a stale index.lock exited $RC"; show_output ;;
esac
git reset -q -- AB.md runs 2>/dev/null
expect_rc 0 ab status
expect_fsck

done_testing
