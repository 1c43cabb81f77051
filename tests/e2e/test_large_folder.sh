#!/usr/bin/env bash
# A folder of records past ~100 runs: a step writes runs/<experiment>/'s new tree from the old
# tree's bytes (gitstore/raw_tree.cpp) instead of libgit2's tree builder. What git sees must not
# change: the tree is the one git itself writes for that index, fsck is clean, the checkout is
# clean, the commit adds one record, and a record committed by hand in that folder (a file name
# that sorts between the runs) is kept.
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
export ABTRACK_TRACE=1
expect_rc 0 ab run --all
unset ABTRACK_TRACE
expect_not_contains "$ERR" "large folder" "2 runs: libgit2 writes the small folder's tree"
expect_rc 0 ab run --rounds 59 --all --seed 1
expect_eq "$(git ls-tree HEAD runs/big/ | wc -l | tr -d ' ')" 120 "120 runs recorded"
expect_true "the folder's tree is large enough for the byte-level path (> 4096 bytes)" \
  test "$(git cat-file -s "$(git rev-parse HEAD:runs/big)")" -gt 4096

step "a step on a large folder"
echo '{"note": "by hand"}' >runs/big/0060.5.json
git_commit_all "a file of my own among the runs"
before=$(git rev-parse HEAD)
export ABTRACK_TRACE=1
expect_rc 0 ab step --cell v=a
unset ABTRACK_TRACE
expect_contains "$ERR" "large folder's tree written from its bytes" "the folder's tree was written from its bytes"
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
