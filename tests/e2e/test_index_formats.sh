#!/usr/bin/env bash
# After a step the index holds the commit's record, document and plot, and nothing else changes:
# libgit2 writes it under git's index.lock, whatever its format (index version 4,
# core.ignorecase). What git sees: a clean checkout, the user's staged and unstaged changes
# exactly as they were (never in abtrack's commit), a cache tree that git trusts and that agrees
# with HEAD, fsck clean, and no file of abtrack's left beside the index.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF2'
experiment: idx
doc: AB.md
axes:
  v: [a, b, c, d, e, f, g]
command: "echo '{\"t\": [1, 2, 3]}'"
metrics:
  t: {json: t, better: lower}
EOF2
printf 'first\n' >notes.txt
mkdir -p src && printf 'int main() { return 0; }\n' >src/main.cpp
git_commit_all "the user's files"
expect_rc 0 ab init

index_version() { od -An -tu1 -j4 -N4 .git/index | awk '{print $4}'; }
nothing_left() { expect_eq "$(ls -a .git | grep -E '^(index\.lock|abtrack-index)' || true)" "" "no lock or copy of the index left"; }

step "a step writes the index; git's cache tree agrees with HEAD"
git commit -q --allow-empty -m "a commit by git: the index gets a cache tree"
expect_true "the index has a cache tree" grep -q TREE .git/index
export ABTRACK_TRACE=1
expect_rc 0 ab step --cell v=a
unset ABTRACK_TRACE
expect_contains "$ERR" "index written"
expect_clean "the checkout agrees with the commit"
nothing_left
# A cache-tree entry left valid for a changed folder would make git write its old tree here.
expect_eq "$(git write-tree)" "$(git rev-parse 'HEAD^{tree}')" "git writes HEAD's tree from the index (cache tree invalidated where it changed)"
expect_eq "$(git ls-files -s runs/idx/0001.json | cut -d' ' -f2)" "$(git rev-parse HEAD:runs/idx/0001.json)" "the record's entry is the committed blob"
expect_fsck

step "the user's staged and unstaged changes stay as they were, and out of the commit"
printf 'staged\n' >notes.txt && git add notes.txt
printf 'new file, staged\n' >added.txt && git add added.txt
printf 'int main() { return 1; }\n' >src/main.cpp  # unstaged
staged_before=$(git diff --cached --name-status | tr '\t' ' ')
before=$(git rev-parse HEAD)
expect_rc 0 ab step --cell v=b
expect_eq "$(git diff --cached --name-status | tr '\t' ' ')" "$staged_before" "the staged changes are still staged"
expect_eq "$(git diff --name-only)" "src/main.cpp" "the unstaged change is still unstaged"
expect_eq "$(git diff --name-only "$before" HEAD | tr '\n' ' ')" "AB.md AB.svg runs/idx/0002.json " "the commit holds only abtrack's files"
expect_eq "$(git show HEAD:notes.txt)" "first" "the commit has the committed notes, not the staged ones"
git stash -q && git stash pop -q --index  # git itself reads and rewrites this index without complaint
expect_eq "$(git diff --cached --name-status | tr '\t' ' ')" "$staged_before" "still staged after a git stash round trip"
git reset -q && git checkout -q -- notes.txt src/main.cpp && rm -f added.txt
expect_clean
expect_fsck

step "a file changed in the same second as the index git wrote, at the same size, still shows as changed"
# git compares whole seconds (Debian's git has no USE_NSEC): an entry whose file changed in the
# second the index was written is racily clean. Once abtrack writes the index a second later,
# only a smudged entry (size 0) keeps the change visible.
racy_setup() {
  python3 -c 'import time; time.sleep(1.02 - time.time() % 1)'  # just after a second starts
  printf 'aaaa\n' >racy.txt && git add racy.txt && printf 'bbbb\n' >racy.txt
  [ "$(stat -c %Y racy.txt)" = "$(stat -c %Y .git/index)" ]
}
racy_setup || racy_setup || racy_setup
expect_eq "$(stat -c %Y racy.txt)" "$(stat -c %Y .git/index)" "the change fell in the index's second (set-up)"
sleep 1.1
expect_rc 0 ab step --cell v=f
expect_eq "$(git diff --name-only)" "racy.txt" "the same-size change in the index's second is still unstaged"
expect_eq "$(git show :racy.txt)" "aaaa" "the staged content is what was added"
git rm -q -f --cached racy.txt && rm -f racy.txt
expect_clean

step "the status walk sees a racily clean edit"
# An entry that is racily clean (its file changed in the index's own second, at the same size)
# has its content looked at again, as git does: the edit is seen.
git config core.trustctime false  # the inode, size and modification time below are the whole stat data
racy_edit() {  # racy_edit FILE: another first byte, the same size, inode and modification time
  python3 - "$1" <<'PY'
import os, sys
p = sys.argv[1]
st = os.stat(p)
with open(p, "r+b") as f:
    first = f.read(1)
    f.seek(0)
    f.write(b"X" if first != b"X" else b"Y")
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
}
T=1700000000
touch -d @$T AB.md src/main.cpp && git update-index --refresh >/dev/null  # the entries record second T
touch -d @$T .git/index  # and the index was written in it: both entries are racily clean
racy_edit AB.md
expect_eq "$(git --no-optional-locks status --porcelain -- AB.md)" " M AB.md" "git sees the same-second edit (set-up)"
cp AB.md "$WORK/racy.doc"
H=$(git rev-parse HEAD)
expect_rc 3 ab step --cell v=c
expect_match "$ERR" "abtrack: error: uncommitted changes in AB\.md" "the step refuses the edited document"
expect_eq "$(git rev-parse HEAD)" "$H" "nothing committed"
expect_file_eq "$WORK/racy.doc" AB.md "the edit is intact"
git checkout -q -- AB.md
touch -d @$T AB.md && git update-index --refresh >/dev/null && touch -d @$T .git/index
racy_edit src/main.cpp
expect_eq "$(git --no-optional-locks status --porcelain)" " M src/main.cpp" "git sees the same-second edit of a source (set-up)"
expect_rc 0 ab step --cell v=c
expect_eq "$(json runs/idx/0004.json 'd["code"]["dirty"]')" true "the record says the code was dirty"
expect_match "$(json runs/idx/0004.json 'd["code"]["snapshot"]')" '^[0-9a-f]{40}$' "and names a snapshot"
git checkout -q -- src/main.cpp
git config --unset core.trustctime
expect_clean

step "index version 4 (compressed paths)"
git update-index --index-version 4
expect_eq "$(index_version)" 4 "the index is version 4"
expect_rc 0 ab step --cell v=c
expect_eq "$(index_version)" 4 "still version 4"
expect_clean
expect_eq "$(git write-tree)" "$(git rev-parse 'HEAD^{tree}')" "the index matches HEAD"
git update-index --index-version 2
expect_fsck

step "core.ignorecase"
git config core.ignorecase true
expect_rc 0 ab step --cell v=d
expect_clean
git config --unset core.ignorecase

step "a locked index: the step waits, names the lock, and the run stays committed"
: >.git/index.lock
before=$(git rev-parse HEAD)
expect_rc 3 ab step --cell v=e
expect_contains "$ERR" "index.lock"
expect_contains "$ERR" "is made"
expect_eq "$(git rev-list --count "$before"..HEAD)" 1 "the run is committed"
rm -f .git/index.lock
nothing_left
git reset -q -- runs AB.md AB.svg
expect_clean "git reset re-syncs the index, as the message says"
expect_fsck
done_testing
