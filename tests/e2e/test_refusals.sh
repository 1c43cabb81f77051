#!/usr/bin/env bash
# Refusals (exit 3, environment errors): uncommitted edits of the document are refused before
# anything runs (records are data: an edited or untracked file under runs/ neither blocks a step
# nor goes into its commit, and does not make the code dirty); a missing identity is named; GIT_AUTHOR_*/GIT_COMMITTER_*
# are honoured; outside a git repository nothing works.
source "$(dirname "$0")/lib.sh"

write_plan() {
  cat >abtrack.yaml <<'EOF'
experiment: refuse
doc: AB.md
axes:
  n: [1, 2, 3, 4]
command: touch "$MARKER_DIR"/ran.{n} && echo '{"t":[1.5]}'
metrics:
  t: {json: t}
EOF
}
export MARKER_DIR=$WORK/markers
mkdir -p "$MARKER_DIR"
markers() { ls "$MARKER_DIR" | tr '\n' ' '; }

new_repo
write_plan
expect_rc 0 ab init
expect_rc 0 ab step
expect_eq "$(markers)" "ran.1 " "the first step ran the command once"

step "unstaged edit of the document"
printf '\nmy unsaved thoughts\n' >>AB.md
cp AB.md "$WORK/doc.edited"
H=$(git rev-parse HEAD)
expect_rc 3 ab step
expect_match "$ERR" '^abtrack: error: .*AB\.md' "stderr names the document"
expect_eq "$(markers)" "ran.1 " "the command must not run when the step is refused"
expect_eq "$(git rev-parse HEAD)" "$H" "nothing committed"
expect_file_eq "$WORK/doc.edited" AB.md "the user's edit is intact"
expect_false "no record 2 written" test -e runs/refuse/0002.json
expect_rc 3 ab run
expect_match "$ERR" 'AB\.md' "run: stderr names the document"
expect_eq "$(markers)" "ran.1 " "run: the command must not run"
expect_eq "$(git rev-parse HEAD)" "$H" "run: nothing committed"
expect_file_eq "$WORK/doc.edited" AB.md "run: the user's edit is intact"

step "staged edit of the document"
git add AB.md
expect_rc 3 ab step
expect_contains "$ERR" "AB.md"
expect_eq "$(markers)" "ran.1 " "staged edit: the command must not run"
expect_eq "$(git rev-parse HEAD)" "$H" "staged edit: nothing committed"
expect_eq "$(git diff --cached --name-only)" "AB.md" "staged edit stays staged"
git reset -q --hard HEAD

step "edited record and untracked file under runs/: not refused, not committed, not dirty"
printf ' ' >>runs/refuse/0001.json
cp runs/refuse/0001.json "$WORK/rec.edited"
mkdir -p runs/notes && echo scratch >runs/notes/todo.txt && echo scratch >runs/refuse/scratch.txt
expect_rc 0 ab step --cell n=3
expect_eq "$(markers)" "ran.1 ran.3 " "edited record: the command ran"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "AB.md runs/refuse/0002.json " "only the new record and the document are committed"
expect_file_eq "$WORK/rec.edited" runs/refuse/0001.json "the user's edit of the old record is kept"
expect_eq "$(git status --porcelain --untracked-files=all | tr '\n' ' ')" " M runs/refuse/0001.json ?? runs/notes/todo.txt ?? runs/refuse/scratch.txt " \
  "the edits and untracked files under runs/ stay as they were"
expect_eq "$(json runs/refuse/0002.json 'd["code"]["dirty"]')" false "files under runs/ are data, not code: not dirty"
expect_eq "$(git for-each-ref refs/abtrack)" "" "no snapshot for changes under runs/ only"
step "a dirty source file beside them still gets a snapshot (data as in its parent)"
echo 'int x;' >src.c
expect_rc 0 ab step --cell n=4
expect_eq "$(json runs/refuse/0003.json 'd["code"]["dirty"]')" true "an untracked source file makes the code dirty"
snap=$(json runs/refuse/0003.json 'd["code"]["snapshot"]')
expect_eq "$(git diff --name-only "$snap^" "$snap" | tr '\n' ' ')" "src.c " "the snapshot differs from its parent only in code"
expect_eq "$(git ls-tree -r "$snap" runs AB.md)" "$(git ls-tree -r "$snap^" runs AB.md)" "the snapshot keeps runs/ and the document as its parent has them (the user's edits there are not code)"
rm -f src.c runs/notes/todo.txt runs/refuse/scratch.txt
git checkout -q -- runs
rm -f "$MARKER_DIR"/ran.3 "$MARKER_DIR"/ran.4
H=$(git rev-parse HEAD)

step "refusal is lifted once committed"
printf '\nthoughts\n' >>AB.md && git commit -q -am "user: notes"
expect_rc 0 ab step
expect_eq "$(markers)" "ran.1 ran.2 " "the step runs once the edit is committed"
expect_clean

step "no identity"
new_repo noident
git config --unset user.name; git config --unset user.email
write_plan
expect_eq "$(git config user.name)" "" "precondition: no user.name anywhere"
expect_rc 3 ab init
expect_contains "$ERR" "user.name" "init without identity names user.name"
expect_match "$ERR" '^abtrack: error: ' "error format"
expect_eq "$(commit_count)" 0 "no commit without identity"
# A commit made by real git so that step has something to build on.
GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@x GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@x git add -A
GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@x GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@x git commit -q -m base
rm -f "$MARKER_DIR"/*
H=$(git rev-parse HEAD)
expect_rc 3 ab step
expect_contains "$ERR" "user.name" "step without identity names user.name"
expect_eq "$(git rev-parse HEAD)" "$H" "step without identity commits nothing"
expect_eq "$(markers)" "" "without an identity the command does not run (the measurement could not be committed)"
expect_eq "$(git status --porcelain --untracked-files=all -- runs)" "" "no stray record left in the work tree"

step "GIT_AUTHOR_* / GIT_COMMITTER_* environment"
export GIT_AUTHOR_NAME="Env Author" GIT_AUTHOR_EMAIL=author@env.example
export GIT_COMMITTER_NAME="Env Committer" GIT_COMMITTER_EMAIL=committer@env.example
expect_rc 0 ab step
expect_eq "$(git log -1 --format='%an <%ae>')" "Env Author <author@env.example>" "author from GIT_AUTHOR_*"
expect_eq "$(git log -1 --format='%cn <%ce>')" "Env Committer <committer@env.example>" "committer from GIT_COMMITTER_*"
git config user.name "Config Name"; git config user.email config@example.com
expect_rc 0 ab step
expect_eq "$(git log -1 --format='%an <%ae>|%cn <%ce>')" "Env Author <author@env.example>|Env Committer <committer@env.example>" \
  "the environment wins over the configuration (as in git)"
unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
expect_rc 0 ab step
expect_eq "$(git log -1 --format='%an <%ae>|%cn <%ce>')" "Config Name <config@example.com>|Config Name <config@example.com>" \
  "identity from the repository configuration"
expect_fsck

step "global identity in HOME"
new_repo globalident
git config --unset user.name; git config --unset user.email
git config --global user.name "Global Name"; git config --global user.email global@example.com
write_plan
expect_rc 0 ab init
expect_eq "$(git log -1 --format='%an <%ae>')" "Global Name <global@example.com>" "identity from ~/.gitconfig"
rm -f "$HOME/.gitconfig"

step "not a git repository"
mkdir -p "$WORK/plain" && cd "$WORK/plain"
write_plan
rm -f "$MARKER_DIR"/*
for cmd in init step run status log verify; do
  expect_rc 3 ab "$cmd"
  expect_match "$ERR" '^abtrack: error: .*(git|repositor)' "$cmd outside a repository: error names the repository"
done
expect_eq "$(markers)" "" "outside a repository nothing runs"
expect_false "no runs/ folder outside a repository" test -e runs
expect_false "no document outside a repository" test -e AB.md
expect_false "no .git created" test -e .git

step "a document reached through a symbolic link is refused, not replaced by a file"
new_repo symlinked
write_plan
git_commit_all "user: plan"
expect_rc 0 ab init
mkdir docs && git mv AB.md docs/real.md && ln -s docs/real.md AB.md && git add AB.md && git commit -q -m "user: the document moved" || fail "user commit"
H=$(git rev-parse HEAD)
rm -f "$MARKER_DIR"/*
for cmd in step render; do
  expect_rc 3 ab "$cmd"
  expect_contains "$ERR" "abtrack: error: AB.md is a symbolic link (to docs/real.md)"
done
expect_eq "$(markers)" "" "nothing ran"
expect_eq "$(git rev-parse HEAD)" "$H" "no commit"
expect_true "AB.md is still the link" test -L AB.md
expect_clean

step "a file of the user's at the plot's path is refused, not overwritten"
new_repo plotclash
write_plan
sed -i 's/t: {json: t}/t: {json: t, better: lower}/' abtrack.yaml
printf '<svg>my figure</svg>\n' >AB.svg
git_commit_all "user: plan and a figure"
expect_rc 3 ab init
expect_contains "$ERR" "abtrack: error: AB.svg is not a plot abtrack made, and abtrack writes the plot of AB.md there"
expect_contains "$ERR" "plot: false"
expect_eq "$(git log --format=%s | head -n 1)" "user: plan and a figure" "no commit"
printf 'plot: false\n' >>abtrack.yaml && git_commit_all "user: no plot"
expect_rc 0 ab init
expect_rc 0 ab step
expect_eq "$(git show HEAD:AB.svg)" "<svg>my figure</svg>" "the user's figure is untouched"
expect_clean

step "abtrack render's output is not an edit: a step rewrites it instead of refusing"
new_repo rendered
write_plan
sed -i 's/t: {json: t}/t: {json: t, better: lower}/' abtrack.yaml
git_commit_all "user: plan"
expect_rc 0 ab init
expect_rc 0 ab step
printf 'title: A new title\n' >>abtrack.yaml && sed -i 's/better: lower}/better: lower, unit: ms}/' abtrack.yaml && git_commit_all "user: title and unit"
expect_rc 0 ab render
expect_eq "$(git status --porcelain | tr '\n' ' ')" " M AB.md  M AB.svg " "render rewrote the document's regions and the plot"
expect_rc 0 ab step
expect_contains "$ERR" "AB.md differed from HEAD only in what abtrack writes there"
expect_clean "the run committed the rendered document and plot"
expect_contains "$(git show HEAD:AB.svg)" "A new title"
printf '\nmy own line\n' >>AB.md
expect_rc 3 ab step
expect_contains "$ERR" "uncommitted changes in AB.md (M)"
expect_eq "$(tail -n 1 AB.md)" "my own line" "an edit outside the regions is still refused and kept"

sed -i 's#</svg>#<text>MY NOTE</text></svg>#' AB.svg
git checkout -q AB.md
expect_rc 3 ab step
expect_contains "$ERR" "uncommitted changes in AB.svg (M)"
expect_contains AB.svg "MY NOTE"
git checkout -q AB.svg

step "a document whose regions are broken, or that has none, is refused before anything runs"
rm -f "$MARKER_DIR"/*
sed -i '/abtrack:end results/d' AB.md && git commit -q -am "user: a broken region" || fail "user commit"
expect_rc 2 ab step
expect_match "$ERR" "^abtrack: error: AB.md:[0-9]+:1: "
expect_eq "$(markers)" "" "nothing ran"
printf '# my notes\n' >AB.md && git commit -q -am "user: no regions" || fail "user commit"
expect_rc 2 ab step
expect_contains "$ERR" "abtrack: error: AB.md: the document has no abtrack region"
expect_eq "$(markers)" "" "nothing ran"

done_testing
