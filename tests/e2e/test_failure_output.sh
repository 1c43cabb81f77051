#!/usr/bin/env bash
# A failing command explains itself: the last lines of its stderr (at most 5, each cut short)
# are printed on stdout under the result line, by step, run and a parallel run. -v/--verbose
# streams the command's stdout and stderr live to abtrack's stderr while they are still
# captured in the record.
source "$(dirname "$0")/lib.sh"

step "step: the last lines of stderr under the result line"
new_repo
LONG=$(printf 'y%.0s' $(seq 1 400))
cat >fail.sh <<EOF
for i in 1 2 3 4 5 6 7; do echo "stderr line \$i of \$1" >&2; done
echo "$LONG" >&2
echo "cannot open input-\$1.bin: No such file or directory" >&2
exit 1
EOF
cat >abtrack.yaml <<'EOF'
experiment: fo
doc: AB.md
axes:
  x: [1, 2]
command: sh fail.sh {x}
metrics:
  t: {json: t}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init
expect_rc 1 ab step
expect_contains "$OUT" "run 1 x=1: invalid"
expect_contains "$OUT" "command exited with status 1"
expect_contains "$OUT" "cannot open input-1.bin: No such file or directory" "the cause is printed"
expect_contains "$OUT" "stderr line 7 of 1"
expect_contains "$OUT" "stderr line 5 of 1"
expect_not_contains "$OUT" "stderr line 4 of 1" "at most 5 lines"
expect_not_contains "$OUT" "$LONG" "a long line is cut short"
expect_contains "$OUT" "yyyyyyyyyyyyyyyyyyyy…"
expect_match "$OUT" '^  stderr' "the excerpt is indented under the result line"
# The excerpt comes after the result line.
expect_eq "$(grep -n 'run 1 x=1' "$OUT" | cut -d: -f1)" 1 "the result line comes first"
expect_eq "$(wc -l <"$OUT" | tr -d ' ')" 7 "the result line, a header and 5 lines"
expect_clean

step "run: the same for each run"
expect_rc 1 ab run
expect_contains "$OUT" "run 2 x=1: invalid" "the invalid cell is run again"
expect_contains "$OUT" "run 3 x=2: invalid"
expect_contains "$OUT" "cannot open input-2.bin: No such file or directory"

step "a parallel run too"
new_repo par
cat >cell.sh <<'EOF'
if [ "$1" = 2 ]; then echo "segfault in kernel $1" >&2; exit 139; fi
echo '{"t": [1]}'
EOF
git_commit_all "user: script"
cat >abtrack.yaml <<'EOF'
experiment: fop
doc: AB.md
jobs: 2
axes:
  x: [1, 2]
command: sh cell.sh {x}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 1 ab run
expect_contains "$OUT" "run 1 x=1: pass"
expect_contains "$OUT" "run 2 x=2: invalid"
expect_contains "$OUT" "segfault in kernel 2"
expect_eq "$(wc -l <"$OUT" | tr -d ' ')" 4 "two result lines and the failing run's excerpt: a passing run prints none"
expect_rc 0 ab --quiet status

step "-v streams the command's output live and still records it"
new_repo verbose
export E2E_GO=$WORK/go
cat >live.sh <<'EOF'
echo "to-stdout $1"
echo "MARK-LIVE $1" >&2
i=0
while [ ! -e "$E2E_GO" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo '{"t": [1]}'
EOF
git_commit_all "user: script"
cat >abtrack.yaml <<'EOF'
experiment: vb
doc: AB.md
axes:
  x: [1]
command: sh live.sh {x}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
"$ABTRACK" -v step </dev/null >"$OUT" 2>"$ERR" &
pid=$!
for _ in $(seq 1 50); do grep -q "MARK-LIVE 1" "$ERR" && break; sleep 0.1; done
expect_contains "$ERR" "MARK-LIVE 1" "stderr of the command appears while it still runs"
expect_true "the command was still running" test ! -e "$E2E_GO"
touch "$E2E_GO"
wait "$pid"; RC=$?
expect_eq "$RC" 0 "the step passes"
expect_contains "$ERR" "to-stdout 1" "stdout is streamed to abtrack's stderr"
expect_not_contains "$OUT" "to-stdout" "stdout of abtrack stays the result lines"
expect_contains "$OUT" "run 1 x=1: pass"
expect_eq "$(json runs/vb/0001.json 'd["invocations"][0]["stdout_tail"].splitlines()[0]')" "to-stdout 1" "still captured"
expect_contains "$(json runs/vb/0001.json 'd["invocations"][0]["stderr_tail"]')" "MARK-LIVE 1"
rm -f "$E2E_GO"
expect_rc 0 ab --verbose step --cell x=1
expect_contains "$ERR" "to-stdout 1" "--verbose is the long form"
expect_rc 0 ab step --cell x=1
expect_not_contains "$ERR" "to-stdout" "without -v nothing is streamed"

done_testing
