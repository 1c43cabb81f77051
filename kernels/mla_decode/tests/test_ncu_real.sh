#!/usr/bin/env bash
# abtrack's `ncu:` metric source on real Nsight Compute output for the bench driver: the
# `occupancy` set of the mma.sync decode kernel at 4 and 8 warps, profiled by one extra
# invocation with --clock-control none. The counters must agree with what the CUDA runtime told
# the bench driver (registers per thread, CTAs per SM = the smallest occupancy limit), and a
# metric name ncu does not know is recorded with ncu's own message, the rest still measured.
# Usage: test_ncu_real.sh BENCH ABTRACK. Exit 77 (skip) without a GPU or without ncu.
set -u
bench=$(realpath "$1")
abtrack=$(realpath "$2")
. "$(dirname "$0")/checks.sh"
ncu=${ABTRACK_NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
if [ ! -x "$ncu" ]; then echo "skipped: no ncu on PATH or in /usr/local/cuda/bin"; exit 77; fi
"$bench" --device cuda --batch 2 --heads 32 --topk 512 --pool 65536 --samples 1 >"$tmp/probe" 2>"$tmp/err"
if [ $? -ne 0 ] && grep -q -e 'no CUDA device' -e 'cudaGetDeviceCount' -e 'not sm_90' "$tmp/err"; then
  echo "skipped: $(cat "$tmp/err")"
  exit 77
fi
repo="$tmp/repo"
git init -q -b main "$repo" && cd "$repo" || exit 1
git config user.name test && git config user.email test@localhost
cat >abtrack.yaml <<YAML
experiment: ncu
doc: AB.md
axes: {warps: [4, 8]}
baseline: {warps: 4}
command: $bench --device cuda --batch 16 --heads 32 --topk 2048 --pool 65536 --warps {warps} --stages 2 --tile 32 --samples 3
metrics:
  time_us: {json: samples_us, better: lower, unit: us}
  regs_per_thread: {json: regs_per_thread}
  ctas_per_sm: {json: ctas_per_sm}
  occ: {ncu: occupancy, kernel: decode_kernel}
  bogus: {ncu: not__a_real_metric.sum, kernel: decode_kernel}
YAML
"$abtrack" -q init
"$abtrack" run >"$tmp/out" 2>"$tmp/err"; rc=$?
check "run exits 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "two runs committed" test "$(git log --format=%s | grep -c '^abtrack(ncu): run ')" -eq 2
for n in 1 2; do
  rec=runs/ncu/000$n.json
  check "record $n has an ncu profile with --clock-control none" python3 -c "
import json, sys
d = json.load(open('$rec'))
p = d['profiles'][0]
assert '--clock-control none' in p['command'], p['command']
assert p['status'] in ('ok', 'incomplete'), p
assert p['duration_s'] > 0, p
assert any('decode_kernel' in k for k in p['kernels']), p['kernels']
"
  check "record $n: ncu's registers and binding limit equal the CUDA runtime's" python3 -c "
import json
m = json.load(open('$rec'))['metrics']
one = lambda k: m[k]['samples'][0]
assert one('occ_regs') == one('regs_per_thread'), (one('occ_regs'), one('regs_per_thread'))
limits = [one(k) for k in ('occ_limit_regs', 'occ_limit_smem', 'occ_limit_warps', 'occ_limit_blocks')]
assert min(limits) == one('ctas_per_sm'), (limits, one('ctas_per_sm'))
assert 0 < one('occ_achieved') <= 100 and 0 < one('occ_dram') <= 100, (one('occ_achieved'), one('occ_dram'))
"
  check "record $n: the unknown metric is left out, ncu's message kept" python3 -c "
import json
d = json.load(open('$rec'))
assert 'bogus' not in d['metrics'] or not d['metrics']['bogus']['samples'], d['metrics'].get('bogus')
p = d['profiles'][0]
assert p['status'] == 'incomplete' and 'not__a_real_metric' in p['message'], (p['status'], p['message'])
"
done
check "the run warns about the metric ncu did not measure" grep -q "not__a_real_metric" "$tmp/err"
checks_done
