#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
abtrack_install_deps
abtrack_build build
cd build
# CI=true makes the scipy oracle test fail (not skip) when scipy is missing.
CI=${CI:-true} ctest --output-on-failure -j "$(nproc)" "$@"
