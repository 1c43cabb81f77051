#!/usr/bin/env bash
# Compiled-code facts read by the real CUDA tools: tests/data/cuda/facts.cu compiled to a cubin
# for sm_90a at test time, with -maxrregcount=32 so that `crowded` spills and the others do not,
# and ptxas's -v output as the build log. Skipped (77) where nvcc or cuobjdump is missing.
source "$(dirname "$0")/lib.sh"

find_cuda_tool() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"
  elif [ -x "/usr/local/cuda/bin/$1" ]; then echo "/usr/local/cuda/bin/$1"; fi
}
NVCC=$(find_cuda_tool nvcc)
CUOBJDUMP=$(find_cuda_tool cuobjdump)
if [ -z "$NVCC" ] || [ -z "$CUOBJDUMP" ]; then
  echo "SKIP $TEST_NAME: needs nvcc and cuobjdump (on PATH or in /usr/local/cuda/bin)" >&2
  DONE=1
  exit 77
fi
unset ABTRACK_CUOBJDUMP
rec() { printf 'runs/real/%04d.json' "$1"; }
kernel() {
  json "$(rec "$1")" "[(lambda k: $3)(k) for k in d['artifacts'][0]['cuda']['kernels'] if k['name'] == '$2'][0]"
}

step "nvcc -cubin at test time; registers, spills and instruction classes from cuobjdump and ptxas"
new_repo real
mkdir -p build
"$NVCC" -cubin -arch=sm_90a -maxrregcount=32 -Xptxas -v "$E2E_DIR/../data/cuda/facts.cu" -o build/facts.cubin 2>build/ptxas.log \
  || { cat build/ptxas.log >&2; die "nvcc could not compile tests/data/cuda/facts.cu"; }
echo "a text file" >notes.txt
printf 'build/\n' >.gitignore
cat >abtrack.yaml <<'EOF2'
experiment: real
doc: AB.md
axes: {x: [1]}
command: |
  echo '{"t": 1}'
metrics:
  t: {json: t}
artifacts:
  - {path: build/facts.cubin, build_log: build/ptxas.log}
  - notes.txt
EOF2
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(json "$(rec 1)" '[d["artifacts"][0]["cuda"]["kind"], d["artifacts"][0]["cuda"]["error"], len(d["artifacts"][0]["cuda"]["kernels"])]')" \
  '["cubin", null, 4]'
expect_eq "$(kernel 1 _Z7crowdedPKfPfi 'k["registers"] <= 32 and k["spill_store_bytes"] > 0 and k["spill_load_bytes"] > 0 and k["stack_bytes"] > 0')" true \
  "crowded spills (ptxas's report)"
expect_eq "$(kernel 1 _Z7crowdedPKfPfi 'k["sass"].get("local_store", 0) > 0 and k["sass"].get("local_load", 0) > 0')" true "and its SASS has STL/LDL"
expect_eq "$(kernel 1 _Z4tidyPKfPfi '[k["spill_store_bytes"], k["sass"].get("local_store", 0), k["shared_bytes"] > 0, k["sass"]["shared_store"] >= 1, k["sass"]["barrier"] >= 1, k["sass"]["conversion"] >= 1, k["arch"]]')" \
  '[0, 0, true, true, true, true, "sm_90a"]' "tidy does not spill; shared memory, a barrier, a conversion"
expect_eq "$(kernel 1 _Z6tensorPK6__halfS1_Pf 'k["sass"].get("mma", 0) >= 1')" true "HMMA"
expect_eq "$(kernel 1 _Z6stagedPKfPfi 'k["sass"].get("async_copy", 0) >= 1')" true "LDGSTS"
expect_eq "$(json "$(rec 1)" 'd["artifacts"][1]["cuda"]["note"]')" "not a CUDA binary"
expect_records_valid runs/real/*.json

done_testing
