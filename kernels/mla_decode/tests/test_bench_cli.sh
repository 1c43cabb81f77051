#!/usr/bin/env bash
# The bench driver's command line: usage errors exit 2 with a clear message; a CPU run prints
# one JSON object with the contract's fields as its last stdout line.
set -u
bench="$1"
. "$(dirname "$0")/checks.sh"

"$bench" --batch 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--batch 0 exits 2 (got $rc)" test "$rc" -eq 2
check "--batch 0 message" grep -q '^mla_decode_bench: error: --batch must be between 1' "$tmp/err"

"$bench" --bogus 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "unknown option exits 2 (got $rc)" test "$rc" -eq 2
check "unknown option named" grep -q "unknown option '--bogus'" "$tmp/err"

"$bench" --device cuda --warps 6 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--warps 6 exits 2 (got $rc)" test "$rc" -eq 2
check "--warps 6 message" grep -q '^mla_decode_bench: error: ' "$tmp/err"

"$bench" --math mad >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--math mad exits 2 (got $rc)" test "$rc" -eq 2
check "--math lists its values" grep -q "^mla_decode_bench: error: --math must be mma, fma or wgmma, got 'mad'" "$tmp/err"

"$bench" --l2-flush warm >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--l2-flush warm exits 2 (got $rc)" test "$rc" -eq 2
check "--l2-flush lists its values" grep -q "^mla_decode_bench: error: --l2-flush must be dirty or clean, got 'warm'" "$tmp/err"

# A CUDA build names the wgmma kernel's constraints; a CPU-only build refuses --device cuda.
"$bench" --device cuda --math wgmma --warps 4 --tile 64 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--math wgmma --warps 4 exits 2 (got $rc)" test "$rc" -eq 2
check "--math wgmma --warps 4 message" grep -qE '^mla_decode_bench: error: (math wgmma needs warps 8, tile 64 and dequant bits|--device cuda: this build has no CUDA support)' "$tmp/err"

"$bench" --device cpu --topk 100 --pool 50 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "topk > pool exits 2 (got $rc)" test "$rc" -eq 2

"$bench" --help >"$tmp/out" 2>&1; rc=$?
check "--help exits 0" test "$rc" -eq 0
check "--help lists --dequant" grep -q -- '--dequant' "$tmp/out"

"$bench" --device cpu --batch 2 --heads 32 --topk 128 --pool 512 --tile 32 --splits 3 --threads 2 \
  --samples 3 --invalid-pct 25 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "cpu run exits 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
tail -n 1 "$tmp/out" >"$tmp/json"
for key in samples_us median_us rel_err max_abs_err corruption_pct gbps tflops roofline_us roofline_frac \
    regs_per_thread smem_bytes ctas_per_sm warps_per_sm device feasible batch heads topk pool warps stages \
    tile splits math dequant seed scale; do
  check "JSON has \"$key\"" grep -q "\"$key\": " "$tmp/json"
done
if command -v python3 >/dev/null 2>&1; then
  check "last line is valid JSON with 3 samples and rel_err <= 6.7e-3" python3 -c '
import json, sys
j = json.loads(open(sys.argv[1]).read())
assert len(j["samples_us"]) == 3, j
assert j["rel_err"] <= 6.7e-3 and j["corruption_pct"] == 0, j
assert j["feasible"] is True and j["device"] == "cpu" and j["splits"] == 3 and j["splits_used"] == 3, j
' "$tmp/json"
fi

# --reference-cache: the first run writes one .ref file, the second reads it and checks the same.
for i in 1 2; do
  "$bench" --device cpu --batch 2 --heads 32 --topk 128 --pool 512 --tile 32 --threads 2 --samples 1 \
    --reference-cache "$tmp/refs" >"$tmp/out$i" 2>"$tmp/err"; rc=$?
  check "cached cpu run $i exits 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
done
check "one reference file kept" test "$(ls "$tmp/refs" | grep -c '\.ref$')" -eq 1
check "the cached run checks the same" test "$(grep -o '"rel_err": [^,]*' "$tmp/out1")" = "$(grep -o '"rel_err": [^,]*' "$tmp/out2")"
# A cache that cannot be written is a warning; the run itself passes.
"$bench" --device cpu --batch 2 --heads 32 --topk 128 --pool 512 --tile 32 --threads 2 --samples 1 \
  --reference-cache /dev/null/refs >"$tmp/out" 2>"$tmp/err"; rc=$?
check "an unwritable cache still runs (got $rc)" test "$rc" -eq 0
check "the unwritable cache is a warning" grep -q "^mla_decode_bench: warning: reference cache not written" "$tmp/err"
"$bench" --device cpu --reference-cache "" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--reference-cache '' exits 2 (got $rc)" test "$rc" -eq 2
checks_done
