#!/usr/bin/env bash
# `ncu:` metrics: one extra invocation of the cell's command under Nsight Compute, after the timed
# ones, per distinct kernel:/launch:, with --clock-control none. Uses tests/e2e/fake/ncu, which
# replays what a real ncu printed on an H200 and checks the options it was given. The values land
# in the record and the document and gates use them; a missing ncu, no access to the counters, a
# kernel regex that matches nothing or a metric ncu does not know is a warning, the record notes
# it and the timed samples still count; bad ncu config is a plan error and nothing is written.
source "$(dirname "$0")/lib.sh"

FAKE=$E2E_DIR/fake/ncu
rec() { printf 'runs/prof/%04d.json' "$1"; }
val() { json "$(rec "$1")" "$2"; }

write_plan() {  # write_plan EXTRA_METRICS EXTRA_TOP
  cat >abtrack.yaml <<EOF2
experiment: prof
doc: AB.md
axes:
  dram: ['20', '50']
baseline: {dram: '20'}
command: |
  echo timed >>"$WORK/order"; echo '{"t": [10, 11, 12]}'
env: {FAKE_NCU_VALUES: 'dram__throughput.avg.pct_of_peak_sustained_elapsed={dram}'}
repeats: 2
metrics:
  time_us: {json: t, better: lower, unit: us}
$1
$2
EOF2
}

step "values land in the record and the document; ncu runs after the timed invocations"
new_repo ncu
export ABTRACK_NCU=$FAKE FAKE_NCU_LOG=$WORK/ncu.log FAKE_NCU_ORDER=$WORK/order
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy, unit: '%'}
  smem: {ncu: launch__shared_mem_per_block_static, kernel: tidy}
  regs: {ncu: launch__registers_per_thread, kernel: tidy, launch: 1}" "gates:
  - dram_pct < 40"
git_commit_all "plan"
expect_rc 0 ab init
: >"$WORK/order"
expect_rc 1 ab run
expect_eq "$(val 1 'd["outcome"]')" pass "dram=20: the gate on the ncu metric holds"
expect_eq "$(val 2 'd["outcome"]')" fail "dram=50: the gate on the ncu metric fails"
expect_contains "$(val 2 'd["reason"]')" "gate 'dram_pct < 40' does not hold: worst 50"
expect_eq "$(val 1 'd["metrics"]["dram_pct"]["samples"]')" "[20.0]" "the value ncu gave"
expect_eq "$(val 1 'd["metrics"]["smem"]["samples"]')" "[1024.0]" "a value with a thousands separator (1,024)"
expect_eq "$(val 1 'd["metrics"]["regs"]["samples"]')" "[16.0]" "the second profile's metric"
expect_eq "$(val 1 '[d["metrics"]["dram_pct"][k] for k in ("source", "selector", "kernel", "launch")]')" \
  '["ncu", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "tidy", 0]' "the record names source, metric, kernel and launch"
expect_eq "$(val 1 'd["metrics"]["time_us"]["samples"]')" "[10.0, 11.0, 12.0, 10.0, 11.0, 12.0]" "the timed samples of both invocations"
expect_eq "$(val 1 'len(d["invocations"])')" 2 "the profile is no timed invocation"
expect_eq "$(val 1 'len(d["profiles"])')" 2 "one profile per distinct kernel/launch"
expect_eq "$(val 1 '[(p["status"], p["kernel"], p["launch"], p["metrics"]) for p in d["profiles"]]')" \
  '[["ok", "tidy", 0, ["dram_pct", "smem"]], ["ok", "tidy", 1, ["regs"]]]' "what each profile measured"
expect_eq "$(val 1 'all(isinstance(p["duration_s"], float) and p["duration_s"] > 0 for p in d["profiles"])')" true "the profiled invocation's wall time"
expect_contains "$(val 1 'd["profiles"][0]["command"]')" "--csv --clock-control none --print-units base"
expect_contains "$(val 1 'd["profiles"][0]["command"]')" "-k 'regex:tidy' --launch-skip 0 --launch-count 1 /bin/sh -c"
expect_eq "$(val 1 'd["profiles"][0]["units"]')" '{"dram_pct": "%", "smem": "byte/block"}' "ncu's units"
expect_eq "$(val 1 'd["profiles"][0]["kernels"]')" '["tidy(const float *, float *, int)"]' "the kernel ncu profiled"
expect_eq "$(grep -c -- '--clock-control none' "$WORK/ncu.log")" 4 "every ncu call had --clock-control none"
expect_eq "$(grep -c -- '--launch-skip 1 --launch-count 1' "$WORK/ncu.log")" 2 "launch: 1 skips one matching launch"
expect_eq "$(head -n 6 "$WORK/order" | tr '\n' ' ')" "timed timed ncu timed ncu timed " "the timed invocations first, then one profiled invocation per kernel/launch"
expect_eq "$(val 1 'd["metrics"]["dram_pct"].get("better")')" "null" "no verdict for an ncu metric without better:"
expect_contains AB.md "dram_pct (%)"
expect_match "$(region AB.md results)" '\| 50 \|.*\| 50 \|'
expect_records_valid runs/prof/*.json
expect_rc 0 ab verify
expect_clean

step "no ncu: a warning, the record says why, the timed samples count, the run passes"
export ABTRACK_NCU=$WORK/no-such-ncu
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy}" ""
git_commit_all "no gate on the ncu metric"
expect_rc 0 ab run --all
expect_contains "$ERR" "abtrack: warning: dram=20: ncu missing: ncu not found: ABTRACK_NCU=$WORK/no-such-ncu is not an executable file; dram_pct not measured in this run (its timed invocations count)"
expect_eq "$(val 3 'd["outcome"]')" pass "the run passes without ncu"
expect_eq "$(val 3 '"dram_pct" in d["metrics"]')" false "the ncu metric is missing for that run"
expect_eq "$(val 3 'd["metrics"]["time_us"]["summary"]["n"]')" 6 "the timed metric is recorded"
expect_eq "$(val 3 '[d["profiles"][0][k] for k in ("status", "command")]')" '["missing", null]' "the record notes it"
expect_records_valid runs/prof/*.json
expect_rc 0 ab verify

step "a gate on an ncu metric that was not measured fails clearly; other runs pass"
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy}" "gates: [dram_pct < 40]"
git_commit_all "gate again"
expect_rc 1 ab step --cell dram=20
expect_eq "$(val 5 'd["outcome"]')" fail "a gate that could not be evaluated fails the run"
expect_contains "$(val 5 'd["reason"]')" "gate 'dram_pct < 40' was not evaluated: ncu did not measure dram_pct: ncu not found"
expect_eq "$(val 5 'd["gates"][0]["evaluated"]')" false "the gate is recorded as not evaluated"

step "no access to the counters (ERR_NVGPUCTRPERM): a warning, the run passes"
export ABTRACK_NCU=$FAKE FAKE_NCU_MODE=noperm
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy}" ""
git_commit_all "no gate"
expect_rc 0 ab step --cell dram=20
expect_contains "$ERR" "ncu no-permission: ncu has no access to the GPU's performance counters (ERR_NVGPUCTRPERM"
expect_eq "$(val 6 '[d["outcome"], d["profiles"][0]["status"], "dram_pct" in d["metrics"]]')" '["pass", "no-permission", false]'
unset FAKE_NCU_MODE

step "a kernel regex that matches nothing; a metric ncu does not know"
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: 'decode_{dram}'}
  bogus: {ncu: no_such__metric.sum, kernel: tidy}
  smem: {ncu: launch__shared_mem_per_block_static, kernel: tidy}" ""
git_commit_all "kernels"
expect_rc 0 ab step --cell dram=20
expect_contains "$ERR" "ncu no-kernel: no launch of a kernel matched kernel: 'decode_20' (launch 0); the command launched crowded, staged, tensor, tidy"
expect_contains "$ERR" "ncu incomplete: ncu gave no value for bogus (no_such__metric.sum is 'n/a': not a metric of this GPU, or misspelt); the other ncu metrics were recorded"
expect_eq "$(val 7 '[d["outcome"], "bogus" in d["metrics"], d["metrics"]["smem"]["samples"]]')" '["pass", false, [1024.0]]'

step "ncu timing out: the run's timeout ends it; the timed samples count"
export FAKE_NCU_MODE=hang
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed}" "timeout: 1"
git_commit_all "timeout"
expect_rc 0 ab step --cell dram=20
expect_contains "$ERR" "ncu timed-out: ncu timed out after 1 s (the plan's timeout:)"
expect_eq "$(val 8 '[d["outcome"], d["profiles"][0]["status"], d["profiles"][0]["kernel"]]')" '["pass", "timed-out", null]'
unset FAKE_NCU_MODE

step "a batch of rounds profiles each cell once per run, unless a gate needs every run"
# The counters describe the code on the card, not the round: profiling every round would double
# each round's cost. rounds: the records of later rounds have no profile, and the document still
# shows the first round's values.
new_repo rounds-prof
export ABTRACK_NCU=$FAKE FAKE_NCU_LOG=$WORK/ncu-rounds.log
: >"$FAKE_NCU_LOG"
# profiled N: "ROUND:PROFILED" of the newest N records, one line each in round order, counted.
profiled() {
  for f in $(ls runs/prof/*.json | tail -n "$1"); do
    json "$f" '"%d:%s" % (d["schedule"]["round"], "yes" if d.get("profiles") else "no")'
  done | sort | uniq -c | tr -s ' ' | tr '\n' ',' | sed 's/^ //'
}
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy, unit: '%'}" ""
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run --rounds 3
expect_eq "$(grep -c -- --clock-control "$FAKE_NCU_LOG")" 2 "one profile per cell in 3 rounds"
expect_eq "$(profiled 6)" "2 1:yes, 2 2:no, 2 3:no," "round 1 profiled, rounds 2 and 3 not"
expect_match "$(region AB.md results)" '\| 50 \|' "the document shows round 1's value"
expect_rc 0 ab verify
# rounds: auto cut short (--max-rounds 2 under the plan's 4): the run that continues the batch
# profiles each cell once more, in round 3.
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy, unit: '%'}" \
  "rounds: auto
max_rounds: 4"
git_commit_all "rounds: auto"
: >"$FAKE_NCU_LOG"
expect_rc 0 ab run --all --max-rounds 2 --seed 3
expect_contains "$ERR" "undecided after 2 rounds"
expect_rc 0 ab run --seed 4
expect_contains "$ERR" "after its round 2"
expect_eq "$(grep -c -- --clock-control "$FAKE_NCU_LOG")" 4 "rounds 1 and 3, each the first its run measured"
expect_eq "$(profiled 8)" "2 1:yes, 2 2:no, 2 3:yes, 2 4:no,"
# A cell whose first run did not count (its command failed: invalid, not profiled) is profiled
# in its next run.
rm -f "$WORK/failed-once"
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy, unit: '%'}" ""
sed -i "s|^command: [|]\$|command: \|\n  if [ {dram} = 50 ] \&\& [ ! -e '$WORK/failed-once' ]; then touch '$WORK/failed-once'; exit 3; fi|" abtrack.yaml
git_commit_all "dram=50 fails once"
: >"$FAKE_NCU_LOG"
expect_rc 1 ab run --all --rounds 3
expect_eq "$(grep -c -- --clock-control "$FAKE_NCU_LOG")" 2 "each cell profiled once"
expect_eq "$(for f in $(ls runs/prof/*.json | tail -n 6); do
  json "$f" '"%d:%s:%s" % (d["schedule"]["round"], d["outcome"], "yes" if d.get("profiles") else "no") if str(d["cell"]["dram"]) == "50" else ""'
done | sed '/^$/d' | sort | tr '\n' ' ')" "1:invalid:no 2:pass:yes 3:pass:no " "dram=50: profiled in round 2, its first run that counted"
# A gate on an ncu metric judges every run: every round is profiled.
write_plan "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: tidy, unit: '%'}" \
  "gates:
  - dram_pct < 60"
git_commit_all "a gate on the counter"
: >"$FAKE_NCU_LOG"
expect_rc 0 ab run --all --rounds 2
expect_eq "$(grep -c -- --clock-control "$FAKE_NCU_LOG")" 4 "every run profiled"
expect_eq "$(profiled 4)" "2 1:yes, 2 2:yes,"
expect_records_valid runs/prof/*.json
expect_clean

step "bad ncu config: a plan error at its place, nothing written"
before=$(commit_count)
for metric in "dram_pct: {ncu: ''}" "dram_pct: {ncu: dram__throughput.avg, kernel: 'dec(ode'}" \
              "dram_pct: {ncu: dram__throughput.avg, json: x}" "dram_pct: {ncu: dram__throughput.avg, launch: -2}"; do
  write_plan "  $metric" ""
  expect_rc 2 ab run --all
  expect_match "$ERR" "^abtrack: error: abtrack.yaml:12:[0-9]+: "
done
expect_contains "$ERR" "launch must be a whole number >= 0, not -2"
expect_eq "$(commit_count)" "$before" "nothing was committed"
git checkout -q abtrack.yaml
expect_clean

done_testing
