#!/usr/bin/env bash
# Placeholders: {axis} is one shell-quoted word; {axis...} passes a value's words as separate
# arguments, each still quoted (no injection); a multi-word value placed first in a command with
# {axis} gets a plan warning suggesting {axis...}; {axis} in gbench name: and nvbench state:
# regexes is replaced by the cell's value, regex-escaped.
source "$(dirname "$0")/lib.sh"

rec() { printf 'runs/%s/%04d.json' "$EXP" "$1"; }
# set_command TEXT: the plan's command line becomes `command: 'TEXT'`.
set_command() {
  "$PY" - "$1" <<'PY'
import re, sys
text = open("abtrack.yaml").read()
open("abtrack.yaml", "w").write(re.sub(r"(?m)^command: .*$", lambda m: "command: '%s'" % sys.argv[1], text))
PY
}
val() { json "$(rec "$1")" "$2"; }

step "{axis...} splits a value into quoted words; {axis} keeps it one word"
new_repo words
EXP=words
cat >args.sh <<'EOF'
# prints the number of arguments and the first one
printf '{"argc": %d}\n' "$#"
printf 'first=%s\n' "$1"
EOF
cat >abtrack.yaml <<'EOF'
experiment: words
doc: AB.md
axes:
  flags: ['-a -b  -c', 'x; touch pwned']
command: sh args.sh {flags...} && sh args.sh {flags} >&2
metrics:
  argc: {json: argc}
EOF
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(val 1 'd["metrics"]["argc"]["samples"]')" "[3.0]" "'-a -b  -c' is three arguments with {flags...}"
expect_eq "$(val 2 'd["metrics"]["argc"]["samples"]')" "[3.0]" "'x; touch pwned' is three words, not a second command"
expect_false "no command was injected through {flags...}" test -e pwned
expect_eq "$(val 1 'd["command"]')" "sh args.sh '-a' '-b' '-c' && sh args.sh '-a -b  -c' >&2" "the recorded command shows each word quoted"
expect_eq "$(val 2 'd["command"]')" "sh args.sh 'x;' 'touch' 'pwned' && sh args.sh 'x; touch pwned' >&2" "a ';' stays inside its quoted word"
expect_not_contains "$ERR" "warning" "{flags...} in command position and {flags} as an argument: no warning"

step "a multi-word value first in a command with {axis}: a warning that suggests {axis...}"
new_repo codec
EXP=codec
head -c 20000 /dev/zero | tr '\0' 'a' >data.txt
cat >abtrack.yaml <<'EOF'
experiment: codec
doc: AB.md
axes:
  codec: ['gzip -1', 'gzip -9']
command: 'cat data.txt | {codec} | wc -c'
metrics:
  bytes: {regex: '^ *([0-9]+)'}
EOF
git_commit_all "plan"
expect_rc 0 ab status
expect_contains "$ERR" "abtrack: warning: abtrack.yaml:"
expect_contains "$ERR" "command puts {codec} first in a command, and its value 'gzip -1' has a blank"
expect_contains "$ERR" "looks for a program named 'gzip -1'"
expect_contains "$ERR" "hint: write {codec...} to split the value into words (each still shell-quoted)"
expect_eq "$(grep -c 'command puts' "$ERR")" 1 "one warning per axis"
for first in '{codec} < data.txt' 'true && {codec} < data.txt' '(  {codec} < data.txt)'; do
  set_command "$first"
  expect_rc 0 ab status
  expect_contains "$ERR" "command puts {codec} first in a command" "warning for: $first"
done
set_command 'cat data.txt | {codec...} | wc -c'
git_commit_all "split the codec"
expect_rc 0 ab init
expect_not_contains "$ERR" "command puts" "no warning with {codec...}"
expect_rc 0 ab run
expect_eq "$(val 1 'd["outcome"]')" pass "gzip -1 ran"
expect_eq "$(val 2 'd["outcome"]')" pass "gzip -9 ran"
expect_eq "$(val 1 'd["command"]')" "cat data.txt | 'gzip' '-1' | wc -c" "the words are separate arguments"
expect_eq "$(val 1 'd["metrics"]["bytes"]["samples"][0] < 20000')" true "gzip compressed the data"

step "a multi-word value as an argument, or a single-word axis first: no warning"
set_command 'printf %s {codec} | wc -c'
expect_rc 0 ab status
expect_not_contains "$ERR" "command puts"
cat >abtrack.yaml <<'EOF'
experiment: codec
doc: AB.md
axes:
  tool: [gzip, bzip2]
command: '{tool} < data.txt | wc -c'
metrics:
  bytes: {regex: '^ *([0-9]+)'}
EOF
expect_rc 0 ab status
expect_not_contains "$ERR" "command puts"

step "gbench name: and nvbench state: take {axis}, regex-escaped"
new_repo bench
EXP=bench
cat >gb.sh <<'EOF'
cat <<'JSON'
{"benchmarks": [
  {"name": "BM_x/64", "run_type": "iteration", "real_time": 640, "time_unit": "ns"},
  {"name": "BM_x/256", "run_type": "iteration", "real_time": 2560, "time_unit": "ns"},
  {"name": "BM_x/1.5", "run_type": "iteration", "real_time": 15, "time_unit": "ns"},
  {"name": "BM_x/125", "run_type": "iteration", "real_time": 125, "time_unit": "ns"}
]}
JSON
EOF
cat >nv.sh <<'EOF'
state() { printf '{"name": "Device=0 N=%s", "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "%s"}]}]}' "$1" "$2"; }
printf '{"benchmarks": [{"name": "k", "states": [%s, %s, %s, %s]}]}\n' "$(state 64 6.4)" "$(state 256 25.6)" "$(state 1.5 1.5)" "$(state 125 12.5)" >nv.json
EOF
cat >abtrack.yaml <<'EOF'
experiment: bench
doc: AB.md
axes:
  n: [64, 256, '1.5']
command: sh nv.sh && sh gb.sh
metrics:
  real_ns: {gbench: real_time, name: '^BM_x/{n}$', better: lower}
  gpu_s: {nvbench: nv/cold/time/gpu/mean, state: 'N={n}$', file: nv.json}
EOF
printf 'nv.json\n' >.gitignore
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(val 1 '[d["cell"], d["metrics"]["real_ns"]["samples"], d["metrics"]["gpu_s"]["samples"]]')" \
  '[{"n": 64}, [640.0], [6.4]]' "n=64 reads the rows of 64"
expect_eq "$(val 2 '[d["metrics"]["real_ns"]["samples"], d["metrics"]["gpu_s"]["samples"]]')" \
  '[[2560.0], [25.6]]' "n=256 reads the rows of 256"
expect_eq "$(val 3 '[d["metrics"]["real_ns"]["samples"], d["metrics"]["gpu_s"]["samples"]]')" \
  '[[15.0], [1.5]]' "n=1.5 matches 1.5 literally, not 125"
expect_eq "$(val 1 'd["metrics"]["real_ns"]["name"]')" '^BM_x/{n}$' "the record keeps the plan's regex"

step "a {name} in name: that is not an axis: the error says so"
sed -i 's/{n}\$/{nn}$/' abtrack.yaml
expect_rc 2 ab status
expect_contains "$ERR" "the name regex of metric 'real_ns' does not compile"
expect_contains "$ERR" "hint: '{nn}' is not an axis, did you mean '{n}'?"

done_testing
