#!/usr/bin/env bash
# Unpacks and builds FlashMLA under build/flashmla/ on the H200, links each side's binary where
# kernels/mla_decode/experiments/flashmla.yaml reads its compiled-code facts, and smoke-tests
# it: FlashMLA's own test at its small V3.2 shapes, then bench_flashmla.py at one small shape.
# Run from anywhere in the repository.
#   bash kernels/mla_decode/flashmla/run_h200.sh TARBALL [KEEP_DIR]
# TARBALL: flashmla-src.tar.gz (shared/vendor/README.md). KEEP_DIR (e.g. $OUT): where the built
# flash_mla/cuda*.so and the build log are copied, to carry into a later machine instead of
# building again: put the .so back in build/flashmla/FlashMLA/flash_mla/ and this script unpacks
# the sources around it and skips the build.
# FLASHMLA_BUILD=minimal builds only what sparse_decode_fwd needs (9 of setup.py's 23 CUDA
# sources, and a 6-line binding of our own instead of api.cpp): 40 s on the H200, see README.md.
set -euo pipefail
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 TARBALL [KEEP_DIR]" >&2; exit 2; }
tarball=$(realpath "$1")
keep=${2:+$(realpath -m "$2")}
cd "$(dirname "$0")/../../.."   # the repository root
dest=build/flashmla
fm=$dest/FlashMLA
mkdir -p "$dest"

if [ ! -f "$fm/setup.py" ]; then
  echo "== unpacking $(basename "$tarball") into $dest"
  tar -xzf "$tarball" -C "$dest"   # keeps a flash_mla/cuda*.so already there
  # No git submodule on the H200 (the CUTLASS headers are in the tarball).
  sed -i 's/^subprocess.run(\["git", "submodule".*$/pass/' "$fm/setup.py"
fi

so() { ls "$fm"/flash_mla/cuda*.so 2>/dev/null | head -1; }
if [ -n "$(so)" ]; then
  echo "== $(so) is there: not building"
else
  if [ "${FLASHMLA_BUILD:-full}" = minimal ]; then
    echo "== minimal build: sparse_decode_fwd only"
    cat >"$fm/csrc/api/api_sparse_decode.cpp" <<'CPP'
// The sparse decode binding alone (api.cpp also binds dense decode and the prefills).
#include <pybind11/pybind11.h>
#include "sparse_decode.h"
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("sparse_decode_fwd", &sparse_attn_decode_interface);
}
CPP
    python3 - "$fm/setup.py" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
keep = ["csrc/api/api_sparse_decode.cpp",
        "csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu",
        "csrc/smxx/decode/combine/combine.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/model1_persistent_h64.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/model1_persistent_h128.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/v32_persistent_h64.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/v32_persistent_h128.cu",
        # sparse_decode.h's SM100 branch names these; built for sm_90a only they hold no SM100 code
        "csrc/sm100/decode/head64/instantiations/v32.cu",
        "csrc/sm100/decode/head64/instantiations/model1.cu",
        "csrc/sm100/prefill/sparse/fwd_for_small_topk/head128/instantiations/phase1_decode_k512.cu"]
new, n = re.subn(r"sources=\[.*?\],\n", "sources=" + repr(keep) + ",\n", text, count=1, flags=re.S)
if n != 1:
    sys.exit("run_h200.sh: setup.py has no sources=[...] list to replace")
open(path, "w").write(new)
PY
  fi
  python3 -c 'import ninja' 2>/dev/null || command -v ninja >/dev/null ||
    echo "== warning: no ninja: torch builds the sources one at a time (MAX_JOBS is ignored)" >&2
  echo "== building FlashMLA (log: $dest/build.log), nvcc: $(/usr/local/cuda/bin/nvcc --version | grep -o 'release [0-9.]*')"
  start=$(date +%s)
  set +e
  (cd "$fm" && CPLUS_INCLUDE_PATH=/usr/local/cuda/include/cccl${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH} \
    FLASH_MLA_DISABLE_SM100=1 NVCC_THREADS=2 MAX_JOBS=16 python3 setup.py build_ext --inplace) >"$dest/build.log" 2>&1
  rc=$?
  set -e
  echo "== build exited $rc after $(( $(date +%s) - start )) s"
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$dest/build.log" "$keep/"; fi
  if [ $rc -ne 0 ] || [ -z "$(so)" ]; then
    echo "== build failed; the log's errors:" >&2
    grep -n -m 20 -E 'error|Error' "$dest/build.log" >&2 || tail -n 40 "$dest/build.log" >&2
    exit 1
  fi
  if [ -n "$keep" ]; then cp "$(so)" "$keep/"; fi
fi
ls -l "$(so)"

# Each side's binary at one path per arm (the plan's artifacts: build/flashmla/arm/{impl}).
mkdir -p "$dest/arm"
ln -sfn "../FlashMLA/flash_mla/$(basename "$(so)")" "$dest/arm/flashmla"
ln -sfn ../../kernels/mla_decode_bench "$dest/arm/ours"
[ -x build/kernels/mla_decode_bench ] || echo "== note: build/kernels/mla_decode_bench is not built yet" >&2

# The decode kernel the plan's ncu and artifact regexes name must be in the binary.
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$cuobjdump" ]; then
  echo "== kernels in $(basename "$(so)") matching the plan's regex:"
  "$cuobjdump" -res-usage "$(so)" 2>/dev/null | grep -o 'Function [^ :]*' | sort -u |
    grep -E 'flash_fwd_splitkv_mla_fp8_sparse_kernel|flash_fwd_mla_combine_kernel' | c++filt | cut -c1-160 || true
fi

# FlashMLA's own test (its test_flash_mla: its inputs, reference and tolerances) at its V3.2
# correctness shape, b=74 s_k=2046 top-k 2048 in pages of 64 (a few -1 indices), attention sink
# on, 64 and 128 heads, s_q 1 and 2: seconds. The test module imports kernelkit (triton) and rich.
echo "== FlashMLA's own test: tests/test_flash_mla_sparse_decoding.py's test_flash_mla, V3.2 shapes"
set +e
(cd "$fm/tests" && python3 - <<'PY'
import contextlib, sys
import torch
torch.set_default_dtype(torch.bfloat16)  # as the test's main()
torch.set_default_device("cuda:0")
torch.cuda.set_device(0)
torch.set_float32_matmul_precision("high")
sys.path.insert(0, "..")
try:
    import test_flash_mla_sparse_decoding as t
    from lib import RawTestParamForDecode as Raw
except ImportError as e:
    print(f"== warning: FlashMLA's own test skipped: cannot import it: {e}", file=sys.stderr)
    sys.exit(3)
ok = True
for h in (64, 128):
    for s_q in (1, 2):
        p = Raw(74, h, s_q, 1, 2046, True, 2048, block_size=64, d_qk=576, num_runs=0, seed=h + s_q)
        with contextlib.redirect_stdout(sys.stderr):
            good = t.test_flash_mla(p.to_test_param()).is_correct
        print(f"   h={h} s_q={s_q}: {'passed' if good else 'FAILED'}")
        ok &= good
sys.exit(0 if ok else 1)
PY
)
rc=$?
set -e
[ $rc -eq 0 ] || [ $rc -eq 3 ] || { echo "== FlashMLA's own test failed (exit $rc): see above" >&2; exit 1; }

echo "== smoke test: B=2 h=64 topk=2048, a 64K-token pool"
FLASHMLA_DIR=$fm python3 kernels/mla_decode/flashmla/bench_flashmla.py \
  --batch 2 --heads 64 --topk 2048 --pool 65536 --samples 3 | tee "$dest/smoke.json"
tail -n 1 "$dest/smoke.json" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
ok = d["check_passed"] and d["corruption_pct"] == 0 and d["rel_err"] <= 6.7e-3
print("== smoke test", "passed" if ok else "FAILED", "(check_passed %s, rel_err %.3g, corruption %.3g%%, median %.2f us)"
      % (d["check_passed"], d["rel_err"], d["corruption_pct"], d["median_us"]))
sys.exit(0 if ok else 1)'
