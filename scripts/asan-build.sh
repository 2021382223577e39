#!/usr/bin/env bash
# Configures ./build-asan and builds TARGETS there (default: everything):
# clang, AddressSanitizer + UndefinedBehaviorSanitizer, warnings as errors,
# -O1 with line tables, the test suite without the fault scenarios, and the
# libFuzzer targets of tests/fuzz. One build serves both the sanitizer pass
# (scripts/sanitize.sh) and fuzzing (scripts/fuzz.sh): every object carries
# libFuzzer's coverage instrumentation, which the tests do not notice.
#
#   scripts/asan-build.sh             tests and fuzz targets
#   scripts/asan-build.sh fuzzers     the fuzz targets only
set -euo pipefail
cd "$(dirname "$0")/.."
# A build-asan/ configured with another compiler (GCC, before) starts afresh:
# CMake cannot switch a build directory's compiler in place.
if [ -f build-asan/CMakeCache.txt ] &&
    ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++$' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSNOWID_WERROR=ON \
  "-DSNOWID_SANITIZE=address;undefined" -DSNOWID_BUILD_FUZZERS=ON -DSNOWID_BUILD_BENCH=OFF \
  -DSNOWID_BUILD_CHAOS_TESTS=OFF -DSNOWID_UNITY_BUILD=ON >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build build-asan "${targets[@]}" --parallel "$(nproc)"
