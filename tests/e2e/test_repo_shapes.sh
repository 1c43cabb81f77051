#!/usr/bin/env bash
# Repository shapes: an unborn branch (init makes the root commit; step without init), a
# detached HEAD (step moves HEAD, no branch moves), running from a subdirectory with -p, with a
# plan in the current directory, and with the nearest plan above it.
source "$(dirname "$0")/lib.sh"

write_plan() {  # write_plan FILE DOC
  cat >"$1" <<EOF
experiment: shapes
doc: $2
axes:
  n: [1, 2, 3]
command: python3 -c 'import json,os,sys; print(json.dumps({"t":[float(sys.argv[1])],"cwd":os.getcwd()}))' {n}
metrics:
  t: {json: t}
EOF
}

step "unborn branch: init makes the first commit"
new_repo unborn
write_plan abtrack.yaml AB.md
expect_false "precondition: unborn HEAD" git rev-parse -q --verify HEAD
expect_rc 0 ab init
expect_eq "$(commit_count)" 1 "init makes the root commit"
expect_eq "$(git rev-list --max-parents=0 HEAD)" "$(git rev-parse HEAD)" "the init commit has no parent"
expect_eq "$(git symbolic-ref HEAD)" refs/heads/main "the branch HEAD pointed to is born"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "AB.md abtrack.yaml " "root commit holds plan and document"
expect_clean "after init on an unborn branch"
expect_rc 0 ab step
expect_eq "$(commit_count)" 2 "step after init"
expect_clean
expect_fsck

step "unborn branch: step without init"
new_repo unborn2
write_plan abtrack.yaml AB.md
run_cmd ab step
CHECKS=$((CHECKS + 1))
if [ "$RC" = 0 ]; then
  expect_eq "$(commit_count)" 1 "step on an unborn branch makes one root commit"
  expect_true "the record is committed" git cat-file -e HEAD:runs/shapes/0001.json
  expect_eq "$(git status --porcelain -- runs AB.md)" "" "committed paths are clean"
  expect_fsck
elif [ "$RC" = 2 ] || [ "$RC" = 3 ]; then
  expect_match "$ERR" '^abtrack: error: ' "a clear error on an unborn branch"
  expect_false "no commit" git rev-parse -q --verify HEAD
  expect_false "no record left behind" test -e runs/shapes/0001.json
else
  fail "step on an unborn branch without init exited $RC"; show_output
fi

step "detached HEAD"
new_repo detached
write_plan abtrack.yaml AB.md
expect_rc 0 ab init
expect_rc 0 ab step
MAIN=$(git rev-parse refs/heads/main)
git checkout -q --detach HEAD
expect_rc 0 ab step
expect_false "HEAD stays detached" git symbolic-ref -q HEAD
expect_eq "$(git rev-parse HEAD^)" "$MAIN" "the run commit is on top of the detached HEAD"
expect_eq "$(git rev-parse refs/heads/main)" "$MAIN" "no branch moved"
expect_eq "$(git for-each-ref --format='%(refname)' refs/heads)" refs/heads/main "no branch created"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "AB.md runs/shapes/0002.json " "detached: record and doc"
expect_clean "after a detached step"
expect_rc 0 ab log
expect_match "$OUT" '(^|[^0-9])2[^0-9].*pass' "log on a detached HEAD lists run 2"
expect_fsck

step "from a subdirectory with -p"
new_repo subdir
write_plan abtrack.yaml docs/AB.md
mkdir -p sub/deeper && printf 'keep\n' >sub/deeper/.keep
git add sub && git commit -q -m "user: sub" || die "git commit"
cd sub/deeper
expect_rc 0 ab -p ../../abtrack.yaml init
expect_true "document created at the repository-relative path" test -f "$REPO/docs/AB.md"
expect_false "no document under the subdirectory" test -e docs
expect_rc 0 ab -p ../../abtrack.yaml step
expect_true "record at the repository root" test -f "$REPO/runs/shapes/0001.json"
expect_false "no runs/ under the subdirectory" test -e runs
expect_eq "$(json "$REPO/runs/shapes/0001.json" 'json.loads(d["invocations"][0]["stdout_tail"].splitlines()[-1])["cwd"]')" "$REPO" \
  "the command runs from the repository root"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "docs/AB.md runs/shapes/0001.json " "commit paths are repository-relative"
expect_eq "$(git status --porcelain --untracked-files=all)" "" "clean after a step from a subdirectory"
expect_rc 0 ab -p ../../abtrack.yaml verify
expect_rc 0 ab -p ../../abtrack.yaml status
expect_contains "$OUT" "pending"

step "plan in the current directory (a subdirectory)"
cd "$REPO"
mkdir -p exp2
cat >exp2/abtrack.yaml <<'EOF'
experiment: sub-exp
doc: exp2/SUB.md
axes:
  n: [7]
command: echo '{"t":[7]}'
metrics:
  t: {json: t}
EOF
cd exp2
expect_rc 0 ab init
expect_true "the document path is relative to the repository root" test -f "$REPO/exp2/SUB.md"
expect_false "not relative to the current directory" test -e "$REPO/exp2/exp2"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "exp2/SUB.md exp2/abtrack.yaml " "init commits the plan from the current directory"
expect_rc 0 ab step
expect_true "record of the second experiment" test -f "$REPO/runs/sub-exp/0001.json"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Experiment,valueonly)' | sed '/^$/d')" sub-exp "trailer names the experiment"
expect_rc 0 ab log --all
expect_contains "$OUT" "sub-exp"
expect_contains "$OUT" "shapes" "log --all lists both experiments"
cd "$REPO/sub"
expect_rc 0 ab status
expect_contains "$OUT" "pending" "without a plan in the current directory, the nearest one above it (the root's) is used"
expect_rc 0 ab log
expect_not_contains "$OUT" "sub-exp" "the root's plan, not the sibling folder's"
expect_clean
expect_fsck

step "line endings converted on checkout (core.autocrlf, eol=crlf): clean after a step, verify ok"
new_repo crlf_origin
write_plan abtrack.yaml AB.md
sed -i 's/t: {json: t}/t: {json: t, better: lower}/' abtrack.yaml
expect_rc 0 ab init
expect_rc 0 ab step
cd "$WORK" && git clone -q -c core.autocrlf=true crlf_origin crlf_clone && cd crlf_clone || die "clone"
git config user.name "E2E Tester" && git config user.email "e2e@example.com"
expect_true "the clone's document has CRLF line endings" grep -q $'\r$' AB.md
expect_rc 0 ab step
expect_not_contains "$ERR" "is not what the run committed"
expect_clean "the converted document is not an edit"
expect_true "the new document is checked out with CRLF too" grep -q $'\r$' AB.md
expect_contains AB.md "| 2 | 1 |"
expect_rc 0 ab verify
new_repo eol_attr
printf '*.md text eol=crlf\n' >.gitattributes
write_plan abtrack.yaml AB.md
git_commit_all "user: attributes and plan"
expect_rc 0 ab init
expect_not_contains "$ERR" "changed while init ran"
expect_rc 0 ab step
expect_clean "eol=crlf: clean after init and a step"
expect_rc 0 ab verify
expect_fsck

done_testing
