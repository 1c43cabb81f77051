#!/usr/bin/env bash
# Running cells: axis values cannot inject commands and reach the command literally; a
# timeout kills the whole process group; a missing command, a failing or killed command, a
# missing / NaN / Inf / unmatched metric give an invalid run (exit 1, still committed, reason
# names the cause); stdin is /dev/null; stdout/stderr tails are recorded; env values with
# {axis}; repeats pool samples; setup runs once per invocation of abtrack.
source "$(dirname "$0")/lib.sh"

# rec N: path of record N of experiment $EXP.
rec() { printf 'runs/%s/%04d.json' "$EXP" "$1"; }
# last_json N KEY...: a value from the last JSON line the command of run N printed.
last_json() {
  local r; r=$(rec "$1"); shift
  json "$r" "json.loads([l for l in d['invocations'][-1]['stdout_tail'].splitlines() if l.startswith('{')][-1])$*"
}

step "axis values cannot inject commands"
new_repo inject
EXP=inject
cat >abtrack.yaml <<'EOF'
experiment: inject
doc: AB.md
axes:
  v: ['x; touch INJECTED', '$(touch INJECTED2)', '`touch INJECTED3`', 'a''b"c\d', '{w} & touch INJECTED4', "${HOME} | touch INJECTED5"]
  w: [ok]
command: python3 -c 'import json,sys; print(json.dumps({"v":sys.argv[1],"w":sys.argv[2],"t":[1]}))' {v} {w}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(find "$WORK" -name 'INJECTED*' | tr '\n' ' ')" "" "no injected file was created anywhere"
expect_eq "$(ls runs/inject | wc -l | tr -d ' ')" 6 "six runs"
i=1
for want in 'x; touch INJECTED' '$(touch INJECTED2)' '`touch INJECTED3`' "a'b\"c\\d" '{w} & touch INJECTED4' '${HOME} | touch INJECTED5'; do
  expect_eq "$(json "$(rec $i)" 'd["cell"]["v"]')" "$want" "record $i: cell value"
  expect_eq "$(last_json $i '["v"]')" "$want" "run $i: the value reaches the command literally"
  expect_eq "$(last_json $i '["w"]')" "ok" "run $i: the other axis"
  i=$((i + 1))
done
expect_clean
expect_rc 0 ab verify

step "timeout kills the whole process group"
new_repo timeout
EXP=timeout
UNIQ="$((RANDOM % 500 + 200)).$$"
cat >abtrack.yaml <<EOF
experiment: timeout
doc: AB.md
timeout: 1
axes:
  n: [1]
command: sh -c 'sleep $UNIQ & sleep $UNIQ; echo never'; echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
start=$SECONDS
expect_rc 1 ab step
expect_true "the step returned soon after the 1 s timeout (took $((SECONDS - start)) s)" test $((SECONDS - start)) -lt 20
for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -f "sleep $UNIQ" >/dev/null || break; sleep 0.2; done
left=$(pgrep -f "sleep $UNIQ" | tr '\n' ' ')
expect_eq "$left" "" "no 'sleep $UNIQ' survives the timeout (child and grandchild killed)"
[ -n "$left" ] && kill $left 2>/dev/null
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "timed out run is invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" 'timed out' "reason mentions the timeout"
expect_eq "$(json "$(rec 1)" 'd["invocations"][0]["timed_out"]')" true "invocation timed_out"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Outcome,valueonly)' | sed '/^$/d')" invalid "timed-out run committed as invalid"
expect_clean

step "invalid runs: missing command, exit status, signal, metrics"
new_repo invalid
EXP=invalid
cat >bench.py <<'EOF'
import json, os, sys
mode = sys.argv[1]
def emit(lat, tput="1.5"):
    print(json.dumps({"res": {"lat_us": lat}}))
    if tput is not None:
        print("tput=%s" % tput)
if mode == "ok":
    print(json.dumps({"res": {"lat_us": [999.0]}}))   # an earlier object: only the last counts
    emit([1.0, 2.0, 3.0])
elif mode == "missing":
    print(json.dumps({"res": {"other": [1.0]}})); print("tput=2")
elif mode == "jsonnan":
    print('{"res": {"lat_us": [1.0, NaN]}}'); print("tput=2")
elif mode == "notnumber":
    print(json.dumps({"res": {"lat_us": "fast"}})); print("tput=2")
elif mode == "nan":
    emit([1.0], "nan")
elif mode == "inf":
    emit([1.0], "inf")
elif mode == "nomatch":
    emit([1.0], None)
elif mode == "exit1":
    emit([1.0]); sys.exit(1)
elif mode == "signal":
    emit([1.0]); sys.stdout.flush(); os.kill(os.getpid(), 9)
EOF
cat >abtrack.yaml <<'EOF'
experiment: invalid
doc: AB.md
axes:
  mode: [ok, missing, jsonnan, notnumber, nan, inf, nomatch, exit1, signal]
command: exec python3 bench.py {mode}
metrics:
  lat_us: {json: res.lat_us}
  tput: {regex: 'tput=(\S+)', better: higher}
EOF
git add bench.py && git commit -q -m "user: bench" || die "git commit"
expect_rc 0 ab init
expect_rc 1 ab run
expect_eq "$(ls runs/invalid | wc -l | tr -d ' ')" 9 "every cell is recorded, invalid ones too"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | wc -l | tr -d ' ')" 9 "every run is committed"
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" pass "mode ok passes"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["lat_us"]["samples"]')" "[1.0, 2.0, 3.0]" "the LAST JSON object on stdout counts (dotted path)"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["tput"]["samples"]')" "[1.5]" "regex metric"
check_invalid() {  # check_invalid RUN PATTERN WHAT
  local r; r=$(rec "$1")
  expect_eq "$(json "$r" 'd["outcome"]')" invalid "$3: outcome"
  expect_match "$(json "$r" 'd["reason"]')" "$2" "$3: reason '$(json "$r" 'd["reason"]')' should match /$2/"
}
check_invalid 2 'lat_us' "metric missing from the JSON"
check_invalid 3 'lat_us' "NaN in the JSON"
check_invalid 4 'lat_us' "a string instead of a number"
check_invalid 5 'tput' "regex captures nan"
check_invalid 6 'tput' "regex captures inf"
check_invalid 7 'tput' "regex matches nothing"
check_invalid 8 'exit|status|1' "command exits 1"
check_invalid 9 'signal|SIGKILL|killed|9' "command killed by a signal"
expect_eq "$(json "$(rec 8)" 'd["invocations"][0]["exit_code"]')" 1 "exit code recorded"
expect_match "$(json "$(rec 9)" 'd["invocations"][0]["signal"]')" '^(9|SIGKILL|KILL)$' "signal recorded"
expect_rc 0 ab status --json
expect_eq "$(json "$OUT" 'd["counts"]["invalid"]')" 8 "status counts 8 invalid"
expect_clean
expect_rc 0 ab verify

step "a command that does not exist"
new_repo nocmd
EXP=nocmd
cat >abtrack.yaml <<'EOF'
experiment: nocmd
doc: AB.md
axes:
  n: [1]
command: ./no-such-bench-e2e --n {n}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 1 ab step
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "missing command: invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" '127|not found|no such' "missing command: reason"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Outcome,valueonly)' | sed '/^$/d')" invalid "committed as invalid"
expect_clean

step "stdin is /dev/null; stdout/stderr tails"
new_repo stdin
EXP=stdin
cat >abtrack.yaml <<'EOF'
experiment: stdin
doc: AB.md
timeout: 20
axes:
  n: [1]
command: python3 -c 'import sys,json; data=sys.stdin.read(); sys.stderr.write("ERR-MARK-7\n"); sys.stdout.write("x"*200000+"\nOUT-MARK-9\n"); print(json.dumps({"t":[len(data)]}))'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
# abtrack's own stdin is a pipe that has data and stays open for 2 s: the command must not see it.
start=$SECONDS
{ echo "leaked stdin"; sleep 2; } | ab step >"$OUT" 2>"$ERR"
RC=$?
expect_eq "$RC" 0 "step with a piped stdin"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["samples"]')" "[0.0]" "the command read nothing from stdin"
expect_true "reading stdin returned at once" python3 -c "import json,sys; sys.exit(0 if json.load(open('$(rec 1)'))['invocations'][0]['duration_s'] < 1.5 else 1)"
expect_contains "$(json "$(rec 1)" 'd["invocations"][0]["stderr_tail"]')" "ERR-MARK-7" "stderr tail recorded"
expect_contains "$(json "$(rec 1)" 'd["invocations"][0]["stdout_tail"]')" "OUT-MARK-9" "stdout tail recorded"
expect_eq "$(json "$(rec 1)" 'd["invocations"][0]["stdout_bytes"]')" 200023 "stdout bytes counted"
expect_true "stdout tail is a tail, not the whole 200 KB" python3 -c "import json,sys; sys.exit(0 if len(json.load(open('$(rec 1)'))['invocations'][0]['stdout_tail']) < 200000 else 1)"

step "env with {axis}; other braces left alone"
new_repo env
EXP=env
cat >abtrack.yaml <<'EOF'
experiment: env
doc: AB.md
axes:
  warps: [4, 8]
env: {E2E_WARPS: "w{warps}", E2E_FIXED: "fixed value", E2E_BRACES: "{notaxis}"}
command: python3 -c 'import json,os,sys; print(json.dumps({"t":[1],"warps":os.environ.get("E2E_WARPS"),"fixed":os.environ.get("E2E_FIXED"),"braces":os.environ.get("E2E_BRACES"),"arg":sys.argv[1],"home":sys.argv[2]}))' "${E2E_FIXED}" ${HOME}
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(last_json 1 '["warps"]')" w4 "env value with {warps} (cell 1)"
expect_eq "$(last_json 2 '["warps"]')" w8 "env value with {warps} (cell 2)"
expect_eq "$(last_json 1 '["fixed"]')" "fixed value" "constant env value"
expect_eq "$(last_json 1 '["braces"]')" "{notaxis}" "braces that name no axis are left alone in env"
expect_eq "$(last_json 1 '["arg"]')" "fixed value" "\${VAR} in the command is left to the shell"
expect_eq "$(last_json 1 '["home"]')" "$HOME" "\${HOME} in the command is left to the shell"

step "repeats pool samples; setup once per invocation"
new_repo repeats
EXP=repeats
export E2E_SETUP_LOG=$WORK/setup.log E2E_INVOC_LOG=$WORK/invoc.log
: >"$E2E_SETUP_LOG"; : >"$E2E_INVOC_LOG"
cat >abtrack.yaml <<'EOF'
experiment: repeats
doc: AB.md
repeats: 3
axes:
  n: [1, 2]
setup: pwd >>"$E2E_SETUP_LOG"
command: echo {n} >>"$E2E_INVOC_LOG"; echo '{"t":[{n}, {n}.5]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(wc -l <"$E2E_SETUP_LOG" | tr -d ' ')" 1 "setup runs once per abtrack run"
expect_eq "$(head -1 "$E2E_SETUP_LOG")" "$REPO" "setup runs from the repository root"
expect_eq "$(tr '\n' ' ' <"$E2E_INVOC_LOG")" "1 1 1 2 2 2 " "the command runs 3 times per cell"
expect_eq "$(json "$(rec 1)" 'len(d["invocations"])')" 3 "three invocations recorded"
expect_eq "$(json "$(rec 1)" 'd["metrics"]["t"]["summary"]["n"]')" 6 "n = 3 invocations x 2 samples"
expect_eq "$(json "$(rec 2)" 'sorted(d["metrics"]["t"]["samples"])')" "[2.0, 2.0, 2.0, 2.5, 2.5, 2.5]" "samples of all invocations pooled"
expect_rc 0 ab step --cell n=1
expect_eq "$(wc -l <"$E2E_SETUP_LOG" | tr -d ' ')" 2 "setup runs again for the next invocation of abtrack"
expect_eq "$(wc -l <"$E2E_INVOC_LOG" | tr -d ' ')" 9 "step runs the command 3 times"

step "setup fails"
new_repo setupfail
EXP=setupfail
export E2E_MARK=$WORK/setupfail.ran
cat >abtrack.yaml <<'EOF'
experiment: setupfail
doc: AB.md
axes:
  n: [1]
setup: echo building >&2; exit 3
command: touch "$E2E_MARK"; echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
expect_rc 0 ab init
expect_rc 1 ab step
expect_false "the command does not run when setup fails" test -e "$E2E_MARK"
expect_eq "$(json "$(rec 1)" 'd["outcome"]')" invalid "setup failure: invalid"
expect_match "$(json "$(rec 1)" 'd["reason"]')" 'setup' "setup failure: reason names the setup"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Outcome,valueonly)' | sed '/^$/d')" invalid "setup failure committed"
expect_clean

done_testing
