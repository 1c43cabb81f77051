#!/usr/bin/env bash
# step options: --cell runs the named cell (mistakes are usage errors with "did you mean");
# --metric and --record record values measured elsewhere without running the command.
source "$(dirname "$0")/lib.sh"

export E2E_MARKS=$WORK/marks
: >"$E2E_MARKS"
runs_of_command() { wc -l <"$E2E_MARKS" | tr -d ' '; }
rec() { printf 'runs/opts/%04d.json' "$1"; }
cell_of() { json "$(rec "$1")" '" ".join("%s=%s" % (k, v) for k, v in d["cell"].items())'; }

new_repo
cat >abtrack.yaml <<'EOF'
experiment: opts
doc: AB.md
axes:
  warps: [4, 8]
  batch: [16, 64]
command: echo {warps}-{batch} >>"$E2E_MARKS"; echo '{"time_us":[10,11],"err":0}'
metrics:
  time_us: {json: time_us, better: lower}
  err: {json: err}
gates:
  - err <= 0.01
EOF
expect_rc 0 ab init

step "--cell runs that cell"
expect_rc 0 ab step --cell warps=8,batch=64
expect_eq "$(cell_of 1)" "warps=8 batch=64" "the named cell ran"
expect_eq "$(tail -1 "$E2E_MARKS")" "8-64" "the command ran with the named values"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Cell,valueonly)' | sed '/^$/d')" "warps=8 batch=64" "Abtrack-Cell"
expect_rc 0 ab step --cell batch=16,warps=8
expect_eq "$(cell_of 2)" "warps=8 batch=16" "axis order in --cell does not matter"
expect_rc 0 ab step
expect_eq "$(cell_of 3)" "warps=4 batch=16" "without --cell: the first pending cell"
expect_rc 0 ab step --cell warps=8,batch=64
expect_eq "$(cell_of 4)" "warps=8 batch=64" "--cell reruns a cell that has runs"
expect_eq "$(runs_of_command)" 4 "four invocations so far"

step "--cell mistakes"
H=$(git rev-parse HEAD)
expect_rc 2 ab step --cell wraps=8,batch=64
expect_match "$ERR" '^abtrack: error: ' "error format"
expect_contains "$ERR" "did you mean" "unknown axis: did you mean"
expect_contains "$ERR" "warps" "the suggestion names warps"
expect_rc 2 ab step --cell warps=5,batch=64
expect_contains "$ERR" "5" "an unknown value is named"
expect_rc 2 ab step --cell warps=8
expect_contains "$ERR" "batch" "a missing axis is named"
expect_rc 2 ab step --cell warps8,batch=64
expect_match "$ERR" '^abtrack: error: ' "malformed --cell"
expect_rc 2 ab step --cell warps=8,batch=64,warps=4
expect_contains "$ERR" "abtrack: error: --cell: axis 'warps' is named twice"
expect_rc 2 ab step --cell warps=8,batch=64 --cell warps=4,batch=64
expect_contains "$ERR" "abtrack: error: --cell given twice; a step runs one cell"
expect_rc 2 ab step --bogus
expect_match "$ERR" '^abtrack: error: ' "unknown option"
expect_eq "$(git rev-parse HEAD)" "$H" "no commit from a usage error"
expect_eq "$(runs_of_command)" 4 "no command ran for a usage error"
expect_clean

step "--metric records without running"
expect_rc 0 ab step --cell warps=4,batch=64 --metric time_us=7.5,8.5,9 --metric err=0.001
expect_eq "$(runs_of_command)" 4 "--metric does not run the command"
expect_eq "$(json "$(rec 5)" 'd["metrics"]["time_us"]["samples"]')" "[7.5, 8.5, 9.0]" "--metric samples"
expect_eq "$(json "$(rec 5)" 'd["metrics"]["err"]["samples"]')" "[0.001]" "--metric second metric"
expect_eq "$(json "$(rec 5)" 'd["outcome"]')" pass "--metric outcome"
expect_eq "$(cell_of 5)" "warps=4 batch=64" "--metric with --cell"
expect_eq "$(git show --name-only --format= HEAD | grep -vx AB.svg | sort | tr '\n' ' ')" "AB.md runs/opts/0005.json " "--metric commits record and doc (and the plot)"
expect_rc 1 ab step --cell warps=4,batch=16 --metric time_us=1 --metric err=0.5
expect_eq "$(json "$(rec 6)" 'd["outcome"]')" fail "--metric values go through the gates"
expect_eq "$(runs_of_command)" 4 "still no command run"
H7=$(git rev-parse HEAD)
expect_rc 2 ab step --cell warps=4,batch=16 --metric time_us=1
expect_contains "$ERR" "abtrack: error: --metric gives no value for metric 'err'"
expect_eq "$(git rev-parse HEAD)" "$H7" "an incomplete --metric is a usage error: nothing committed"
H=$(git rev-parse HEAD)
expect_rc 2 ab step --metric time_uss=1 --metric err=0
expect_contains "$ERR" "did you mean" "unknown metric: did you mean"
expect_contains "$ERR" "time_us"
expect_rc 2 ab step --metric time_us=fast --metric err=0
expect_contains "$ERR" "fast" "a non-number is named"
expect_rc 2 ab step --metric time_us
expect_match "$ERR" '^abtrack: error: ' "--metric without a value"
expect_eq "$(git rev-parse HEAD)" "$H" "no commit from a bad --metric"
expect_eq "$(runs_of_command)" 4 "no command ran for a bad --metric"

step "--record reads a file as the command's stdout"
printf 'warming up\n{"time_us":[99]}\n{"time_us":[3.25,4.5],"err":0.002}\n' >"$WORK/measured.txt"
expect_rc 0 ab step --cell warps=8,batch=16 --record "$WORK/measured.txt"
expect_eq "$(runs_of_command)" 4 "--record does not run the command"
expect_eq "$(json "$(rec 7)" 'd["metrics"]["time_us"]["samples"]')" "[3.25, 4.5]" "--record samples (last JSON object)"
expect_eq "$(json "$(rec 7)" 'd["metrics"]["err"]["samples"]')" "[0.002]" "--record second metric"
expect_eq "$(json "$(rec 7)" 'd["outcome"]')" pass "--record outcome"
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d')" 7 "--record committed as run 7"
H=$(git rev-parse HEAD)
expect_rc 2 ab step --record /dev/null
expect_contains "$ERR" "abtrack: error: --record: /dev/null is not a regular file"
expect_rc 2 ab run --detach
expect_contains "$ERR" "hint: without Slurm, \`abtrack run\` runs the cells here and waits"
expect_rc 2 ab compare 1 2 --metric tt
expect_contains "$ERR" "hint: the plan's metrics are: time_us, err"
expect_rc 2 ab step --record "$WORK/does-not-exist.txt"
expect_contains "$ERR" "does-not-exist.txt" "a missing --record file is named"
expect_eq "$(git rev-parse HEAD)" "$H" "no commit for a missing --record file"
expect_clean
expect_rc 0 ab verify
expect_fsck
expect_records_valid runs/opts/*.json  # --metric, --record and command runs

done_testing
