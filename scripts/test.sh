#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Usage: scripts/test.sh [--full] [extra ctest arguments]
#   --full  also the reliability passes CI runs (.ci/run): the suite again with abtrack built
#           with AddressSanitizer + UBSan, and the libFuzzer targets (docs/RELIABILITY.md)
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
if [ "${1:-}" = "--full" ]; then full=1; shift; fi
part() { echo "test.sh: $1 done at $((SECONDS / 60)) min $((SECONDS % 60)) s" >&2; }
. scripts/deps.sh
abtrack_install_deps
part "packages"
abtrack_build build
part "build/"
# CI=true makes the scipy oracle test fail (not skip) when scipy is missing.
(cd build && CI=${CI:-true} ctest --output-on-failure -j "$(nproc)" "$@")
part "the suite"
[ "$full" = 1 ] || exit 0

# Reliability (docs/RELIABILITY.md). ABTRACK_CI_SANITIZE=0 / ABTRACK_CI_FUZZ=0 skip a part.
# One clang-14 build (build-asan/) with AddressSanitizer + UBSan and libFuzzer's coverage serves
# both parts: abtrack and the unit tests for the suite, the fuzz targets for fuzzing (the kernels
# are left out: their tests test CUDA/CPU kernels, not abtrack). It links Debian's shared libgit2
# and friends (ABTRACK_LINK_STATIC=OFF): tests/lsan.supp names those libraries, and the shared
# fallback gets tested too (build/ tests the static link). -O1 and line tables: stack traces
# name the line, and the build costs less; a unity build, as build/ (scripts/deps.sh).
targets=()
[ "${ABTRACK_CI_SANITIZE:-1}" != 0 ] && targets+=(abtrack abtrack_unit_tests)
[ "${ABTRACK_CI_FUZZ:-1}" != 0 ] && targets+=(fuzz_plan fuzz_metrics fuzz_regions)
[ ${#targets[@]} -gt 0 ] || exit 0
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DABTRACK_SANITIZE=ON -DABTRACK_ENABLE_FUZZ=ON \
  -DABTRACK_LINK_STATIC=OFF -DABTRACK_ENABLE_CUDA=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null || exit 3
cmake --build build-asan -j "$(nproc)" --target "${targets[@]}" || exit 3
part "build-asan/"
# 1. The unit and e2e tests again, under the sanitizers, but for the statistics' Monte-Carlo
#    simulations (pure arithmetic, run by the suite above; 4 minutes under the sanitizers) and the
#    format check (no abtrack code runs), and with 12 of the crash test's 40 kill points.
if [ "${ABTRACK_CI_SANITIZE:-1}" != 0 ]; then
  (cd build-asan &&
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 LSAN_OPTIONS=suppressions="$PWD/../tests/lsan.supp" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ABTRACK_E2E_RSS_LIMIT_MB=600 ABTRACK_E2E_KILLS=12 CI=${CI:-true} \
    ctest --output-on-failure -j "$(nproc)" -E '^kernels\.|^format$|simulated|A/A|reaches the fixed design' "$@")
  part "the suite under the sanitizers"
fi
# 2. The libFuzzer targets, each for ABTRACK_FUZZ_SECONDS (default 20) on a scratch copy of its
#    seed corpus; a crash, leak, sanitizer report or timeout fails CI.
if [ "${ABTRACK_CI_FUZZ:-1}" != 0 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  for t in plan metrics regions; do
    mkdir -p "$scratch/$t"
    build-asan/tests/fuzz/fuzz_$t -max_total_time="${ABTRACK_FUZZ_SECONDS:-20}" -timeout=10 -rss_limit_mb=1024 \
      -print_final_stats=1 -artifact_prefix="$scratch/" "$scratch/$t" tests/fuzz/corpus/$t >"$scratch/$t.log" 2>&1 || {
      tail -50 "$scratch/$t.log" >&2
      echo "abtrack: fuzz_$t failed; the input is in $scratch (kept)" >&2
      trap - EXIT
      exit 1
    }
    echo "fuzz_$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t.log") executions in ${ABTRACK_FUZZ_SECONDS:-20} s, no crash"
  done
  part "fuzzing"
fi
