# Shared helpers for abtrack's end-to-end tests. Sourced by tests/e2e/test_*.sh.
#
# Every test runs the real abtrack binary ($ABTRACK, set by ctest) in fresh temporary git
# repositories and checks exit codes, stderr text and what real git shows. Failed checks are
# counted (the test goes on, so one run reports every broken behaviour); a test that ends
# without calling `done_testing`, or that checked nothing, fails too.
#
#   new_repo [NAME]          fresh repo under the test's temp dir, cd into it, identity set locally
#   ab ARGS...               run abtrack
#   run_cmd CMD...           run CMD; stdout -> $OUT, stderr -> $ERR, exit code -> $RC
#   expect_rc CODE CMD...    run_cmd, and fail (printing stdout/stderr) unless it exits CODE
#   expect_contains F|T PAT  file F (or text T) contains the fixed string PAT
#   expect_not_contains, expect_match (extended regex), expect_eq, expect_file_eq
#   json FILE EXPR           print a python expression over the JSON document `d` in FILE
#   fail MSG / die MSG       record a failed check / abort the test

set -u
set -o pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TEST_NAME=$(basename "$0" .sh)

if [ -z "${ABTRACK:-}" ]; then
  if [ -n "${ABTRACK_BUILD_DIR:-}" ]; then ABTRACK=$ABTRACK_BUILD_DIR/abtrack
  else ABTRACK=$E2E_DIR/../../build/abtrack; fi
fi
if [ ! -x "$ABTRACK" ]; then
  echo "SKIP $TEST_NAME: abtrack binary not found at '$ABTRACK' (set ABTRACK)" >&2
  exit 77
fi
for tool in git python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP $TEST_NAME: $tool not installed" >&2; exit 77; }
done

# The interpreter itself (not a version-manager shim): helpers call it often.
PY=$(python3 -c 'import sys; print(sys.executable)') || PY=python3

FAILURES=0
CHECKS=0
DONE=0
CURRENT_STEP=""

WORK=$(mktemp -d "${TMPDIR:-/tmp}/abtrack-e2e-$TEST_NAME.XXXXXX") || { echo "mktemp failed" >&2; exit 1; }
WORK=$(cd "$WORK" && pwd -P)
OUT=$WORK/stdout
ERR=$WORK/stderr
RC=0
: >"$OUT"; : >"$ERR"

# Isolate git from the machine's configuration: only what a test sets exists.
export HOME=$WORK/home
mkdir -p "$HOME"
export GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL=$HOME/.gitconfig
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL \
      GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_DATE \
      GIT_CEILING_DIRECTORIES EMAIL 2>/dev/null || true
export LC_ALL=C.UTF-8 2>/dev/null || export LC_ALL=C
export TZ=UTC
# Never let a test hang forever on a pager or an editor.
export GIT_PAGER=cat PAGER=cat GIT_EDITOR=true

e2e_cleanup() {
  local rc=$?
  cd / || true
  if [ "$DONE" != 1 ]; then
    echo "FAIL [$TEST_NAME]: the test ended early (exit $rc) before done_testing${CURRENT_STEP:+ (step: $CURRENT_STEP)}" >&2
    FAILURES=$((FAILURES + 1))
  fi
  if [ "$FAILURES" -gt 0 ] && [ -n "${KEEP_TMP:-}" ]; then
    echo "kept $WORK" >&2
  else
    chmod -R u+w "$WORK" 2>/dev/null || true
    rm -rf "$WORK"
  fi
  if [ "$FAILURES" -gt 0 ]; then
    echo "$TEST_NAME: $FAILURES of $CHECKS checks failed" >&2
    exit 1
  fi
  exit "$rc"
}
trap e2e_cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

# step NAME: label the following checks in failure messages.
step() {
  CURRENT_STEP=$*
  echo "--- $TEST_NAME: $*"
}

fail() {
  FAILURES=$((FAILURES + 1))
  echo "FAIL [$TEST_NAME${CURRENT_STEP:+ / $CURRENT_STEP}]: $*" >&2
}

die() {
  fail "$@"
  DONE=1
  exit 1
}

pass_check() { CHECKS=$((CHECKS + 1)); }

# show_output: stdout and stderr of the last run_cmd, indented, for failure messages.
show_output() {
  echo "    stdout:" >&2; sed -n '1,40s/^/      /p' "$OUT" >&2
  echo "    stderr:" >&2; sed -n '1,40s/^/      /p' "$ERR" >&2
}

ab() { "$ABTRACK" "$@"; }

# run_cmd CMD...: run CMD with stdin /dev/null, capture stdout/stderr/exit code.
run_cmd() {
  LAST_CMD=$*
  "$@" </dev/null >"$OUT" 2>"$ERR"
  RC=$?
  return 0
}

# expect_rc CODE CMD...
expect_rc() {
  local want=$1; shift
  run_cmd "$@"
  CHECKS=$((CHECKS + 1))
  if [ "$RC" != "$want" ]; then
    fail "'$LAST_CMD' exited $RC, expected $want"
    show_output
    return 1
  fi
  return 0
}

# _content ARG: the file's content when ARG is an existing file, else ARG itself.
# (The searches below read all of their input: under pipefail, `grep -q` leaving at the first
# match kills the writer of the rest with SIGPIPE — bash's printf writes a text in pieces — and
# the pipeline then reads as "no match": a flaky failure, or a missed one in the negated checks.)
_content() {
  if [ -f "$1" ]; then cat -- "$1"; else printf '%s' "$1"; fi
}
_what() {
  if [ -f "$1" ]; then echo "file $1"; else echo "text '$(printf '%s' "$1" | head -c 300)'"; fi
}

# expect_contains FILE|TEXT PATTERN [MSG]: fixed-string search.
expect_contains() {
  CHECKS=$((CHECKS + 1))
  if ! _content "$1" | grep -F -- "$2" >/dev/null; then
    fail "${3:-$(_what "$1") does not contain '$2'}"
    if [ -f "$1" ]; then sed -n '1,40s/^/      /p' "$1" >&2; fi
    return 1
  fi
}

expect_not_contains() {
  CHECKS=$((CHECKS + 1))
  if _content "$1" | grep -F -- "$2" >/dev/null; then
    fail "${3:-$(_what "$1") contains '$2' but should not}"
    if [ -f "$1" ]; then sed -n '1,40s/^/      /p' "$1" >&2; fi
    return 1
  fi
}

# expect_match FILE|TEXT ERE [MSG]: extended-regex search.
expect_match() {
  CHECKS=$((CHECKS + 1))
  if ! _content "$1" | grep -E -- "$2" >/dev/null; then
    fail "${3:-$(_what "$1") does not match /$2/}"
    if [ -f "$1" ]; then sed -n '1,40s/^/      /p' "$1" >&2; fi
    return 1
  fi
}

expect_not_match() {
  CHECKS=$((CHECKS + 1))
  if _content "$1" | grep -E -- "$2" >/dev/null; then
    fail "${3:-$(_what "$1") matches /$2/ but should not}"
    if [ -f "$1" ]; then sed -n '1,40s/^/      /p' "$1" >&2; fi
    return 1
  fi
}

# expect_eq ACTUAL EXPECTED MSG
expect_eq() {
  CHECKS=$((CHECKS + 1))
  if [ "$1" != "$2" ]; then
    fail "${3:-values differ}: got '$1', expected '$2'"
    return 1
  fi
}

# expect_file_eq FILE_A FILE_B MSG: byte-for-byte.
expect_file_eq() {
  CHECKS=$((CHECKS + 1))
  if ! cmp -s -- "$1" "$2"; then
    fail "${3:-files differ}: $1 vs $2"
    diff -u -- "$1" "$2" | head -40 | sed 's/^/      /' >&2
    return 1
  fi
}

expect_true() {  # expect_true MSG CMD...
  local msg=$1; shift
  CHECKS=$((CHECKS + 1))
  if ! "$@"; then fail "$msg"; return 1; fi
}

expect_false() {  # expect_false MSG CMD...
  local msg=$1; shift
  CHECKS=$((CHECKS + 1))
  if "$@"; then fail "$msg"; return 1; fi
}

# expect_clean: `git status --porcelain` (untracked included) is empty.
expect_clean() {
  local s
  s=$(git status --porcelain --untracked-files=all)
  CHECKS=$((CHECKS + 1))
  if [ -n "$s" ]; then
    fail "${1:-working tree not clean}: git status --porcelain shows:"
    printf '%s\n' "$s" | sed 's/^/      /' >&2
    return 1
  fi
}

# json FILE EXPR: evaluate a python expression over the parsed document `d`; prints str()
# of the result (JSON for lists/dicts, true/false/null for JSON scalars).
# journal_entries [GIT_DIR]: the measurements waiting in abtrack's journal, as abtrack reads
# them: slot files (.git/abtrack/journal/<experiment>/slot-N) whose header "abtrack-journal 1
# <bytes> <sha256>" and checksum hold (a freed or cut-short slot holds none), and entries of
# earlier versions (*.json); one path per line.
journal_entries() {
  "$PY" - "${1:-.git}/abtrack/journal" <<'PY'
import hashlib, os, sys
root = sys.argv[1]
for d, _, files in sorted(os.walk(root)):
    for name in sorted(files):
        path = os.path.join(d, name)
        if name.endswith(".json"):
            print(path)
            continue
        with open(path, "rb") as f:
            data = f.read()
        head, nl, rest = data.partition(b"\n")
        parts = head.split(b" ")
        if not nl or len(parts) != 4 or parts[0] != b"abtrack-journal" or parts[1] != b"1":
            continue
        size = int(parts[2])
        if len(rest) >= size and hashlib.sha256(rest[:size]).hexdigest().encode() == parts[3]:
            print(path)
PY
}

# journal_entry FILE: the measurement (a record's JSON) a journal_entries path holds.
journal_entry() {
  "$PY" - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
if not sys.argv[1].endswith(".json"):
    head, _, rest = data.partition(b"\n")
    data = rest[: int(head.split(b" ")[2])]
sys.stdout.write(data.decode())
PY
}

json() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
v = eval(sys.argv[2], {"d": d, "json": json})
if isinstance(v, (dict, list, bool)) or v is None:
    print(json.dumps(v, sort_keys=True))
else:
    print(v)
PY
}

# new_repo [NAME]: a fresh repository with a local identity; cd into it.
new_repo() {
  local name=${1:-repo}
  REPO=$WORK/$name
  mkdir -p "$REPO" && cd "$REPO" || die "cannot create $REPO"
  git init -q -b main . || die "git init failed"
  git config user.name "E2E Tester"
  git config user.email "e2e@example.com"
  git config commit.gpgsign false
}

# git_commit_all MSG: commit everything with real git (the user's own commits).
git_commit_all() {
  git add -A && git commit -q -m "$1" || die "git commit '$1' failed"
}

commit_count() { git rev-list --count HEAD 2>/dev/null || echo 0; }

# expect_fsck: the repository is consistent.
expect_fsck() {
  CHECKS=$((CHECKS + 1))
  if ! git fsck --strict --no-progress >"$WORK/fsck.out" 2>&1; then
    fail "git fsck failed"; sed 's/^/      /' "$WORK/fsck.out" >&2
  fi
}

# expect_records_valid FILE...: every record validates against docs/run-record.schema.json.
# With ABTRACK_E2E_RECORDS set to a folder, the records are copied there too (to validate records
# made on a machine without python3-jsonschema elsewhere).
expect_records_valid() {
  CHECKS=$((CHECKS + 1))
  local out
  if [ -n "${ABTRACK_E2E_RECORDS:-}" ]; then
    mkdir -p "$ABTRACK_E2E_RECORDS" && for f in "$@"; do cp "$f" "$ABTRACK_E2E_RECORDS/$TEST_NAME-$(basename "$f")"; done
  fi
  if ! out=$("$PY" - "$E2E_DIR/../../docs/run-record.schema.json" "$@" 2>&1 <<'PY'
import json, sys
import jsonschema
with open(sys.argv[1]) as f:
    schema = json.load(f)
bad = []
for name in sys.argv[2:]:
    with open(name) as f:
        try:
            jsonschema.validate(json.load(f), schema)
        except jsonschema.ValidationError as e:
            bad.append(f"{name}: {e.message[:300]} at {list(e.absolute_path)}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  ); then
    fail "records do not match docs/run-record.schema.json:"; printf '%s\n' "$out" | sed 's/^/      /' >&2
  fi
}

# region FILE NAME: the lines strictly between `<!-- abtrack:begin NAME -->` and its end marker.
region() {
  "$PY" - "$1" "$2" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
begin, end = "<!-- abtrack:begin %s -->" % sys.argv[2], "<!-- abtrack:end %s -->" % sys.argv[2]
starts = [i for i, l in enumerate(lines) if l.strip() == begin]
ends = [i for i, l in enumerate(lines) if l.strip() == end]
if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
    sys.stderr.write("region %s: %d begin and %d end markers\n" % (sys.argv[2], len(starts), len(ends)))
    sys.exit(1)
print("\n".join(lines[starts[0] + 1:ends[0]]))
PY
}

# outside_regions FILE: the document with every region's content removed (markers kept):
# the engineer's prose, which abtrack must preserve byte for byte.
outside_regions() {
  "$PY" - "$1" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", newline="").read()
out = re.sub(r"(<!-- abtrack:begin (\w+) -->).*?(<!-- abtrack:end \2 -->)", r"\1\3", text, flags=re.S)
sys.stdout.write(out)
PY
}

# table_rows TEXT_FILE: the markdown table body rows (lines starting with '|', minus header
# and separator) of a region's text on stdin.
table_rows() {
  grep '^|' | sed '1,2d'
}

# table_columns: for each table row on stdin, the number of cells (unescaped '|' separators).
table_columns() {
  "$PY" -c '
import re, sys
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.startswith("|"):
        continue
    # a cell separator is a | not preceded by a backslash
    seps = len(re.findall(r"(?<!\\)\|", line))
    print(seps - 1)
'
}

done_testing() {
  if [ "$CHECKS" -eq 0 ]; then
    fail "the test checked nothing"
  fi
  DONE=1
  if [ "$FAILURES" -eq 0 ]; then
    echo "PASS $TEST_NAME ($CHECKS checks)"
  fi
  exit 0
}

# write_timed_bench WORK: bench.c, a small C program that times WORK iterations of a loop five
# times and prints {"t": [microseconds x5]}; `sed` on its `#define WORK` line makes it slower.
write_timed_bench() {
  cat >bench.c <<EOF_BENCH
#include <stdio.h>
#include <time.h>
#define WORK $1
int main(void) {
  volatile unsigned long x = 0;
  printf("{\"t\": [");
  for (int s = 0; s < 5; ++s) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (unsigned long i = 0; i < WORK; ++i) x += i ^ (x >> 3);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%s%.1f", s ? ", " : "", (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
  }
  printf("]}\n");
  return 0;
}
EOF_BENCH
}
