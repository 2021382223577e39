#!/usr/bin/env bash
# Configures and builds snowid in ./build (warnings are errors). Optimised,
# with line tables only (-g1): enough for stack traces, sanitizer reports
# and profiles, and a third quicker to compile than full debug information.
# The code of src/ compiles in batches of files (SNOWID_UNITY_BUILD, see
# CMakeLists.txt), as the sanitizer builds do.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DSNOWID_WERROR=ON -DSNOWID_UNITY_BUILD=ON "$@" >/dev/null
# SNOWID_BUILD_TARGET: build that target only (scripts/run.sh: snowidd);
# everything when unset.
cmake --build build --parallel "$(nproc)" ${SNOWID_BUILD_TARGET:+--target "$SNOWID_BUILD_TARGET"}
