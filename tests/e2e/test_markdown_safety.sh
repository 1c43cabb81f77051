#!/usr/bin/env bash
# Markdown safety: axis values with '|', region markers, backslashes, backticks, HTML and a
# newline must not break the tables, the regions, the trailers or verify.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: mdsafe
doc: AB.md
axes:
  v: ['a|b', '<!-- abtrack:end results -->', 'x\|y', '`tick` *em* <b>html</b>', '<!-- abtrack:begin runs -->']
  k: [1]
command: python3 -c 'import json,sys; print(json.dumps({"time_us":[1.0,2.0],"v":sys.argv[1]}))' {v}
metrics:
  time_us: {json: time_us, unit: "us|ms"}
EOF
expect_rc 0 ab init
expect_rc 0 ab run
NCELLS=5
expect_eq "$(ls runs/mdsafe | wc -l | tr -d ' ')" "$NCELLS" "every cell ran"
expect_clean
expect_rc 0 ab verify

step "regions intact"
for r in summary results runs; do
  expect_eq "$(grep -cxF "<!-- abtrack:begin $r -->" AB.md)" 1 "exactly one begin marker line for $r"
  expect_eq "$(grep -cxF "<!-- abtrack:end $r -->" AB.md)" 1 "exactly one end marker line for $r"
done

step "values in the template's prose are escaped too"
expect_eq "$(python3 -c 'import sys; print(open("AB.md").read().count("<!-- abtrack:end results -->"))')" 1 \
  "the marker text of a value never appears verbatim in the document"
expect_eq "$(python3 -c 'import sys; print(open("AB.md").read().count("<!-- abtrack:begin runs -->"))')" 1 \
  "a begin marker in a value never appears verbatim in the document"

expect_not_contains AB.md "<b>html</b>" "HTML in a value is escaped everywhere in the document"

step "results table"
region AB.md results >"$WORK/results.md" || fail "results region unreadable"
expect_eq "$(table_rows <"$WORK/results.md" | wc -l | tr -d ' ')" "$NCELLS" "one row per cell"
cols=$(grep '^|' "$WORK/results.md" | table_columns | sort -u | tr '\n' ' ')
expect_match "$cols" '^[0-9]+ $' "every results row has the header's number of columns (got: $cols)"
region AB.md runs >"$WORK/runs.md" || fail "runs region unreadable"
expect_eq "$(table_rows <"$WORK/runs.md" | wc -l | tr -d ' ')" "$NCELLS" "one runs row per run"
cols=$(grep '^|' "$WORK/runs.md" | table_columns | sort -u | tr '\n' ' ')
expect_match "$cols" '^[0-9]+ $' "every runs row has the header's number of columns (got: $cols)"

step "trailers survive odd values"
for k in $(seq 0 $((NCELLS - 1))); do
  parsed=$(git log -1 --format=%B "HEAD~$k" | git interpret-trailers --parse)
  expect_eq "$(printf '%s\n' "$parsed" | grep -c '^Abtrack-')" 5 "HEAD~$k: exactly the 5 Abtrack trailers parse"
  expect_eq "$(printf '%s\n' "$parsed" | sed -n 's/^Abtrack-Run: //p')" "$((NCELLS - k))" "HEAD~$k: Abtrack-Run"
done
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | tr '\n' ' ')" "5 4 3 2 1 " "run trailers"
expect_eq "$(git log --format=%s | grep -c '^abtrack(mdsafe): run ')" "$NCELLS" "one-line subjects"

step "values reach the command and the record intact"
i=1
while IFS= read -r -d '' want; do
  rec=$(printf 'runs/mdsafe/%04d.json' $i)
  expect_eq "$(json "$rec" 'd["cell"]["v"]')" "$want" "record $i keeps the value"
  expect_eq "$(json "$rec" 'json.loads(d["invocations"][0]["stdout_tail"].strip().splitlines()[-1])["v"] if "\n" not in d["cell"]["v"] else json.loads(d["invocations"][0]["stdout_tail"])["v"]')" "$want" "command $i got the value"
  i=$((i + 1))
done < <(printf '%s\0' 'a|b' '<!-- abtrack:end results -->' 'x\|y' '`tick` *em* <b>html</b>' '<!-- abtrack:begin runs -->')

step "another step keeps prose and regions"
printf '\n## My notes\nThe a|b cell is odd.\n' >>AB.md
git commit -q -am "user: notes" || fail "user commit"
outside_regions AB.md >"$WORK/prose.before"
expect_rc 0 ab step --cell 'v=a|b,k=1'
outside_regions AB.md >"$WORK/prose.after"
expect_file_eq "$WORK/prose.before" "$WORK/prose.after" "prose changed by a step"
expect_rc 0 ab verify
expect_rc 0 ab render
expect_clean "render is idempotent"
expect_fsck

step "a value with a newline and a marker line"
new_repo newline
cat >abtrack.yaml <<'EOF'
experiment: mdnl
doc: AB.md
axes:
  v: ["x\n<!-- abtrack:end results -->\ny", "p\n<!-- abtrack:begin summary -->", ok]
command: echo '{"t":[1]}'
metrics:
  t: {json: t}
EOF
# Either the values are accepted and cannot break the document, or the plan is refused with a
# positioned plan error; an error about the built-in template is neither.
run_cmd ab init
CHECKS=$((CHECKS + 1))
if [ "$RC" = 2 ]; then
  expect_match "$ERR" '^abtrack: error: abtrack\.yaml:4:[0-9]+: ' "a refused value is a plan error at its position"
  expect_eq "$(commit_count)" 0 "nothing committed for a refused plan"
elif [ "$RC" = 0 ]; then
  expect_rc 0 ab run
  expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | tr '\n' ' ')" "3 2 1 " "all three cells committed"
  expect_rc 0 ab verify
  for r in summary results runs; do
    expect_eq "$(grep -cxF "<!-- abtrack:begin $r -->" AB.md)" 1 "newline values: one begin marker line for $r"
    expect_eq "$(grep -cxF "<!-- abtrack:end $r -->" AB.md)" 1 "newline values: one end marker line for $r"
  done
  expect_clean
else
  fail "init with newline values exited $RC"
fi

done_testing
