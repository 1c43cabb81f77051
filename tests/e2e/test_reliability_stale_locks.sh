#!/usr/bin/env bash
# A git lock left by an abtrack killed while holding it (noted in .git/abtrack-locking just
# before it was taken) is removed by the next abtrack; a lock abtrack did not note (a user's
# git) is never removed: it is reported, and the measurement stays journaled.
source "$(dirname "$0")/lib.sh"
new_repo
cat >abtrack.yaml <<'EOF2'
experiment: locks
doc: AB.md
axes: {n: [1, 2, 3]}
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

step "a lock taken long after the note is someone else's: left alone"
printf '%s\n' "$PWD/.git/refs/heads/main.lock" >.git/abtrack-locking
touch -d '1 hour ago' .git/abtrack-locking
: >.git/refs/heads/main.lock
expect_rc 3 ab step
expect_contains "$ERR" ".git/refs/heads/main.lock"
expect_true "the user's lock is still there" test -e .git/refs/heads/main.lock
rm -f .git/refs/heads/main.lock
expect_rc 0 ab step
expect_contains "$OUT" "earlier invocation" "the journaled measurement is committed once the lock is gone"
done_testing
