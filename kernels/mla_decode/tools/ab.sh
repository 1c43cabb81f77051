#!/usr/bin/env bash
# Side-by-side A/B of kernel builds on a GPU machine: builds every variant, then runs the bench
# for every shape with the variants interleaved (variant order rotated each repetition), REPS
# times. Prints one line per run and writes ab.jsonl (each bench line with "variant" and "rep")
# and ab.txt to $OUT; at the end a summary against the first variant (tools/ab_summary.py: per
# shape and variant the median of the medians, their range, roofline_frac, the worst rel_err, and
# whether every repetition was below or above every one of the first variant's) to summary.txt.
# Usage (repository root): OUT=DIR bash kernels/mla_decode/tools/ab.sh REPS "SHAPE;SHAPE..." NAME=SRC[@FLAGS]...
#   SRC    a folder with the kernels/ CMake project (kernels, or an old tree exported with
#          `git archive REV kernels cmake | tar -x -C DIR`, then DIR/kernels)
#   FLAGS  extra CUDA compile flags, e.g. -DABTRACK_WGMMA_VOTE=0
#   SHAPE  bench arguments, e.g. "--batch 64 --heads 32" (given after CONFIG, so "--stages 1" in a
#          shape overrides CONFIG's; session 7's final grid had them the other way round and its
#          "--stages 1" row ran 2 stages)
# CONFIG (environment) defaults to the wgmma kernel: --math wgmma --warps 8 --tile 64 --stages 2.
# AB_TESTS="NAME..." runs the CUDA tests (ctest -R cuda) of those variants' builds before timing
# (ctest-NAME.log in $OUT). AB_PROBE=SECONDS runs each variant once first (below). AB_TIMEOUT (seconds, default 60) bounds each bench run and the tests: a
# variant that hangs costs that much device time, not the whole call.
set -u
reps="$1"; shapes="$2"; shift 2
out="${OUT:-/tmp/mla_ab}"
config="${CONFIG:---math wgmma --warps 8 --tile 64 --stages 2}"
mkdir -p "$out"
names=()
for spec in "$@"; do
  name="${spec%%=*}"; rest="${spec#*=}"
  src="${rest%%@*}"; flags=""
  [ "$rest" != "$src" ] && flags="${rest#*@}"
  names+=("$name")
  (cmake -S "$src" -B "build-ab-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_FLAGS=$flags" &&
   cmake --build "build-ab-$name" -j "$(nproc)") >"$out/build-$name.log" 2>&1 &
done
wait
for name in "${names[@]}"; do
  [ -x "build-ab-$name/kernels/mla_decode_bench" ] || { echo "build of $name failed:"; tail -20 "$out/build-$name.log"; exit 1; }
done
grep -h "Performance Loss\|is injected" "$out"/build-*.log | sort | uniq -c  # ptxas serializing wgmma
here="$(cd "$(dirname "$0")" && pwd)"
IFS=';' read -r -a shape_list <<<"$shapes"
# AB_PROBE=SECONDS: each variant runs the first shape once, that long at most, before the A/B;
# a variant without a result line (hung, crashed, refused) is left out of the A/B.
if [ -n "${AB_PROBE:-}" ]; then
  kept=()
  for name in "${names[@]}"; do
    # shellcheck disable=SC2086
    if timeout "$AB_PROBE" "build-ab-$name/kernels/mla_decode_bench" --device cuda $config ${shape_list[0]} --samples 3 >"$out/probe-$name.txt" 2>&1 &&
       tail -n 1 "$out/probe-$name.txt" | grep -q '"check_passed": *true'; then
      kept+=("$name")
    else
      echo "probe: $name left out (rc $?):"; tail -n 3 "$out/probe-$name.txt"
    fi
  done
  names=("${kept[@]}")
fi
for t in ${AB_TESTS:-}; do
  [[ " ${names[*]} " == *" $t "* ]] || continue  # left out by the probe
  (cd "build-ab-$t" && timeout "$((${AB_TIMEOUT:-60} * 5))" ctest --timeout "${AB_TIMEOUT:-60}" --output-on-failure -R cuda) >"$out/ctest-$t.log" 2>&1
  echo "tests of $t (rc $?):"; grep -E 'variants ran|tests passed|FAILED|CHECK' "$out/ctest-$t.log" | head -20
done
n=${#names[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for shape in "${shape_list[@]}"; do
    for ((k = 0; k < n; k++)); do
      name="${names[$(((k + rep - 1) % n))]}"
      # shellcheck disable=SC2086
      timeout "${AB_TIMEOUT:-60}" "build-ab-$name/kernels/mla_decode_bench" --device cuda $config $shape >"$out/last.txt" 2>>"$out/ab.log"
      tail -n 1 "$out/last.txt" | python3 "$here/ab_line.py" "$name" "$rep" "$shape" "$out/ab.jsonl" | tee -a "$out/ab.txt"
    done
  done
done
python3 "$here/ab_summary.py" "$out/ab.jsonl" | tee "$out/summary.txt"
