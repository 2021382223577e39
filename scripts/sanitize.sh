#!/usr/bin/env bash
# Runs the test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (./build-asan: clang, built by scripts/asan-build.sh with the fuzz targets)
# and under ThreadSanitizer (./build-tsan: GCC), except the fault scenarios
# (label chaos): they are load and timing tests of whole processes, run in
# the normal build by scripts/test.sh, and are not built here; nor is the
# status page's test in headless Chromium (label browser), nor the language
# clients' tests (label clients: they test the clients' own code, once, in
# the normal pass). -O1 with line
# tables: reports keep file and line, and the builds take about half the
# time of -O2 with full debug information. Both builds batch the files of
# src/ (SNOWID_UNITY_BUILD) as the normal build does: for the
# AddressSanitizer build that takes a third less compiler time
# (docs/performance.md, "Build time").
#
#   scripts/sanitize.sh          builds both, then runs the tests in each
#   scripts/sanitize.sh build    only builds both (scripts/test.sh runs this
#                                beside the normal tests, at idle priority)
#   scripts/sanitize.sh test     only runs the tests of both builds
#   scripts/sanitize.sh build|test|all asan|tsan
#                                the same for one of them (scripts/test.sh
#                                runs the ASan + UBSan tests while the TSan
#                                build goes on)
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: scripts/sanitize.sh [build|test|all] [asan|tsan]" >&2
  exit 2
}
what=${1:-all}
which=${2:-both}
case $what in all | build | test) ;; *) usage ;; esac
case $which in both | asan | tsan) ;; *) usage ;; esac
[ $# -le 2 ] || usage

build_tsan() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSNOWID_WERROR=ON \
    -DSNOWID_BUILD_BENCH=OFF -DSNOWID_BUILD_CHAOS_TESTS=OFF -DSNOWID_SANITIZE=thread \
    -DSNOWID_UNITY_BUILD=ON >/dev/null
  cmake --build build-tsan --parallel "$(nproc)"
}

# Under ThreadSanitizer, the five tests that spend millions of iterations in
# one thread are left out: a race needs two threads, and they run in the
# normal pass and under ASan + UBSan. They were a fifth of the TSan pass.
single_threaded_loops='^(Cli\.GenAMillionOfEachFormattedKind|Cli\.GenFiveMillionDistinctIncreasing|'\
'FormattedIdTest\.AMillionOfEachKindStrictlyIncreaseThroughClockStepsBack|'\
'OpaqueIdsTest\.MillionsOfRandomValuesRoundTripWithoutCollisions|'\
'IdEncodingTest\.EveryValueRoundTripsAtItsFixedWidth)$'

tests() {  # runs ctest in build directory $1, leaving out the tests matching $2 (if given)
  (cd "$1" &&
    TSAN_OPTIONS="suppressions=$PWD/../tests/sanitizers/tsan.supp halt_on_error=1" \
    ctest --output-on-failure --parallel "$(nproc)" --timeout 900 --label-exclude 'chaos|browser|clients' \
      ${2:+--exclude-regex "$2"} --no-tests=error)
}

if [ "$what" != test ]; then
  if [ "$which" != tsan ]; then
    echo "== build under address;undefined (clang)"
    scripts/asan-build.sh
  fi
  if [ "$which" != asan ]; then
    echo "== build under thread (gcc)"
    build_tsan
  fi
fi
if [ "$what" != build ]; then
  if [ "$which" != tsan ]; then
    echo "== tests under address;undefined (clang)"
    tests build-asan
  fi
  if [ "$which" != asan ]; then
    echo "== tests under thread (gcc)"
    tests build-tsan "$single_threaded_loops"
  fi
fi
