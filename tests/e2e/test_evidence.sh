#!/usr/bin/env bash
# The evidence in the document: per compared cell, a bullet in the summary with what changed
# against its baseline cell: the `ncu: occupancy` counters (the fake ncu of tests/e2e/fake/ncu,
# its values set per cell) under short names, the binding occupancy limit on each side, and what
# the NVML watcher saw (the fake NVML of tests/fake_nvml, which throttles the variant's runs here).
# A plan with neither gets no evidence heading.
source "$(dirname "$0")/lib.sh"
NVML=${ABTRACK_BUILD_DIR:-$E2E_DIR/../../build}/tests/libfakenvml.so
[ -f "$NVML" ] || die "the fake NVML is not built: $NVML (cmake --build build --target fakenvml)"

new_repo evidence
export ABTRACK_NCU=$E2E_DIR/fake/ncu
# Per cell: registers per thread {warps}0, the register limit {warps} CTAs/SM against 6 for shared
# memory (so 4 warps bind on registers, 8 on shared memory), warps active {warps}0.5%.
cat >abtrack.yaml <<'EOF'
experiment: ev
doc: AB.md
axes: {warps: ['4', '8'], batch: ['16', '64']}
baseline: {warps: '4'}
command: "sleep 0.1; echo '{\"t\": [10, 11, 12]}'"
env:
  FAKE_NCU_VALUES: >-
    launch__registers_per_thread={warps}0;launch__occupancy_limit_registers={warps};launch__occupancy_limit_shared_mem=6;launch__occupancy_limit_warps=16;sm__warps_active.avg.pct_of_peak_sustained_active={warps}0.5
metrics:
  t: {json: t, better: lower, unit: us}
  occ: {ncu: occupancy, kernel: tidy}
plot: false
EOF
git_commit_all "plan"
expect_rc 0 ab init

step "a variant against its baseline: counters, the binding limit, the watcher's clocks and throttling"
expect_rc 0 env ABTRACK_NVML_LIBRARY="$NVML" "$ABTRACK" step --cell warps=4,batch=16
# The variant's GPU draws 455 W while busy, and is throttled.
expect_rc 0 env ABTRACK_NVML_LIBRARY="$NVML" FAKE_NVML_BUSY_POWER_W=455 FAKE_NVML_THROTTLE_FROM_CALL=1 "$ABTRACK" step --cell warps=8,batch=16
summary=$(region AB.md summary)
expect_contains "$summary" "**Evidence against the baseline** (per compared cell"
expect_contains "$summary" "- **warps=8 batch=16** vs warps=4: ncu: regs 40 → 80, CTAs/SM 4 → 6, limit: registers → shared memory, warps active 40.5% → 80.5%; NVML: SM 1980 → 1980 MHz, power 650 → 455 W, GPU util 90 → 90%, throttled: none → sw_power_cap"
expect_not_contains "$summary" "**warps=4" "the baseline gets no bullet"
expect_not_contains "$summary" "DRAM" "unchanged counters are left out"
expect_rc 0 ab verify
# Rendered again from the record cache (which keeps the watches) and from the records themselves.
expect_rc 0 ab render
expect_clean
rm -rf .git/abtrack/cache
expect_rc 0 ab verify

step "a cell whose baseline has not run gets no bullet; runs without NVML leave the watcher out"
expect_rc 0 env ABTRACK_NVML_LIBRARY="$WORK/no-such-libnvidia-ml.so" "$ABTRACK" step --cell warps=8,batch=64
expect_not_contains "$(region AB.md summary)" "**warps=8 batch=64**"
expect_rc 0 env ABTRACK_NVML_LIBRARY="$WORK/no-such-libnvidia-ml.so" "$ABTRACK" step --cell warps=4,batch=64
summary=$(region AB.md summary)
expect_contains "$summary" "- **warps=8 batch=64** vs warps=4: ncu: regs 40 → 80, CTAs/SM 4 → 6, limit: registers → shared memory, warps active 40.5% → 80.5%
"
expect_not_contains "$(printf '%s\n' "$summary" | grep 'batch=64\*\*')" "NVML" "neither arm watched: no NVML part"
expect_rc 0 ab verify

step "a plan without ncu metrics, artifacts or watches: no evidence"
new_repo plain
cat >abtrack.yaml <<'EOF'
experiment: plain
doc: AB.md
axes: {warps: ['4', '8']}
baseline: {warps: '4'}
command: "echo '{\"t\": [10, 11, 12]}'"
metrics: {t: {json: t, better: lower}}
plot: false
EOF
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 env ABTRACK_NVML_LIBRARY="$WORK/no-such-libnvidia-ml.so" "$ABTRACK" run
expect_not_contains "$(region AB.md summary)" "Evidence"

done_testing
