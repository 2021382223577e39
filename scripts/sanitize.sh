#!/usr/bin/env bash
# Builds the test suite under AddressSanitizer + UndefinedBehaviorSanitizer and
# under ThreadSanitizer (./build-asan, ./build-tsan) and runs it in both,
# except the fault scenarios (label chaos): they are load and timing tests of
# whole processes, run in the normal build by scripts/test.sh, and are not
# built here. -O1 with line tables: sanitizer reports keep file and line,
# and the builds take about half the time of -O2 with full debug information.
set -euo pipefail
cd "$(dirname "$0")/.."
for kind in asan tsan; do
  case $kind in
    asan) sanitizers="address;undefined" ;;
    tsan) sanitizers="thread" ;;
  esac
  echo "== tests under $sanitizers"
  cmake -S . -B "build-$kind" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSNOWID_WERROR=ON \
    -DSNOWID_BUILD_BENCH=OFF -DSNOWID_BUILD_CHAOS_TESTS=OFF "-DSNOWID_SANITIZE=$sanitizers" \
    >/dev/null
  cmake --build "build-$kind" --parallel "$(nproc)"
  (cd "build-$kind" &&
    TSAN_OPTIONS="suppressions=$PWD/../tests/sanitizers/tsan.supp halt_on_error=1" \
    ctest --output-on-failure --parallel "$(nproc)" --timeout 900 --label-exclude chaos)
done
