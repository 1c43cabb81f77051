#!/usr/bin/env bash
# The user's repository: staged, unstaged and untracked changes survive a step exactly,
# staged changes are not swept into abtrack's commit, a dirty tree gets a snapshot commit
# (named in the record, the trailer and refs/abtrack/snapshots/<exp>/<run>), a clean tree
# none.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: userrepo
doc: docs/AB.md
axes:
  n: [1, 2, 3]
command: python3 -c 'import json,sys; print(json.dumps({"t":[float(sys.argv[1])]}))' {n}
metrics:
  t: {json: t}
EOF
mkdir -p src docs
printf 'tracked a\n' >src/a.txt
printf 'tracked b\n' >src/b.txt
printf 'tracked c\n' >src/c.txt
printf '*.log\n' >.gitignore
git add src .gitignore && git commit -q -m "user: sources" || die "git commit"

step "init"
expect_rc 0 ab init
expect_clean "after init"

step "make the tree dirty"
printf 'staged edit of a\n' >src/a.txt
printf 'new staged file\n' >src/staged_new.txt
git add src/a.txt src/staged_new.txt
printf 'unstaged edit of b\n' >>src/b.txt
printf 'staged c\n' >src/c.txt && git add src/c.txt && printf 'then unstaged c\n' >>src/c.txt
printf 'untracked content\n' >notes_untracked.txt
mkdir -p scratch && printf 'deep untracked\n' >scratch/deep.txt
printf 'ignored\n' >build.log
git diff --cached --binary >"$WORK/cached.before"
git diff --binary >"$WORK/diff.before"
git status --porcelain --untracked-files=all >"$WORK/status.before"
stat -c '%y %s' src/b.txt notes_untracked.txt scratch/deep.txt build.log >"$WORK/stat.before"
cp notes_untracked.txt "$WORK/untracked.before"
HEAD0=$(git rev-parse HEAD)

step "step on a dirty tree"
expect_rc 0 ab step
expect_eq "$(git rev-parse HEAD^)" "$HEAD0" "one commit on top of HEAD"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "docs/AB.md runs/userrepo/0001.json " \
  "the run commit has only the record and the document (staged changes not swept in)"
expect_eq "$(git symbolic-ref HEAD)" refs/heads/main "still on main"
git diff --cached --binary >"$WORK/cached.after"
git diff --binary >"$WORK/diff.after"
git status --porcelain --untracked-files=all >"$WORK/status.after"
stat -c '%y %s' src/b.txt notes_untracked.txt scratch/deep.txt build.log >"$WORK/stat.after"
expect_file_eq "$WORK/cached.before" "$WORK/cached.after" "staged changes (git diff --cached) changed"
expect_file_eq "$WORK/diff.before" "$WORK/diff.after" "unstaged changes (git diff) changed"
expect_file_eq "$WORK/status.before" "$WORK/status.after" "git status --porcelain changed (committed paths must show nothing)"
expect_file_eq "$WORK/stat.before" "$WORK/stat.after" "the user's unstaged/untracked/ignored files were touched"
expect_file_eq "$WORK/untracked.before" notes_untracked.txt "untracked file content"
expect_eq "$(git status --porcelain -- docs runs)" "" "git status shows nothing for the committed paths"
expect_fsck

step "the snapshot"
rec=runs/userrepo/0001.json
expect_eq "$(json $rec 'd["code"]["dirty"]')" true "code.dirty"
code=$(json $rec 'd["code"]["commit"]')
expect_true "code.commit is HEAD before the step or the commit its code comes from" git merge-base --is-ancestor "$code" "$HEAD0"
expect_true "code.commit has HEAD's code" git diff --quiet "$code" "$HEAD0" -- . ':!runs' ':!docs/AB.md'
expect_eq "$(git rev-parse "$HEAD0^{tree}")" "$(git rev-parse HEAD^^{tree})" "sanity: HEAD0 is the run commit's parent"
snap=$(json $rec 'd["code"]["snapshot"]')
expect_match "$snap" '^[0-9a-f]{40}$' "code.snapshot is a commit id"
ref=refs/abtrack/snapshots/userrepo/1
expect_eq "$(git rev-parse --verify -q "$ref")" "$snap" "$ref names the snapshot"
expect_eq "$(git cat-file -t "$snap" 2>/dev/null)" commit "the snapshot is a commit"
expect_eq "$(git rev-parse "$snap^" 2>/dev/null)" "$HEAD0" "the snapshot's parent is HEAD"
expect_eq "$(git show "$snap:notes_untracked.txt" 2>/dev/null)" "untracked content" "snapshot has the untracked file"
expect_eq "$(git show "$snap:scratch/deep.txt" 2>/dev/null)" "deep untracked" "snapshot has untracked files in new folders"
expect_eq "$(git show "$snap:src/a.txt" 2>/dev/null)" "staged edit of a" "snapshot has the staged edit"
expect_eq "$(git show "$snap:src/staged_new.txt" 2>/dev/null)" "new staged file" "snapshot has the staged new file"
expect_eq "$(git show "$snap:src/b.txt" 2>/dev/null | tr '\n' ' ')" "tracked b unstaged edit of b " "snapshot has the unstaged edit"
expect_eq "$(git show "$snap:src/c.txt" 2>/dev/null | tr '\n' ' ')" "staged c then unstaged c " "snapshot has the work-tree version"
expect_false "snapshot must not contain ignored files" git cat-file -e "$snap:build.log" 2>/dev/null
expect_contains "$(git log -1 --format='%(trailers:key=Abtrack-Code,valueonly)')" "$code +snapshot $snap" "Abtrack-Code names the code commit and the snapshot"
expect_eq "$(git for-each-ref --format='%(refname)' refs/heads)" refs/heads/main "no branch created"
expect_eq "$(git stash list)" "" "no stash created"

step "the user's next commit keeps the run"
git commit -q -m "user: staged work" || fail "user commit"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "src/a.txt src/c.txt src/staged_new.txt " \
  "the user's commit contains exactly what the user staged"
expect_true "the record is still in HEAD" git cat-file -e HEAD:$rec
expect_eq "$(git diff HEAD~1 HEAD -- docs runs)" "" "the user's commit does not revert the run"

step "clean tree: no snapshot"
git add -A && git commit -q -m "user: everything" || fail "user commit"
expect_clean "before the clean step"
HEAD1=$(git rev-parse HEAD)
expect_rc 0 ab step
rec2=runs/userrepo/0002.json
expect_eq "$(json $rec2 'd["code"]["dirty"]')" false "clean tree: code.dirty false"
expect_eq "$(json $rec2 'd["code"]["snapshot"]')" null "clean tree: no snapshot"
expect_eq "$(json $rec2 'd["code"]["commit"]')" "$HEAD1" "code.commit"
expect_false "no snapshot ref for a clean run" git rev-parse --verify -q refs/abtrack/snapshots/userrepo/2
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Code,valueonly)' | sed '/^$/d')" "$HEAD1" "Abtrack-Code is just HEAD"
expect_clean "after the clean step"

step "ignored-only changes do not count as dirty"
printf 'more\n' >>build.log
expect_rc 0 ab step
expect_eq "$(json runs/userrepo/0003.json 'd["code"]["dirty"]')" false "an ignored file does not make the tree dirty"
expect_eq "$(git for-each-ref --format='%(refname)' refs/abtrack | tr '\n' ' ')" "refs/abtrack/snapshots/userrepo/1 " "only the dirty run has a snapshot ref"
expect_fsck

step "an edit of the document made while the run goes on stays the user's, unstaged"
new_repo during
# The command edits the document itself, as a user would while it runs.
cat >abtrack.yaml <<'EOF'
experiment: during
doc: AB.md
axes:
  n: [1, 2]
command: "printf '\\nmy note\\n' >>AB.md; echo '{\"t\": 1}'"
metrics:
  t: {json: t}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init
expect_rc 0 ab step
expect_contains "$ERR" "AB.md in the work tree is not what the run committed"
expect_eq "$(git status --porcelain)" " M AB.md" "the edit is unstaged; nothing of the commit is staged to be undone"
expect_eq "$(tail -n 1 AB.md)" "my note" "the edit is kept in the work tree"
printf 'x\n' >other.txt && git add other.txt && git commit -q -m "user: other" || fail "user commit"
expect_eq "$(git show --name-only --format= HEAD)" "other.txt" "the user's next commit holds only what they staged"
expect_true "the run's record is still in HEAD" git cat-file -e HEAD:runs/during/0001.json
expect_eq "$(git diff HEAD~1 HEAD -- AB.md runs)" "" "the user's commit does not revert the run"

step "a file of the user's at the next record's path stays theirs, unstaged"
git checkout -q AB.md
printf '{"mine": true}\n' >runs/during/0002.json
expect_rc 0 ab step --cell n=2
expect_eq "$(git status --porcelain | tr '\n' ' ')" " M AB.md  M runs/during/0002.json " \
  "the user's file (and the command's edit again) unstaged against the commit"
expect_eq "$(git show HEAD:runs/during/0002.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"])')" 2 \
  "HEAD has the run's record"
expect_eq "$(cat runs/during/0002.json)" '{"mine": true}' "the user's file is kept"
expect_fsck

step "an untracked nested git repository: the snapshot leaves it out; changed code pools apart"
new_repo nested
cat >abtrack.yaml <<'EOF'
experiment: nested
doc: AB.md
axes:
  n: [1, 2]
command: ./bench.sh
metrics:
  t: {json: t}
EOF
printf '#!/bin/sh\necho "{\\"t\\": 100}"\n' >bench.sh && chmod +x bench.sh
git_commit_all "user: plan and bench"
expect_rc 0 ab init
git init -q vendor/dep && printf 'x\n' >vendor/dep/x.h
expect_rc 0 ab step --cell n=1
expect_not_contains "$ERR" "could not snapshot"
expect_match "$(json runs/nested/0001.json 'd["code"]["snapshot"]')" '^[0-9a-f]{40}$' "a snapshot despite the nested repository"
expect_false "the nested repository is not in the snapshot" git cat-file -e "$(json runs/nested/0001.json 'd["code"]["snapshot"]'):vendor/dep/x.h"
sed -i 's/100/200/' bench.sh
expect_rc 0 ab step --cell n=1
expect_rc 0 ab status
expect_match "$OUT" 'n=1 +pass +run 2 +t 200$' "the changed code is a pool of its own"

done_testing
