#!/usr/bin/env bash
# The watcher: while a command runs, abtrack samples NVML (here the fake of tests/fake_nvml/,
# chosen with ABTRACK_NVML_LIBRARY) for the GPUs the cell uses. The record keeps each
# invocation's min/median/max and busy clocks, the fingerprint takes its clocks from the busy
# samples, and a throttled invocation is flagged (`throttle: warn`) or makes the run invalid
# (`throttle: invalid`). Without NVML the record says so and the run counts.
source "$(dirname "$0")/lib.sh"
FAKE=${ABTRACK_BUILD_DIR:-$E2E_DIR/../../build}/tests/libfakenvml.so
[ -f "$FAKE" ] || die "the fake NVML is not built: $FAKE (cmake --build build --target fakenvml)"
# watched ENV... -- ARGS: abtrack with the fake NVML and the fake's settings ENV.
watched() {
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env ABTRACK_NVML_LIBRARY="$FAKE" "${vars[@]}" "$ABTRACK" "$@"
}

new_repo
cat >abtrack.yaml <<'EOF'
experiment: watch
doc: AB.md
axes: {v: [a, b]}
baseline: {v: a}
command: "sleep 0.2; echo '{\"t\": [1, 2, 3]}'"
metrics: {t: {json: t, better: lower}}
plot: false
EOF
expect_rc 0 ab init

step "the record keeps the watched GPU's min/median/max, and the fingerprint its busy clocks"
# The fake's first sample is idle (345 MHz), the rest busy (1980 MHz).
expect_rc 0 watched FAKE_NVML_BUSY_FROM_CALL=2 -- step --cell v=a
rec=runs/watch/0001.json
expect_eq "$(json $rec 'd["invocations"][0]["watch"]["nvml"]')" true "the invocation was watched"
expect_eq "$(json $rec 'len(d["invocations"][0]["watch"]["gpus"])')" 1 "one GPU"
gpu='d["invocations"][0]["watch"]["gpus"][0]'
expect_eq "$(json $rec "$gpu[\"uuid\"]")" GPU-fake0000-0000-0000-0000-000000000000 "its UUID"
expect_eq "$(json $rec "[$gpu['sm_clock_mhz'][0], $gpu['sm_clock_mhz'][2]]")" "[345, 1980]" "min and max of the SM clock"
expect_eq "$(json $rec "$gpu['busy_sm_clock_mhz']")" 1980 "the busy samples' SM clock"
expect_eq "$(json $rec "$gpu['samples'] - $gpu['busy'] >= 1 and $gpu['busy'] >= 3")" true "~10 samples in 0.2 s, the first idle"
expect_eq "$(json $rec "$gpu['power_w'][2]")" 650 "power draw in W"
expect_eq "$(json $rec "$gpu['throttle']")" "[]" "no throttling"
expect_eq "$(json $rec 'd["env"]["gpus"][0]["sm_clock_mhz"]')" 1980 "the fingerprint's clock is the busy one"
expect_eq "$(json $rec 'd["env"]["gpus"][0]["clocks_from"]')" busy "and says so"
expect_not_contains "$OUT" "throttled"
expect_records_valid $rec

step "throttle: warn (the default) flags the run's result line and the document"
expect_rc 0 watched FAKE_NVML_THROTTLE_FROM_CALL=3 -- step --cell v=b
expect_contains "$OUT" "run 2 v=b: pass"
expect_contains "$OUT" "throttled: sw_power_cap"
expect_eq "$(json runs/watch/0002.json 'd["invocations"][0]["watch"]["gpus"][0]["throttle"]')" '["sw_power_cap"]' "the invocation's reasons"
results=$(region AB.md results)
expect_contains "$results" "| b | 3 | 2 |"
expect_contains "$results" "pass (*throttled*: sw_power_cap) | 2 |"
expect_contains "$results" "*throttled*: NVML reported these clock-event reasons while the GPU was busy"
expect_not_contains "$(printf '%s\n' "$results" | grep '^| a ')" "throttled" "the unthrottled cell is not flagged"
expect_contains "$(region AB.md runs)" "| 2 | v=b | pass | 2 | throttled: sw_power_cap |"
expect_rc 0 ab verify
expect_records_valid runs/watch/0002.json

step "throttle: invalid makes a throttled run invalid, naming the reasons"
printf 'throttle: invalid\n' >>abtrack.yaml
expect_rc 1 watched FAKE_NVML_THROTTLE_FROM_CALL=3 FAKE_NVML_THROTTLE=0x44 -- step --cell v=b
expect_contains "$OUT" "run 3 v=b: invalid"
expect_contains "$OUT" "command was throttled while the GPU was busy: sw_power_cap, hw_thermal_slowdown (throttle: invalid)"
expect_eq "$(json runs/watch/0003.json 'd["outcome"]')" invalid "the record's outcome"
# Unthrottled, the same plan passes.
expect_rc 0 watched -- step --cell v=b
expect_contains "$OUT" "run 4 v=b: pass"

step "a cell's GPU (gpus:, a UUID) is the one watched"
printf 'gpus: [GPU-fake0000-0000-0000-0000-000000000001]\n' >>abtrack.yaml
expect_rc 0 watched FAKE_NVML_GPUS=2 -- step --cell v=a
expect_eq "$(json runs/watch/0005.json '[g["index"] for g in d["invocations"][0]["watch"]["gpus"]]')" "[1]" "only GPU 1"
expect_eq "$(json runs/watch/0005.json '[g["clocks_from"] for g in d["env"]["gpus"]]')" '["probe", "busy"]' "GPU 0 keeps the probe's read"

step "without NVML the record says so, and the run counts"
expect_rc 0 env ABTRACK_NVML_LIBRARY="$WORK/no-such-libnvidia-ml.so" "$ABTRACK" step --cell v=a
expect_contains "$OUT" "run 6 v=a: pass"
expect_eq "$(json runs/watch/0006.json 'd["invocations"][0]["watch"]')" \
  "{\"nvml\": false, \"reason\": \"$WORK/no-such-libnvidia-ml.so not found\"}" "the reason"
expect_records_valid runs/watch/0006.json

step "on a host with two kinds of GPU, each card's runs pool apart, and a comparison across them is flagged"
# The command sees one GPU (CUDA_VISIBLE_DEVICES in abtrack's environment); the run's kind of GPU
# is that card's, not the host's.
first=$REPO
new_repo cards
sed -e '/^gpus:/d' -e '/^throttle:/d' "$first/abtrack.yaml" >abtrack.yaml
expect_rc 0 ab init
two() { local gpu=$1; shift; watched FAKE_NVML_GPUS=2 "FAKE_NVML_NAME=Card A,Card B" CUDA_VISIBLE_DEVICES="$gpu" -- "$@"; }
expect_rc 0 two 0 step --cell v=a
expect_rc 0 two 0 step --cell v=a
expect_rc 0 two 1 step --cell v=b
expect_eq "$(json runs/watch/0003.json '[g["name"] for g in d["env"]["gpus"]]')" '["Card A", "Card B"]' "the host has both"
expect_rc 0 ab status --json
expect_eq "$("$PY" -c 'import json,sys; print([c["pool"] for c in json.load(sys.stdin)["cells"]])' <"$OUT")" "[2, 1]" "both runs of a on Card A pool"
expect_contains "$(region AB.md summary)" "v=b is compared with its baseline across different machines: baseline run 1 on $(hostname) (Card A, driver 999.99.99); cell run 3 on $(hostname) (Card B, driver 999.99.99)"
expect_contains "$(region AB.md summary)" "3 runs committed, " "the summary's first line"
expect_contains "$(region AB.md summary)" " Measured on Card A (1 cell), Card B (1 cell)." "says where each pool was measured"
expect_rc 0 two 1 step --cell v=a
expect_rc 0 ab status --json
expect_eq "$("$PY" -c 'import json,sys; print([c["pool"] for c in json.load(sys.stdin)["cells"]])' <"$OUT")" "[1, 1]" "a on Card B is a pool of its own"
expect_not_contains "$(region AB.md summary)" "different machines" "a and b now both on Card B"
expect_contains "$(region AB.md summary)" " Measured on Card B."
# b again on Card A: compared with a's runs on Card A (runs 1 and 2), not with a's latest (Card B).
expect_rc 0 two 0 step --cell v=b
expect_eq "$(json runs/watch/0005.json 'd["comparison"]["baseline_run"]')" 2 "and its record's"
expect_not_contains "$(region AB.md summary)" "different machines" "the document's: no comparison across cards"
expect_contains "$(region AB.md summary)" " Measured on Card A (1 cell), Card B (1 cell)."
cd "$first"

step "an unknown throttle: value is a plan error, and nothing is written"
sed -i 's/^throttle: invalid/throttle: invalidate/' abtrack.yaml
before=$(commit_count)
expect_rc 2 ab step --cell v=a
expect_contains "$ERR" "abtrack.yaml:8:11: throttle must be warn or invalid, not 'invalidate', did you mean 'invalid'?"
expect_eq "$(commit_count)" "$before" "no commit"
expect_false "no record" test -e runs/watch/0007.json
done_testing
