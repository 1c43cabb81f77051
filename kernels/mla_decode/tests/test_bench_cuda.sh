#!/usr/bin/env bash
# The bench driver on a GPU: an infeasible configuration exits 3 with feasible: false and a
# reason; a small feasible run prints a passing result. Exit 77 (skip) without a GPU.
set -u
bench="$1"
. "$(dirname "$0")/checks.sh"
"$bench" --device cuda --batch 2 --topk 2048 --pool 4096 --warps 4 --tile 64 --stages 4 --splits 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -eq 1 ] && grep -q -e 'no CUDA device' -e 'cudaGetDeviceCount' -e 'not sm_90' "$tmp/err"; then
  echo "skipped: $(cat "$tmp/err")"
  exit 77
fi
check "infeasible exits 3 (got $rc)" test "$rc" -eq 3
check "feasible false" grep -q '"feasible": false' "$tmp/out"
check "why given" grep -q '"why": "shared memory' "$tmp/out"
"$bench" --device cuda --batch 4 --heads 64 --topk 512 --pool 65536 --samples 3 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "small run exits 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "check passed" grep -q '"check_passed": true' "$tmp/out"
# L2 holding clean lines (a read of another buffer after the memset) when each sample starts.
"$bench" --device cuda --batch 4 --heads 32 --topk 512 --pool 65536 --samples 3 --l2-flush clean >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--l2-flush clean run exits 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "--l2-flush clean check passed" grep -q '"check_passed": true' "$tmp/out"
check "--l2-flush clean reported" grep -q '"l2_flush": "clean"' "$tmp/out"
checks_done
