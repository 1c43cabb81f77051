#!/usr/bin/env bash
# Installs the Debian 12 packages abtrack needs to build and test. Sourced by demo.sh and
# test.sh; installs only what is missing. Not root: prints the exact apt-get line and stops.
abtrack_packages=(
  g++ cmake make ninja-build pkg-config git ca-certificates
  libgit2-dev libyaml-cpp-dev libfmt-dev doctest-dev nlohmann-json3-dev libkainjow-mustache-dev
  python3 python3-scipy python3-jsonschema hyperfine libbenchmark-dev bsdutils
  time clang-14 libfuzzer-14-dev clang-format-14
  slurmctld slurmd slurm-client munge
)

abtrack_install_deps() {
  local missing=() p
  for p in "${abtrack_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local line="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "abtrack: missing Debian packages: ${missing[*]}" >&2
    echo "abtrack: run as root:  $line" >&2
    exit 3
  fi
  echo "abtrack: installing ${missing[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "abtrack: apt-get failed; run: $line" >&2; exit 3; }
}

# Configures $1 (default build/) when it has no cache yet and builds the targets named after it
# (everything when none) with every core. -g1 (functions and line tables: what a backtrace or
# perf needs) instead of -g compiles in two thirds of the time, and a unity build (each
# library's sources compiled as a few merged files) in half the time again: these scripts build
# from scratch; an incremental build of your own needs neither.
abtrack_build() {
  local dir=${1:-build}
  shift || true
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
      -DCMAKE_UNITY_BUILD=ON >/dev/null || exit 3
  fi
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake --build "$dir" -j "$(nproc)" "${targets[@]}" || exit 3
}
