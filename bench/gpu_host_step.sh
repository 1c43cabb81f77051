#!/usr/bin/env bash
# A step's cost on a GPU host (docs/PERFORMANCE.md, "On a GPU host"): `abtrack step` with a trivial command
# in a scratch repository, for one or more abtrack binaries interleaved round by round, then each
# NVML call the GPU fingerprint makes, timed on its own (python3 + ctypes).
#   bench/gpu_host_step.sh ROUNDS ABTRACK [ABTRACK...]     (prints "name microseconds" lines, then medians)
# A binary may be given with its loader: "/abs/ld-linux.so --library-path /abs/lib /abs/abtrack"
# (absolute paths: the steps run in a scratch repository).
set -euo pipefail
rounds="$1"; shift
bins=()
for b in "$@"; do if [ -f "$b" ]; then bins+=("$(realpath "$b")"); else bins+=("$b"); fi; done
set -- "${bins[@]}"
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 "$here/bench/make_history.py" "$work/repo" 0  # the benchmark's experiment, no runs yet
cd "$work/repo"
for b in "$@"; do $b -q step --cell variant=a,batch=1 >/dev/null 2>&1; done  # warm-up, and the baseline run
for _ in $(seq "$rounds"); do
  i=0
  for b in "$@"; do
    s=$(date +%s%N); $b -q step --cell variant=b,batch=1 >/dev/null 2>&1; e=$(date +%s%N)
    echo "binary$i $(( (e - s) / 1000 ))"; i=$((i + 1))
  done
done | tee "$work/times.txt"
python3 - "$work/times.txt" <<'P'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split(); d[k].append(int(v) / 1000)
for k, v in sorted(d.items()):
    r = [x / y for x, y in zip(v, d["binary0"])]
    print(f"{k}: median {statistics.median(v):.2f} ms (min {min(v):.2f}, max {max(v):.2f}); per round / binary0 {statistics.median(r):.3f}")
P
python3 - <<'P'
import ctypes, time
try:
    l = ctypes.CDLL("libnvidia-ml.so.1")
except OSError:
    raise SystemExit("no NVML on this machine")
def t(name, f, *a):
    t0 = time.perf_counter(); r = f(*a); print(f"{name:28s} {1e3 * (time.perf_counter() - t0):7.3f} ms rc {r}")
buf = ctypes.create_string_buffer(256); h = ctypes.c_void_p(); v = ctypes.c_uint(); n = ctypes.c_uint()
t("nvmlInit_v2", l.nvmlInit_v2)
t("DeviceGetCount_v2", l.nvmlDeviceGetCount_v2, ctypes.byref(n))
t("GetHandleByIndex_v2", l.nvmlDeviceGetHandleByIndex_v2, 0, ctypes.byref(h))
t("GetClockInfo SM", l.nvmlDeviceGetClockInfo, h, 1, ctypes.byref(v))
t("GetEnforcedPowerLimit", l.nvmlDeviceGetEnforcedPowerLimit, h, ctypes.byref(v))
t("GetTemperature", l.nvmlDeviceGetTemperature, h, 0, ctypes.byref(v))
t("nvmlShutdown", l.nvmlShutdown)
P
