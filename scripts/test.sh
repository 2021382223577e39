#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the
# whole test suite through ctest: once in the normal build (with the fault
# scenarios, label chaos), then again, without them, under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer; then runs every fuzz
# target for FUZZ_SECONDS (default here 20) seconds. Each phase prints its
# time.
#
# The two sanitizer builds start when the normal tests do, one after the
# other (ASan + UBSan first), under the idle scheduling class (chrt --idle):
# they take only the CPU time the tests leave unused (much of it: the tests
# wait on processes, sockets and timers), so the tests run as they would
# alone. The tests under ASan + UBSan and fuzzing (which needs only that
# build) run as soon as both it and the normal tests are done, while the
# TSan build goes on beside them the same way; the tests under TSan come
# last. Their log: build/sanitizer-builds.log.
#
# The normal pass records the fault scenarios' results and writes
# docs/reliability.md with that run's table to build/reliability.md
# (scripts/reliability-report.sh).
#
# Under CI (CI=true) a skipped test fails the run: a test that skips because
# something is missing fails by itself there (tests/support/missing.h), and
# any test ctest still reports as skipped in the normal pass (an add_test
# whose program exited with its SKIP_RETURN_CODE) is named and fails the
# run here. Elsewhere skipped tests are listed and the run goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
began=$SECONDS
phase_began=$SECONDS
phase() {  # ends the phase under way: phase NAME
  echo "== $1 took $((SECONDS - phase_began)) s (total $((SECONDS - began)) s)"
  phase_began=$SECONDS
}

scripts/install-deps.sh test
phase "installing"
# Tests and benchmarks on, even where scripts/run.sh configured build/ without.
scripts/build.sh -DSNOWID_BUILD_TESTS=ON -DSNOWID_BUILD_BENCH=ON
phase "the build"
results="$PWD/build/chaos-results.jsonl"
rm -f "$results"
sanitizer_builds_log="$PWD/build/sanitizer-builds.log"
asan_build_status="$PWD/build/sanitizer-build-asan.status"  # its exit code, once done
rm -f "$asan_build_status"
# setsid: its own process group, so that an early exit stops the whole build.
# shellcheck disable=SC2016  # expanded by the inner shell
setsid chrt --idle 0 bash -c 'scripts/sanitize.sh build asan; status=$?; echo "$status" >"$1"
  [ "$status" -eq 0 ] && exec scripts/sanitize.sh build tsan' sanitizer-builds "$asan_build_status" \
  >"$sanitizer_builds_log" 2>&1 &
sanitizer_builds=$!
trap 'kill -- -"$sanitizer_builds" 2>/dev/null || true' EXIT
ctest_log="$PWD/build/ctest.log"  # its output, kept to find the skipped tests in
echo 0 >"$ctest_log.status"
(cd build && SNOWID_CHAOS_REPORT="$results" ctest --output-on-failure --parallel "$(nproc)" \
  --timeout 600 --no-tests=error 2>&1 || echo "$?" >"$ctest_log.status") | tee "$ctest_log"
status=$(cat "$ctest_log.status")
# ctest lists them after its summary: "  123 - Name (Skipped)".
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$ctest_log")
if [ -n "$skipped" ]; then
  echo "skipped tests (their output, in $ctest_log, says what is missing):" >&2
  printf '  %s\n' $skipped >&2
  if [ "${CI:-}" = true ]; then
    echo "CI=true: a skipped test fails the run" >&2
    [ "$status" -ne 0 ] || status=1
  fi
fi
if [ -s "$results" ]; then scripts/reliability-report.sh "$results" build/reliability.md; fi
phase "the tests (the sanitizer builds under way beside them)"
[ "$status" -eq 0 ] || exit "$status"
sanitizer_build_failed() {
  tail -40 "$sanitizer_builds_log" >&2
  echo "the sanitizer builds failed: $sanitizer_builds_log" >&2
  exit 1
}
while [ ! -s "$asan_build_status" ] && kill -0 "$sanitizer_builds" 2>/dev/null; do sleep 2; done
[ "$(cat "$asan_build_status" 2>/dev/null)" = 0 ] || sanitizer_build_failed
phase "the rest of the ASan + UBSan build"
scripts/sanitize.sh test asan
phase "the tests under ASan + UBSan (the TSan build under way beside them)"
FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh
phase "fuzzing"
wait "$sanitizer_builds" || sanitizer_build_failed
trap - EXIT
phase "the rest of the TSan build"
scripts/sanitize.sh test tsan
phase "the tests under TSan"
