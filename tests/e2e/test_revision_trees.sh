#!/usr/bin/env bash
# A revision's tree is a linked work tree of its commit where a build can use git: inside it
# `git rev-parse HEAD` is the revision's commit (the snapshot for WORKTREE), `git describe
# --dirty` works and `git status` is clean before the build; submodules are checked out from the
# user's repository (and one it cannot provide is refused by name); a Git LFS pointer gets its
# content from .git/lfs/objects; `workdir:` is checked in each revision's tree. Build outputs
# are keyed by tree and build command: changing the command builds afresh, reverting it finds
# the earlier outputs, and editing the plan's prose neither rebuilds nor checks out again.
source "$(dirname "$0")/lib.sh"

BUILDS=$WORK/builds.log
: >"$BUILDS"

step "a submodule repository and a main repository with an LFS file"
new_repo subrepo
echo "sub-v1" >VERSION
git_commit_all "sub: v1"
new_repo trees
git -c protocol.file.allow=always submodule add -q "$WORK/subrepo" sub 2>/dev/null || die "git submodule add failed"
lfs_content="the real content of a large file"
lfs_oid=$(printf '%s\n' "$lfs_content" | sha256sum | cut -d' ' -f1)
lfs_size=$(printf '%s\n' "$lfs_content" | wc -c | tr -d ' ')
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %s\n' "$lfs_oid" "$lfs_size" >data.bin
echo "data.bin filter=lfs diff=lfs merge=lfs -text" >.gitattributes
mkdir -p ".git/lfs/objects/${lfs_oid:0:2}/${lfs_oid:2:2}"
printf '%s\n' "$lfs_content" >".git/lfs/objects/${lfs_oid:0:2}/${lfs_oid:2:2}/$lfs_oid"
cat >build.sh <<EOF
#!/bin/sh
# What git says here, before the build writes anything.
set -e
git status --porcelain >../status.txt
git rev-parse HEAD >../head.txt
git describe --always --dirty >../describe.txt
mkdir -p out
cat sub/VERSION >out/sub.txt
cat data.bin >out/lfs.txt
echo "\$1" >out/variant
echo "build \$1 \$(cat code.txt)" >>"$BUILDS"
EOF
printf '#!/bin/sh\necho "{\\"t\\": $(cat out/variant)}"\n' >run.sh
chmod +x build.sh run.sh
echo "base" >code.txt
git_commit_all "user: build and run"
cat >abtrack.yaml <<'EOF'
experiment: trees
doc: AB.md
why: first words
revisions:
  base: main
  mine: WORKTREE
build: ./build.sh 1
baseline: {rev: base}
rounds: 1
command: ./run.sh
metrics:
  t: {json: t, better: lower}
EOF
expect_rc 0 ab init
main=$(git rev-parse main~1)  # main's tip is abtrack's init commit: the name means the user's commit below it
echo "mine" >code.txt  # uncommitted: WORKTREE is a snapshot

step "inside a revision's tree git tells the truth"
expect_rc 0 ab run --seed 1
expect_eq "$(grep -c '^build 1' "$BUILDS")" 2 "each revision built once"
base_tree=$(dirname "$(grep -l "$main" .git/abtrack/trees/*/head.txt | head -1)")
[ -n "$base_tree" ] && [ -d "$base_tree/code" ] && pass_check || fail "base's tree (HEAD $main) is under .git/abtrack/trees/"
base_code=$base_tree/code
expect_eq "$(cat "$base_tree/head.txt")" "$main" "git rev-parse HEAD in base's tree is main's commit"
expect_eq "$(cat "$base_tree/describe.txt")" "${main:0:7}" "git describe --always --dirty: main's commit, not dirty"
expect_eq "$(cat "$base_tree/status.txt")" "" "git status --porcelain is clean before the build"
expect_eq "$(git -C "$base_code" rev-parse HEAD)" "$main" "HEAD of the tree is still main's commit"
expect_eq "$(git -C "$base_code" symbolic-ref -q HEAD || echo detached)" detached "its HEAD is detached"
expect_eq "$(git branch --list | wc -l | tr -d ' ')" 1 "no branch was left in the repository"
expect_contains "$(git worktree list)" "$base_code" "git worktree list shows the tree"
mine_run=$(grep -l '"rev": "mine"' runs/trees/*.json | head -1)
snap=$(json "$mine_run" 'd["code"]["snapshot"]')
mine_tree=$(dirname "$(grep -l "$snap" .git/abtrack/trees/*/head.txt | head -1)")
[ -n "$snap" ] && [ -n "$mine_tree" ] && pass_check || fail "mine's tree has HEAD at the snapshot $snap"
expect_eq "$(cat "$mine_tree/code/code.txt")" "mine" "mine's tree holds the uncommitted change"
expect_eq "$(cat "$mine_tree/status.txt")" "" "git status is clean in mine's tree too"

step "submodules are checked out, LFS content is there"
expect_eq "$(cat "$base_code/out/sub.txt")" "sub-v1" "the build read the submodule's file"
expect_eq "$(git -C "$base_code/sub" rev-parse HEAD)" "$(git -C sub rev-parse HEAD)" "the submodule is at the commit's gitlink"
expect_eq "$(cat "$base_code/out/lfs.txt")" "$lfs_content" "the LFS file has its content, not the pointer"
expect_eq "$(git -C "$base_code" status --porcelain | grep -v '^?? out/$')" "" "git sees the LFS file and the submodule unchanged"

step "an LFS pointer without content: a warning naming it"
git checkout -q -b nolfs
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize 5\n' "$(printf 'x' | sha256sum | cut -d' ' -f1)" >missing.bin
git add missing.bin && git commit -q -m "user: a pointer with no content"
git checkout -q main
expect_rc 0 ab run --all --rev mine=nolfs
expect_contains "$ERR" "missing.bin" "the warning names the pointer whose content is missing"
expect_contains "$ERR" "stay pointers" "and says what happens"

step "a submodule that no local copy holds is refused by name"
git checkout -q -b gone
git -C sub checkout -q -b other 2>/dev/null
(cd sub && echo "sub-v2" >VERSION && git -c user.name=T -c user.email=t@example.com commit -q -am "sub: v2")
git add sub && git commit -q -m "user: sub at a commit only the submodule's own checkout has"
gone_sub=$(git -C sub rev-parse HEAD)
(cd sub && git checkout -q main && git branch -q -D other && git reflog expire --expire=now --all && git gc -q --prune=now)
git checkout -q main 2>/dev/null
git -C sub cat-file -e "$gone_sub" 2>/dev/null && die "the commit should be gone from the submodule's copy"
expect_rc 3 ab run --all --rev mine=gone
expect_contains "$ERR" "submodule 'sub' (sub)" "the error names the submodule"
expect_contains "$ERR" "git submodule update --init --recursive" "and says what to do"
expect_contains "$ERR" "revision 'mine' (gone)" "and the revision"

step "workdir: is checked in each revision's tree, not the user's work tree"
git checkout -q -b tools
mkdir -p tools && printf '#!/bin/sh\necho "{\\"t\\": 7}"\n' >tools/run.sh && chmod +x tools/run.sh
git add tools && git commit -q -m "user: tools/"
git checkout -q main
[ ! -e tools ] || die "tools/ must exist only on the branch"
cat >wd.yaml <<'EOF'
experiment: wd
doc: WD.md
revisions:
  base: main
  feat: tools
baseline: {rev: base}
workdir: tools
rounds: 1
command: ./run.sh
metrics:
  t: {json: t, better: lower}
EOF
expect_rc 1 ab -p wd.yaml run --seed 1
expect_not_contains "$ERR" "is not a folder" "not refused for the user's work tree"
expect_contains "$ERR" "revision 'base' (main) has no folder 'tools' (workdir:)" "the revision without it is named"
feat_run=$(grep -l '"rev": "feat"' runs/wd/*.json | head -1)
base_wd=$(grep -l '"rev": "base"' runs/wd/*.json | head -1)
expect_eq "$(json "$feat_run" 'd["outcome"]')" pass "feat ran in its tools/"
expect_eq "$(json "$feat_run" 'd["metrics"]["t"]["samples"][0]')" 7.0 "its metric"
expect_eq "$(json "$base_wd" 'd["outcome"]')" invalid "base's run is invalid"

step "build outputs are keyed by tree and build command"
# base's builds are counted: mine (WORKTREE) snapshots the edited plan file too, so its code
# changes with each edit here.
t_of() { json "$(ls runs/trees/*.json | tail -2 | xargs grep -l '"rev": "base"')" 'd["metrics"]["t"]["samples"][0]'; }
: >"$BUILDS"
sed -i 's|^build: ./build.sh 1|build: ./build.sh 2|' abtrack.yaml
expect_rc 0 ab run --all --seed 2
expect_eq "$(grep -c '^build 2 base' "$BUILDS")" 1 "a changed command builds afresh"
expect_eq "$(t_of)" 2.0 "the runs measure build 2's outputs"
sed -i 's|^build: ./build.sh 2|build: ./build.sh 1|' abtrack.yaml
expect_rc 0 ab run --all --seed 3
expect_eq "$(grep -c 'base' "$BUILDS")" 1 "reverting the command builds nothing"
expect_eq "$(t_of)" 1.0 "and its runs measure build 1's outputs again"
sed -i 's|^why: first words|why: other words|' abtrack.yaml
expect_rc 0 ab run --all --seed 4
expect_eq "$(grep -c 'base' "$BUILDS")" 1 "editing why: builds nothing"
expect_not_contains "$ERR" "revision base: checking out" "nor checks out again"
last_base=$(ls runs/trees/*.json | tail -2 | xargs grep -l '"rev": "base"')
expect_eq "$(git -C "$base_code" rev-parse HEAD)" "$(json "$last_base" 'd["code"]["commit"]')" \
  "base's tree is at the commit its last run measured (main moved by run commits, same code)"
expect_eq "$(git status --porcelain | grep -v -e '^?? wd.yaml' -e '^ M code.txt' -e '^ M abtrack.yaml')" "" "the user's work tree is as it was"
done_testing
