#!/usr/bin/env bash
# The user's repository: a linked worktree (the step commits on the worktree's
# branch, the main checkout is untouched, the journal and commit lock are shared in the common
# git dir); a repository owned by another user (exit 3 naming the path and the safe.directory
# fix); extensions.worktreeConfig (exit 3, clear message); a split index (exit 3, clear
# message and the command that undoes it). Nothing is written in the refused cases.
source "$(dirname "$0")/lib.sh"

write_plan() {
  cat >abtrack.yaml <<'EOF'
experiment: repos
doc: AB.md
axes:
  n: [1, 2, 3]
command: echo '{"t":[{n}]}'
metrics:
  t: {json: t}
EOF
}

step "linked worktree"
new_repo main
write_plan
expect_rc 0 ab init
MAIN_TIP=$(git rev-parse main)
git worktree add -q "$WORK/wt" -b exp || die "git worktree add"
cd "$WORK/wt" || die "cd"
expect_rc 0 ab step
expect_eq "$(git rev-parse main)" "$MAIN_TIP" "the main branch did not move"
expect_eq "$(git rev-list --count main..exp)" 1 "the run is committed on the worktree's branch"
expect_eq "$(git symbolic-ref HEAD)" refs/heads/exp "the worktree is still on its branch"
expect_true "the record is in the worktree" test -f runs/repos/0001.json
expect_false "the main checkout did not get the record" test -e "$REPO/runs/repos/0001.json"
expect_clean "the worktree is clean after the step"
(cd "$REPO" && git status --porcelain --untracked-files=all) >"$WORK/main.status"
expect_eq "$(cat "$WORK/main.status")" "" "the main checkout is clean and untouched"
expect_true "abtrack state is in the common git dir" test -d "$REPO/.git/abtrack"
expect_false "no abtrack state inside the worktree's own git dir" test -e "$REPO/.git/worktrees/wt/abtrack"
expect_eq "$(journal_entries "$REPO/.git" | tr '\n' ' ')" "" "journal empty"
# Both checkouts step concurrently: one commit lock, each on its own branch.
( cd "$REPO" && for _ in 1 2 3; do "$ABTRACK" -q step --cell n=1 </dev/null >/dev/null 2>>"$WORK/wt.err" || exit 1; done ) & p1=$!
( for _ in 1 2 3; do "$ABTRACK" -q step --cell n=2 </dev/null >/dev/null 2>>"$WORK/wt.err" || exit 1; done ) & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
expect_eq "$r1 $r2" "0 0" "concurrent steps in both checkouts succeed ($(head -3 "$WORK/wt.err" | tr '\n' ' '))"
expect_eq "$(git rev-list --count "$MAIN_TIP"..main)" 3 "3 runs on main"
expect_eq "$(git rev-list --count "$MAIN_TIP"..exp)" 4 "4 runs on exp"
expect_clean "worktree clean"
(cd "$REPO" && git status --porcelain --untracked-files=all) >"$WORK/main.status"
expect_eq "$(cat "$WORK/main.status")" "" "main checkout clean"
expect_rc 0 ab verify
(cd "$REPO" && "$ABTRACK" verify) >/dev/null 2>&1
expect_eq "$?" 0 "verify in the main checkout"
expect_fsck

# refused CODE PATTERN...: step and run exit 3 with stderr matching every PATTERN; nothing written.
refused() {
  local head0 objs0; head0=$(git rev-parse HEAD); objs0=$(find .git/objects -type f | wc -l)
  local cmd pat
  for cmd in step run; do
    expect_rc 3 ab "$cmd"
    for pat in "$@"; do expect_match "$ERR" "$pat"; done
    expect_match "$ERR" '^abtrack: error: [a-z]' "the error is in the documented format"
    expect_eq "$(git rev-parse HEAD)" "$head0" "$cmd: no commit"
    expect_eq "$(find .git/objects -type f | wc -l)" "$objs0" "$cmd: no object written"
    expect_false "$cmd: no record" test -e runs
  done
}

step "a repository owned by another user"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  new_repo owned
  write_plan
  expect_rc 0 ab init
  chown -R nobody "$REPO"
  refused "owned by another user" "$REPO" "safe.directory $REPO"
  expect_contains "$ERR" "git config --global --add safe.directory $REPO" "the hint is the exact command"
  git config --global --add safe.directory "$REPO"
  expect_rc 0 ab step
  chown -R "$(id -u)" "$REPO"
else
  echo "    (not root: cannot make a repository owned by another user; skipped)"
fi

step "extensions.worktreeConfig"
new_repo wtconfig
write_plan
expect_rc 0 ab init
git config core.repositoryformatversion 1
git config extensions.worktreeConfig true
refused "extension" "worktreeconfig" "libgit2"
git config --unset extensions.worktreeConfig
git config core.repositoryformatversion 0
expect_rc 0 ab step

step "a split index"
new_repo split
write_plan
expect_rc 0 ab init
git update-index --split-index
refused "split" "index" "no-split-index"
git update-index --no-split-index
expect_rc 0 ab step
expect_clean

step "a journaled measurement of code another branch holds is not committed here"
new_repo journal_branch
write_plan
git_commit_all "user: plan"
P=$(git rev-parse HEAD)
expect_rc 0 ab init
touch .git/refs/heads/main.lock  # the commit fails; the measurement stays in the journal
expect_rc 3 ab step
rm .git/refs/heads/main.lock
expect_eq "$(journal_entries | wc -l)" 1 "the measurement is journaled"
git checkout -q -b other "$P"  # a line of history without main's init commit
printf 'other code\n' >other.txt && git_commit_all "user: other code"
expect_rc 0 ab step
expect_contains "$ERR" "which HEAD's history does not contain (another branch?); left in place"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | grep -c .)" 1 "only this branch's own run is committed"
expect_eq "$(journal_entries | wc -l)" 1 "the measurement is still journaled"
git checkout -q main
expect_rc 0 ab step
expect_contains "$OUT" "measured by an earlier invocation"
expect_eq "$(journal_entries | wc -l)" 0 "committed on its own branch"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | grep -c .)" 2 "main: the journaled run and this step's"
expect_fsck

step "a run committed on a detached HEAD is named"
git checkout -q --detach
expect_rc 0 ab step
expect_contains "$ERR" "abtrack: warning: HEAD is detached: run 3 is committed on no branch"

step "a run commit rebased onto new code: the next run names the new code (a new pool)"
new_repo rebased
printf 'old\n' >src.c
cat >abtrack.yaml <<'EOF'
experiment: rebased
doc: AB.md
axes:
  n: [1, 2]
command: if grep -q new src.c; then echo '{"t":[1]}'; else echo '{"t":[2]}'; fi
metrics:
  t: {json: t}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init
git branch up
expect_rc 0 ab step --cell n=1
git checkout -q up && printf 'new\n' >>src.c && git_commit_all "user: new code" && git checkout -q main
git rebase -q up || fail "rebase"
expect_rc 0 ab step --cell n=1
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Code,valueonly)' | sed '/^$/d')" "$(git rev-parse HEAD~1)" \
  "the run names the rebased commit, which holds the new code"
expect_rc 0 ab status
expect_match "$OUT" 'n=1 +pass +run 2 +t 1$' "the new code's run is a pool of its own"

step "a run number that comes back on another branch keeps both snapshots"
new_repo renumbered
write_plan
printf 'x\n' >src.c
git_commit_all "user: plan"
expect_rc 0 ab init
git checkout -q -b b1 && printf 'dirty 1\n' >>src.c
expect_rc 0 ab step
s1=$(json runs/repos/0001.json 'd["code"]["snapshot"]')
git checkout -q src.c && git checkout -q main && git checkout -q -b b2 && printf 'dirty 2\n' >>src.c
expect_rc 0 ab step
s2=$(json runs/repos/0001.json 'd["code"]["snapshot"]')
expect_eq "$(git rev-parse refs/abtrack/snapshots/repos/1)" "$s1" "the first run 1 keeps its ref"
expect_eq "$(git rev-parse "refs/abtrack/snapshots/repos/1-${s2:0:12}")" "$s2" "the second run 1 gets its own"
git checkout -q src.c && git gc -q --prune=now
expect_true "the first snapshot survives gc" git cat-file -e "$s1"

step "a journaled measurement keeps the scale it was taken with when the plan changes it"
new_repo rescaled
cat >abtrack.yaml <<'EOF'
experiment: rescaled
doc: AB.md
axes:
  n: [1, 2]
command: echo '{"t":[{n}]}'
metrics:
  t: {json: t}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init
touch .git/refs/heads/main.lock
expect_rc 3 ab step
rm .git/refs/heads/main.lock
sed -i 's/t: {json: t}/t: {json: t, scale: 1000, unit: us}/' abtrack.yaml && git_commit_all "user: microseconds"
expect_rc 0 ab step --cell n=2
expect_eq "$(json runs/rescaled/0001.json 'd["metrics"]["t"]["scale"]')" 1.0 "the recovered run says the scale it was measured with"
expect_eq "$(json runs/rescaled/0001.json '"unit" in d["metrics"]["t"]')" false "and no unit"
expect_eq "$(json runs/rescaled/0002.json 'd["metrics"]["t"]["samples"]')" "[2000.0]" "the new run is scaled"

done_testing
