#!/usr/bin/env bash
# A plan value that YAML reads as structure (an unquoted command printing JSON) is an
# "invalid YAML" error whose hint says to quote the whole value, with the line's own value
# quoted as the example; once quoted as the hint says, the plan loads and the command runs.
source "$(dirname "$0")/lib.sh"

new_repo
step "unquoted JSON in a command: the hint quotes the value"
cat >abtrack.yaml <<'EOF'
experiment: q
doc: AB.md
axes: {n: [1]}
command: echo '{"t": 1}'
metrics: {t: {json: t}}
EOF
expect_rc 2 ab status
expect_match "$ERR" "^abtrack: error: abtrack\.yaml:4:[0-9]+: invalid YAML: "
expect_contains "$ERR" "hint: the value of 'command' holds ': ', '{' or '[', which YAML reads as structure: quote the whole value"
expect_contains "$ERR" "command: \"echo '{\\\"t\\\": 1}'\""
expect_contains "$ERR" "command: |"

step "the quoted form from the hint loads and runs"
hint_value=$(sed -n "s/.*e\\.g\\. command: \\(\".*\"\\) (or in single quotes.*/\\1/p" "$ERR")
expect_eq "$hint_value" "\"echo '{\\\"t\\\": 1}'\"" "the hint's example value"
"$PY" - "$hint_value" <<'PY'
import re, sys
text = open("abtrack.yaml").read()
open("abtrack.yaml", "w").write(re.sub(r"(?m)^command: .*$", lambda m: "command: " + sys.argv[1], text))
PY
expect_rc 0 ab init
expect_rc 0 ab step
expect_eq "$(json runs/q/0001.json 'd["metrics"]["t"]["samples"]')" "[1.0]" "the quoted command printed the JSON"

step "': ' in any plain value, and a broken flow mapping (no hint)"
cat >abtrack.yaml <<'EOF'
experiment: q
doc: AB.md
axes: {n: [1]}
command: ./bench --mode a: b
metrics: {t: {json: t}}
EOF
expect_rc 2 ab status
expect_contains "$ERR" "invalid YAML"
expect_contains "$ERR" "e.g. command: \"./bench --mode a: b\""
step "a placeholder that starts the value: quote it"
for command in '{n} < in' '{n}'; do
  printf 'experiment: q\ndoc: AB.md\naxes: {n: [1]}\ncommand: %s\nmetrics: {t: {json: t}}\n' "$command" >abtrack.yaml
  expect_rc 2 ab status
  expect_contains "$ERR" "abtrack: error: abtrack.yaml:4:"
  expect_match "$ERR" "hint: .*quote the whole value" "a quoting hint for: command: $command"
done

cat >abtrack.yaml <<'EOF'
experiment: q
doc: AB.md
axes: {n: [1, 2}
command: x
metrics: {t: {json: t}}
EOF
expect_rc 2 ab status
expect_contains "$ERR" "invalid YAML"
expect_not_contains "$ERR" "quote the whole value" "a flow mapping is not a value to quote"

done_testing
