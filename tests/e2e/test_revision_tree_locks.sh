#!/usr/bin/env bash
# A revision's tree is held for as long as a run uses it: `abtrack clean --keep 0` while a run
# is going leaves that tree alone (and says so), and the run passes. What a killed abtrack left
# goes: a .partial-* folder and a half-written tree are removed by the next write and by clean,
# and a build still running after its abtrack was killed (kill -9) is stopped before the next
# build starts, so two builds never race in one tree. clean says "removed" only for what it
# removed, and takes the tree's registration in .git/worktrees/ with it.
source "$(dirname "$0")/lib.sh"

BUILDS=$WORK/builds.log
: >"$BUILDS"
new_repo locks
printf '#!/bin/sh\nif [ -e "%s/slow" ]; then echo $$ >>"%s/build.pids"; sleep 30; fi\necho "build $1" >>"%s"\n' \
  "$WORK" "$WORK" "$BUILDS" >build.sh
printf '#!/bin/sh\nif [ -e "%s/slow-run" ]; then sleep 3; fi\necho "{\\"t\\": 1}"\n' "$WORK" >run.sh
chmod +x build.sh run.sh
git_commit_all "user: v1" && git tag v1
echo "v2" >v2.txt && git_commit_all "user: v2" && git tag v2
cat >abtrack.yaml <<'EOF'
experiment: locks
doc: AB.md
revisions:
  base: v1
  mine: v2
build: ./build.sh 1
baseline: {rev: base}
rounds: 1
command: ./run.sh
metrics:
  t: {json: t, better: lower}
EOF
expect_rc 0 ab init
trees=.git/abtrack/trees
# Whether process $1 is running (a zombie is not).
alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) && [ -n "$st" ] && [ "$st" != Z ]; }
ntrees() { find "$trees" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l | tr -d ' '; }

step "clean --keep 0 while a run uses the trees: they are kept, the run passes"
expect_rc 0 ab run --seed 1
expect_eq "$(ntrees)" 2 "one tree per revision"
sed -i 's|^build: ./build.sh 1|build: ./build.sh 2|' abtrack.yaml   # the plan names others now
touch "$WORK/slow-run"
"$ABTRACK" -p abtrack.yaml run --all --seed 2 >"$WORK/bg.out" 2>"$WORK/bg.err" &
bg=$!
for _ in $(seq 100); do grep -q '\[1/2\]' "$WORK/bg.err" && break; sleep 0.1; done
grep -q '\[1/2\]' "$WORK/bg.err" || die "the background run did not start its cells"
cp abtrack.yaml other.yaml && sed -i 's|^build: ./build.sh 2|build: ./build.sh 3|' other.yaml
expect_rc 0 ab -p other.yaml clean --keep 0
expect_eq "$(grep -c '^kept .*: in use by a running abtrack' "$OUT")" 2 "both trees of the running plan are kept, and clean says so"
expect_eq "$(grep -c '^removed ' "$OUT")" 2 "the other two (build 1) are removed"
wait "$bg"
expect_eq "$?" 0 "the run that held them passed ($(tail -3 "$WORK/bg.err" | tr '\n' ' '))"
expect_eq "$(grep -c 'pass' "$WORK/bg.out")" 2 "both runs pass"
expect_eq "$(ntrees)" 2 "the trees in use are still there"
expect_eq "$(git worktree list | wc -l | tr -d ' ')" 3 "git knows the main work tree and the two left"
rm -f "$WORK/slow-run"

step "clean removes a tree with its registration, and leftovers of a killed write"
sleep 1 & dead=$!; wait $dead   # a pid nobody has now
mkdir -p "$trees/.partial-0123456789ab-$dead/sub" && echo x >"$trees/.partial-0123456789ab-$dead/sub/f"
expect_rc 0 ab -p other.yaml clean --keep 0
expect_contains "$OUT" "removed $trees/.partial-0123456789ab-$dead" "the .partial folder is removed"
[ ! -e "$trees/.partial-0123456789ab-$dead" ] && pass_check || fail "the .partial folder is gone"
expect_eq "$(ntrees)" 0 "no tree is left"
expect_eq "$(git worktree list | wc -l | tr -d ' ')" 1 "nor a registration in .git/worktrees (git worktree list)"
expect_eq "$(ls .git/worktrees 2>/dev/null | wc -l | tr -d ' ')" 0 ".git/worktrees is empty"

step "a tree left half-written is written again by the next run; a .partial folder goes"
: >"$BUILDS"
expect_rc 0 ab run --all --seed 3
one=$(find "$trees" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | head -1)
rm "$one/ready" && rm -f "$one/code/run.sh"    # as if killed while checking out
mkdir -p "$trees/.partial-0123456789ab-$dead"
expect_rc 0 ab run --all --seed 4
expect_contains "$ERR" "was left incomplete; writing it again" "the incomplete tree is noticed"
expect_eq "$(grep -c pass "$OUT")" 2 "and both runs pass"
[ ! -e "$trees/.partial-0123456789ab-$dead" ] && pass_check || fail "the next write removed the .partial folder"

step "clean reports a tree it cannot remove as a warning, not as removed"
sed -i 's|^build: ./build.sh 2|build: ./build.sh 4|' abtrack.yaml   # no tree is named now
victim=$(find "$trees" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | head -1)
# Something that cannot be deleted: a read-only folder, or for root an immutable file.
if [ "$(id -u)" = 0 ]; then lock_it() { chattr +i "$victim/code/run.sh"; }; unlock_it() { chattr -i "$victim/code/run.sh"; }
else lock_it() { chmod a-w "$victim/code"; }; unlock_it() { chmod u+w "$victim/code"; }; fi
if lock_it 2>/dev/null; then
  expect_rc 0 ab clean --keep 0
  unlock_it
  expect_contains "$ERR" "could not remove ${victim#./}" "the warning names the tree"
  expect_not_contains "$OUT" "removed ${victim#./}" "it is not reported as removed"
  expect_rc 0 ab clean --keep 0
  expect_contains "$OUT" "removed ${victim#./}" "once it can be, it is"
else
  echo "note: nothing can be made undeletable here; this step is skipped" >&2
fi

step "a build left running by a killed abtrack is stopped before the next build"
touch "$WORK/slow"
: >"$WORK/build.pids"
"$ABTRACK" run --all --seed 5 >/dev/null 2>"$WORK/killed.err" &
ab_pid=$!
for _ in $(seq 100); do [ -s "$WORK/build.pids" ] && break; sleep 0.1; done
[ -s "$WORK/build.pids" ] || die "the slow build did not start"
kill -9 "$ab_pid"; wait "$ab_pid" 2>/dev/null
orphan=$(head -1 "$WORK/build.pids")
alive "$orphan" && pass_check || fail "the build outlived its abtrack (the case to handle)"
rm "$WORK/slow"
expect_rc 0 ab run --all --seed 6
expect_contains "$ERR" "stopped a build that a killed abtrack left running" "the next run says it stopped the orphan"
if alive "$orphan"; then fail "the orphaned build ($orphan) is still running"; kill -9 "$orphan"; else pass_check; fi
expect_eq "$(wc -l <"$WORK/build.pids" | tr -d ' ')" 1 "no second slow build was started"
done_testing
