#!/usr/bin/env bash
# Compiled-code facts of `artifacts:` that are CUDA binaries: per kernel the registers, shared,
# local and stack memory, ptxas's spills (from a named build log) and the SASS instruction mix,
# next to the artifact's hash; a file that is no CUDA binary is recorded as such; the document
# shows what differs between a variant's binary and its baseline's. Uses tests/e2e/fake/cuobjdump,
# which replays what the real cuobjdump printed for tests/data/cuda/recorded/facts.cubin (built
# from tests/data/cuda/facts.cu); test_cuda_facts_real.sh runs the real tools where they exist.
source "$(dirname "$0")/lib.sh"

REC=$E2E_DIR/../data/cuda/recorded
rec() { printf 'runs/facts/%04d.json' "$1"; }
val() { json "$(rec "$1")" "$2"; }
kernel() {  # kernel RUN NAME EXPR: EXPR over the kernel `k` of the first artifact
  json "$(rec "$1")" "[(lambda k: $3)(k) for k in d['artifacts'][0]['cuda']['kernels'] if k['name'] == '$2'][0]"
}

step "per-kernel facts next to the hash; a text file is not a CUDA binary; the document's diff"
new_repo facts
export ABTRACK_CUOBJDUMP=$E2E_DIR/fake/cuobjdump FAKE_CUOBJDUMP_DIR=$WORK/replay FAKE_CUOBJDUMP_LOG=$WORK/cuobjdump.log
mkdir -p build "$WORK/replay"
# regs=32: the recorded binary. regs=40: another binary (its bytes differ) whose replayed output
# gives `crowded` 40 registers and no spills, and its build log no spill bytes.
cp "$REC/facts.cubin" build/k-32.cubin
cp "$REC/ptxas.log" build/ptxas-32.log
{ cat "$REC/facts.cubin"; printf 'x'; } >build/k-40.cubin
sed 's/REG:32 STACK:272/REG:40 STACK:0/' "$REC/res-usage.txt" >"$WORK/replay/k-40.cubin.res-usage.txt"
grep -v -E ' (STL|LDL) ' "$REC/sass.txt" >"$WORK/replay/k-40.cubin.sass.txt"
sed 's/272 bytes stack frame, 268 bytes spill stores, 336 bytes spill loads/0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/' \
  "$REC/ptxas.log" >build/ptxas-40.log
echo "notes, not code" >build/notes.txt
printf 'build/\n' >.gitignore
cat >abtrack.yaml <<'EOF2'
experiment: facts
doc: AB.md
axes:
  regs: ['32', '40']
baseline: {regs: '32'}
command: |
  echo '{"t": [1, 2, 3]}'
metrics:
  t: {json: t, better: lower}
artifacts:
  - {path: 'build/k-{regs}.cubin', build_log: 'build/ptxas-{regs}.log'}
  - build/notes.txt
EOF2
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(val 1 '[d["artifacts"][0]["cuda"][k] for k in ("kind", "build_log", "kernels_left_out", "error")]')" \
  '["cubin", "build/ptxas-32.log", 0, null]' "a cubin, its build log read"
expect_eq "$(val 1 'len(d["artifacts"][0]["cuda"]["kernels"])')" 4 "four kernels"
expect_eq "$(kernel 1 _Z7crowdedPKfPfi '[k["arch"], k["registers"], k["stack_bytes"], k["spill_store_bytes"], k["spill_load_bytes"]]')" \
  '["sm_90a", 32, 272, 268, 336]' "the spilling kernel: registers, stack, ptxas's spill bytes"
expect_eq "$(kernel 1 _Z7crowdedPKfPfi 'k["sass"]["local_store"] > 10 and k["sass"]["local_load"] > 10')" true "its spill stores and loads in the SASS"
expect_eq "$(kernel 1 _Z4tidyPKfPfi '[k["registers"], k["shared_bytes"], k["spill_store_bytes"], "local_store" in k["sass"], k["sass"]["conversion"] >= 1]')" \
  '[12, 2048, 0, false, true]' "the tidy kernel: no spills, shared memory, a conversion"
expect_eq "$(kernel 1 _Z6tensorPK6__halfS1_Pf 'k["sass"]["mma"]')" 2 "HMMA instructions"
expect_eq "$(kernel 1 _Z6stagedPKfPfi '[k["sass"]["async_copy"], k["sass"]["barrier"] >= 2]')" '[1, true]' "LDGSTS and its barriers"
expect_eq "$(val 1 'd["artifacts"][1]["cuda"]')" '{"kind": "none", "note": "not a CUDA binary"}' "a text file is recorded as not a CUDA binary"
expect_eq "$(kernel 2 _Z7crowdedPKfPfi '[k["registers"], k["spill_store_bytes"], "local_store" in k["sass"]]')" '[40, 0, false]' "the variant's binary"
expect_eq "$(grep -c . "$WORK/cuobjdump.log")" 4 "cuobjdump ran twice per CUDA binary (-res-usage, -sass), never on the text file"
summary=$(region AB.md summary)
expect_contains "$summary" "**Evidence against the baseline**"
expect_contains "$summary" "- **regs=40** vs regs=32: build/k-40.cubin: \`crowded\`: regs 32 → 40, stack 272 → 0 B, spill stores 268 → 0 B, spill loads 336 → 0 B,"
expect_match "$summary" "STL [0-9]+ → 0"
expect_not_contains "$summary" "\`tidy\`" "kernels that did not change are not listed"
expect_records_valid runs/facts/*.json
expect_rc 0 ab verify
expect_clean

step "the same binaries again in one invocation: cuobjdump is not run again"
: >"$WORK/cuobjdump.log"
expect_rc 0 ab run --all --rounds 2
expect_eq "$(grep -c . "$WORK/cuobjdump.log")" 4 "each binary's facts are read once per process"
for n in 3 4 5 6; do  # the rounds are shuffled: each run's facts are its own cell's binary's
  expect_eq "$(kernel $n _Z7crowdedPKfPfi 'k["registers"]')" "$(val $n 'd["cell"]["regs"]')" "run $n"
done

step "no cuobjdump: the run passes, the record and a warning say why"
export ABTRACK_CUOBJDUMP=$WORK/no-cuobjdump
expect_rc 0 ab step --cell regs=32
expect_contains "$ERR" "abtrack: warning: regs=32: the compiled-code facts of build/k-32.cubin are incomplete: cuobjdump not found: ABTRACK_CUOBJDUMP=$WORK/no-cuobjdump is not an executable file"
expect_eq "$(val 7 '[d["outcome"], d["artifacts"][0]["cuda"]["kind"], d["artifacts"][0]["cuda"]["kernels"], d["artifacts"][0]["sha256"] is not None]')" \
  '["pass", "cubin", [], true]'
expect_contains "$(val 7 'd["artifacts"][0]["cuda"]["error"]')" "cuobjdump not found"
expect_eq "$(val 7 'd["artifacts"][1]["cuda"]["kind"]')" none "a text file needs no cuobjdump"
expect_records_valid runs/facts/*.json

step "a missing artifact has no facts"
rm build/k-32.cubin
export ABTRACK_CUOBJDUMP=$E2E_DIR/fake/cuobjdump
expect_rc 0 ab step --cell regs=32
expect_eq "$(val 8 '[d["artifacts"][0]["missing"], d["artifacts"][0]["cuda"]]')" '[true, null]'

done_testing
