#!/usr/bin/env bash
# A git lock left by an abtrack killed while holding it (named in the sync marker
# .git/abtrack-sync-pending, written just before the branch's lock is taken; or, by earlier
# versions, in .git/abtrack-locking) is removed by the next abtrack; a lock abtrack did not take
# (a user's git) is never removed: it is reported, and the measurement stays journaled.
source "$(dirname "$0")/lib.sh"
new_repo
cat >abtrack.yaml <<'EOF2'
experiment: locks
doc: AB.md
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
command: "echo '{\"t\": [1, 2]}'"
metrics: {t: {json: t}}
EOF2
expect_rc 0 ab init

step "our own stale index.lock is removed"
printf '%s\n' "$PWD/.git/index.lock" >.git/abtrack-locking
: >.git/index.lock
expect_rc 0 ab step
expect_false "the stale index.lock is gone" test -e .git/index.lock
expect_false "the note is gone" test -e .git/abtrack-locking
expect_clean

step "our own stale ref lock is removed"
printf '%s\n' "$PWD/.git/refs/heads/main.lock" >.git/abtrack-locking
: >.git/refs/heads/main.lock
expect_rc 0 ab step
expect_false "the stale ref lock is gone" test -e .git/refs/heads/main.lock
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | tr '\n' ' ')" "2 1 " "both runs committed"

step "a lock named by the sync marker of a killed step is removed; the sync is finished"
expect_rc 0 ab step
head=$(git rev-parse HEAD)
# As a kill inside the index write leaves it: the commit made and the ref moved, the marker
# naming the commit, its files and the locks, index.lock held.
printf '%s\n%s\n%s\n%s\n' "$head" "$(git show --name-only --format= HEAD | head -n 1)" \
  "$PWD/.git/refs/heads/main.lock" "$PWD/.git/index.lock" >.git/abtrack-sync-pending
: >.git/index.lock
expect_rc 0 ab step
expect_false "the stale index.lock is gone" test -e .git/index.lock
expect_false "the marker is emptied" test -s .git/abtrack-sync-pending
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | tr '\n' ' ')" "4 3 2 1 " "runs 1-4 committed"
expect_clean

step "a marker cut short by a kill names no file but a lock: the index stays"
expect_rc 0 ab step
# A kill inside the marker's write: its last lock path cut to the index's own path.
printf '%s\n%s\n' 0000000000000000000000000000000000000000 "$PWD/.git/index" >.git/abtrack-sync-pending
expect_rc 0 ab step
expect_true "the index is still there" test -s .git/index
expect_false "the marker is emptied" test -s .git/abtrack-sync-pending
expect_clean

# users_lock_stays NOTE CONTENT: NOTE (written an hour ago) names the branch's lock, which a
# user's git has just taken: the step must leave it, fail naming it, and keep its measurement
# journaled until the lock is gone.
users_lock_stays() {
  printf '%s\n' "$2" >"$1"
  touch -d '1 hour ago' "$1"
  : >.git/refs/heads/main.lock
  expect_rc 3 ab step
  expect_contains "$ERR" ".git/refs/heads/main.lock"
  expect_true "the user's lock is still there" test -e .git/refs/heads/main.lock
  rm -f .git/refs/heads/main.lock
  expect_rc 0 ab step
  expect_contains "$OUT" "earlier invocation" "the journaled measurement is committed once the lock is gone"
}

step "a lock taken long after the sync marker is someone else's: left alone"
users_lock_stays .git/abtrack-sync-pending "$(printf '%s\n%s\n' 0000000000000000000000000000000000000000 "$PWD/.git/refs/heads/main.lock")"

step "a lock taken long after the note is someone else's: left alone"
users_lock_stays .git/abtrack-locking "$PWD/.git/refs/heads/main.lock"
done_testing
