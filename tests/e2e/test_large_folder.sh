#!/usr/bin/env bash
# A folder of more than a hundred records: what git sees after a step is what it would write
# itself: the tree is the one git writes for that index, fsck is clean, the checkout is clean,
# the commit adds one record, and a record committed by hand in that folder (a file name that
# sorts between the runs) is kept.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF2'
experiment: big
doc: AB.md
axes:
  v: [a, b]
command: "echo '{\"t\": [1, 2, 3]}'"
metrics:
  t: {json: t, better: lower}
EOF2
expect_rc 0 ab init
expect_rc 0 ab run --rounds 60 --all --seed 1
expect_eq "$(git ls-tree HEAD runs/big/ | wc -l | tr -d ' ')" 120 "120 runs recorded"

step "a step on a large folder"
echo '{"note": "by hand"}' >runs/big/0060.5.json
git_commit_all "a file of my own among the runs"
before=$(git rev-parse HEAD)
expect_rc 0 ab step --cell v=a
expect_eq "$(git rev-list --count "$before"..HEAD)" 1 "one commit"
expect_eq "$(git diff --name-status "$before" HEAD -- runs/ | tr '\t' ' ')" "A runs/big/0121.json" "the commit adds exactly the new record under runs/"
expect_eq "$(git ls-tree HEAD runs/big/ | wc -l | tr -d ' ')" 122 "121 runs and the hand-made file"
expect_contains "$(git show HEAD:runs/big/0060.5.json)" '"by hand"' "the hand-made file is kept"
expect_eq "$(git cat-file -p HEAD | sed -n 1p)" "tree $(git write-tree)" "HEAD's tree is the one git writes from the index"
git read-tree --index-output="$WORK/canonical.idx" HEAD
expect_eq "$(GIT_INDEX_FILE="$WORK/canonical.idx" git write-tree)" "$(git rev-parse 'HEAD^{tree}')" "git rewrites HEAD's tree to the same id"
expect_fsck
expect_clean "the checkout agrees with the commit"
expect_rc 0 ab verify
done_testing
