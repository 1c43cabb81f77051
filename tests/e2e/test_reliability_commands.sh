#!/usr/bin/env bash
# Misbehaving commands, beyond what test_running.sh covers (timeouts, missing
# command, exit status, signals, NaN/missing metrics, a 200 KB stdout): a 400 MB stdout flood
# with abtrack's peak RSS under 200 MB and a small record; binary garbage on stdout; output
# without a final newline; a command that closes stdout and keeps running (waited for, not
# cut at EOF); leftovers holding the pipes after the shell exits (killed, no hang); a process
# that escapes the group with setsid (no hang); exit 127 with a precise reason.
source "$(dirname "$0")/lib.sh"

FLOOD_MB=${ABTRACK_E2E_FLOOD_MB:-400}
RSS_LIMIT_KB=$((${ABTRACK_E2E_RSS_LIMIT_MB:-200} * 1024))
UNIQ="$((RANDOM % 500 + 700)).$$"

rec() { printf 'runs/%s/%04d.json' "$EXP" "$1"; }
# plan NAME COMMAND [TIMEOUT]: a one-cell plan running COMMAND, metric t from the last JSON.
plan() {
  EXP=$1
  new_repo "$1"
  cat >abtrack.yaml <<EOF
experiment: $1
doc: AB.md
timeout: ${3:-60}
axes:
  n: [1]
command: $2
metrics:
  t: {json: t}
EOF
  expect_rc 0 ab init
}

step "a ${FLOOD_MB} MB stdout flood"
plan flood "head -c ${FLOOD_MB}000000 /dev/zero; echo; echo '{\"t\":[7]}'"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -v "$ABTRACK" step </dev/null >"$OUT" 2>"$ERR"; RC=$?
  rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$ERR")
  secs=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$ERR")
  echo "    ${FLOOD_MB} MB of stdout: abtrack peak RSS ${rss} KB, wall ${secs}"
  expect_eq "$RC" 0 "the flooding run passes"
  expect_true "peak RSS ${rss} KB < ${RSS_LIMIT_KB} KB" test "${rss:-999999999}" -lt "$RSS_LIMIT_KB"
else
  echo "    /usr/bin/time missing (Debian package time): RSS not measured"
  expect_rc 0 ab step
fi
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" pass "the last JSON object after the flood is found"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[7.0]" "the metric after the flood"
expect_eq "$(json "$(rec 1)" 'd["invocations"][0]["stdout_bytes"]')" "$((FLOOD_MB * 1000000 + 1 + 10))" "every byte counted"
size=$(wc -c <"$(rec 1)")
echo "    record size ${size} bytes"
expect_true "the record stays small (${size} bytes < 64 KiB)" test "$size" -lt 65536
expect_true "the stdout tail is at most 4 KiB" "$PY" -c "
import json, sys; sys.exit(0 if len(json.load(open('$(rec 1)'))['invocations'][0]['stdout_tail'].encode()) <= 4096 * 6 else 1)"
expect_clean
expect_rc 0 ab verify

step "binary garbage on stdout and stderr"
EXP=garbage
new_repo garbage
cat >abtrack.yaml <<'EOF'
experiment: garbage
doc: AB.md
axes:
  n: [1]
command: head -c 300000 /dev/urandom; head -c 5000 /dev/urandom >&2; printf '\377\376\n{"t":[3]}\n'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 0 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" pass "garbage before the JSON: pass"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[3.0]" "the metric is read after the garbage"
expect_true "the record is valid UTF-8 JSON" "$PY" -c "import json; json.load(open('$(rec 1)', encoding='utf-8'))"
expect_clean
expect_rc 0 ab verify
expect_fsck

step "binary garbage only"
plan garbage2 "head -c 20000 /dev/urandom | tr -d '{'"
expect_rc 1 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "garbage and no JSON: invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" "metric 't'.*JSON" "the reason names the metric and the missing JSON"
expect_rc 0 ab verify

step "a JSON-looking line of invalid UTF-8"
EXP=badutf8
new_repo badutf8
cat >abtrack.yaml <<'EOF'
experiment: badutf8
doc: AB.md
axes:
  n: [1]
command: printf '{\377\376 x}\n'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 1 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" "does not parse" "the reason says the JSON does not parse"
expect_true "the document is valid UTF-8" "$PY" -c "open('AB.md', encoding='utf-8').read()"
expect_rc 0 ab verify

step "no final newline"
plan nonl "echo noise; printf '{\"t\":[2, 4]}'"
expect_rc 0 ab step
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[2.0, 4.0]" "the last JSON object without a final newline"

step "stdout closed, the process keeps running"
plan closed "echo '{\"t\":[1]}'; exec >&- 2>&-; sleep 2; exit 0"
start=$SECONDS
expect_rc 0 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" pass "closing stdout early is not an error"
expect_true "the run waited for the process, not for EOF" "$PY" -c "
import json, sys; sys.exit(0 if json.load(open('$(rec 1)'))['invocations'][0]['duration_s'] >= 1.9 else 1)"

step "stdout closed, the process hangs: the timeout still ends it"
plan closedhang "echo '{\"t\":[1]}'; exec >&- 2>&-; sleep $UNIQ" 1
start=$SECONDS
expect_rc 1 ab step
expect_true "ended by the 1 s timeout (took $((SECONDS - start)) s)" test $((SECONDS - start)) -lt 10
expect_match "$(json "$(rec 1)" 'd["reason"]')" "timed out" "reason: timed out"
expect_eq "$(pgrep -f "^sleep $UNIQ" | tr '\n' ' ')" "" "nothing left running"

step "leftovers hold the pipes after the shell exits"
plan leftover "sleep $UNIQ & sleep $UNIQ >&2 & echo '{\"t\":[5]}'"
start=$SECONDS
expect_rc 0 ab step
took=$((SECONDS - start))
expect_true "no hang on the leftovers' open pipes (took $took s)" test "$took" -lt 10
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[5.0]" "the output before the shell exited counts"
for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -f "^sleep $UNIQ" >/dev/null || break; sleep 0.1; done
left=$(pgrep -f "^sleep $UNIQ" | tr '\n' ' ')
expect_eq "$left" "" "the leftovers of the command's group are killed"
[ -n "$left" ] && kill $left 2>/dev/null

step "a process that escapes the group (setsid) and holds stdout"
if command -v setsid >/dev/null; then
  plan escape "setsid sleep $UNIQ & echo '{\"t\":[6]}'"
  start=$SECONDS
  expect_rc 0 ab step
  took=$((SECONDS - start))
  expect_true "no hang on an escaped process (took $took s)" test "$took" -lt 10
  expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[6.0]" "the output counts"
  left=$(pgrep -f "^sleep $UNIQ" | tr '\n' ' ')
  [ -n "$left" ] && kill $left 2>/dev/null
fi

step "a command that does not exist: exit 127, precise reason"
plan missing "no-such-command-e2e-$UNIQ --n {n}"
expect_rc 1 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "invalid"
expect_eq "$(json "$(rec 1)" 'd["invocations"][0]["exit_code"]')" 127 "exit code 127 recorded"
expect_match "$(json "$(rec 1)" 'd["reason"]')" "127" "the reason gives the exit status"
expect_match "$(json "$(rec 1)" 'd["reason"]')" "not found|no such" "the reason says the command was not found"
expect_contains "$(json "$(rec 1)" 'd["invocations"][0]["stderr_tail"]')" "no-such-command-e2e-$UNIQ" "stderr tail names the command"

done_testing
