#!/usr/bin/env bash
# Hostile or broken plans, beyond test_plan_errors.sh: YAML alias bombs ("billion
# laughs") are refused fast and in little memory; every bad plan exits 2 with FILE:LINE:COL and
# writes nothing anywhere: no commit, no document, no runs/, and nothing under .git (no
# .git/abtrack state, no journal, no lock, no object).
source "$(dirname "$0")/lib.sh"

new_repo
printf 'readme\n' >README
mkdir -p "$WORK/outside" && printf 'theirs\n' >"$WORK/outside/target.md"
ln -s "$WORK/outside/target.md" doclink.md
git add README doclink.md && git commit -q -m "user: readme" || die "git commit"
HEAD0=$(git rev-parse HEAD)
OBJECTS0=$(find .git/objects -type f | wc -l)

# hostile NAME [MAX_S]: the plan on stdin; init, step, run and status each exit 2 within MAX_S
# seconds (default 5) with a positioned error, and write nothing.
hostile() {
  step "$1"
  local max=${2:-5}
  git reset -q --hard "$HEAD0" && git clean -qfdx
  rm -rf .git/abtrack
  cat >abtrack.yaml
  local cmd start
  for cmd in init step run status; do
    start=$(date +%s%N)
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f 'RSS %M' -o "$WORK/time.out" "$ABTRACK" "$cmd" </dev/null >"$OUT" 2>"$ERR"; RC=$?
    else
      run_cmd ab "$cmd"
    fi
    local ms=$((($(date +%s%N) - start) / 1000000))
    CHECKS=$((CHECKS + 1))
    [ "$RC" = 2 ] || { fail "$cmd exited $RC, expected 2"; show_output; }
    expect_true "$cmd took ${ms} ms (< ${max} s)" test "$ms" -lt $((max * 1000))
    if [ -f "$WORK/time.out" ]; then
      local rss; rss=$(sed -n 's/^RSS //p' "$WORK/time.out")
      expect_true "$cmd peak RSS ${rss} KB < ${ABTRACK_E2E_RSS_LIMIT_MB:-200} MB" test "${rss:-0}" -lt $((${ABTRACK_E2E_RSS_LIMIT_MB:-200} * 1024))
      LAST_RSS=$rss; LAST_MS=$ms
    fi
    expect_match "$ERR" '^abtrack: error: abtrack\.yaml:[0-9]+:[0-9]+: ' "$cmd: the error has FILE:LINE:COL"
    expect_eq "$(git rev-parse HEAD)" "$HEAD0" "$cmd: no commit"
    expect_false "$cmd: no document" test -e AB.md
    expect_false "$cmd: no runs/" test -e runs
    expect_false "$cmd: no .git/abtrack state (journal, locks)" test -e .git/abtrack
    expect_eq "$(find .git -name '*.lock' | tr '\n' ' ')" "" "$cmd: no lock file"
    expect_eq "$(find .git/objects -type f | wc -l)" "$OBJECTS0" "$cmd: no object written"
    expect_eq "$(cat "$WORK/outside/target.md")" "theirs" "$cmd: nothing written outside"
    expect_eq "$(ls "$WORK/outside" | tr '\n' ' ')" "target.md " "$cmd: no file created outside"
    expect_eq "$(git status --porcelain --untracked-files=all)" "?? abtrack.yaml" "$cmd: git status shows only the plan"
  done
  cp "$ERR" "$WORK/errors"
}
has() {
  expect_match "$WORK/errors" "^abtrack: error: abtrack\\.yaml:$1:[0-9]+: .*$2" "error at line $1 matching /$2/"
}

# 9 levels of 9 aliases: 9^9 = 387,420,489 nodes if expanded.
{
  echo 'experiment: bomb'
  echo 'doc: AB.md'
  echo 'l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'
  for i in 1 2 3 4 5 6 7 8; do
    p="*l$((i - 1))"
    echo "l$i: &l$i [$p, $p, $p, $p, $p, $p, $p, $p, $p]"
  done
  echo 'axes:'
  echo '  n: *l8'
  echo 'command: echo {n}'
  echo 'metrics:'
  echo '  t: {json: t}'
} >"$WORK/bomb.yaml"
hostile "billion laughs (9^9 aliased nodes)" <"$WORK/bomb.yaml"
echo "    alias bomb refused in ${LAST_MS:-?} ms, peak RSS ${LAST_RSS:-?} KB"
expect_match "$WORK/errors" "abtrack\\.yaml:3:[0-9]+: .*l0" "the unknown key l0 is reported"

hostile "alias bomb inside axes" <<'EOF'
experiment: bomb2
doc: AB.md
axes:
  a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  b: *a
  c: *a
  d: *a
  e: *a
  f: *a
  g: *a
  h: *a
  i: *a
command: echo {a}
metrics:
  t: {json: t}
gates:
  - nope < 1
EOF
has 17 "nope"

hostile "recursive alias" <<'EOF'
experiment: rec
doc: AB.md
axes: &x
  n: *x
command: echo
metrics:
  t: {json: t}
EOF

hostile "malformed YAML (tab, unclosed quote)" <<'EOF'
experiment: "pe
doc: AB.md
axes:
	n: [1]
EOF

hostile "duplicate keys and wrong types" <<'EOF'
experiment: pe
doc: AB.md
doc: AB2.md
axes:
  n: {a: 1}
command: [echo]
timeout: -1
repeats: 1.5
metrics:
  t: {json: t}
EOF
has 3 "duplicate"
has 7 "timeout"

hostile "empty axes, regex that does not compile" <<'EOF'
experiment: pe
doc: AB.md
axes: {}
command: echo
metrics:
  t: {regex: '(unclosed'}
EOF
has 3 "axes"
has 6 "regex|t"

for name in '..' '.' 'a/../b' './x' 'x/' '/abs' 'a\b' "$(printf 'a\nb')" 'a..b/c'; do
  hostile "experiment name $(printf '%q' "$name")" <<EOF
experiment: "$(printf '%s' "$name" | sed 's/\\/\\\\/g; s/"/\\"/g' | sed ':a;N;$!ba;s/\n/\\n/g')"
doc: AB.md
axes:
  n: [1]
command: echo
metrics:
  t: {json: t}
EOF
  has 1 "experiment"
done

hostile "doc through a file symlink that points outside" <<'EOF'
experiment: pe
doc: doclink.md
axes:
  n: [1]
command: echo
metrics:
  t: {json: t}
EOF
has 2 "doc|outside|link"

hostile "template outside the repository" <<EOF
experiment: pe
doc: AB.md
template: $WORK/outside/target.md
axes:
  n: [1]
command: echo
metrics:
  t: {json: t}
EOF
has 3 "template|outside"

done_testing
