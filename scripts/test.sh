#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the
# whole test suite through ctest: once in the normal build (with the fault
# scenarios, label chaos), then again, without them, under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer; then runs every fuzz
# target for FUZZ_SECONDS (default here 20) seconds. Each phase prints its
# time.
#
# The two sanitizer builds start when the normal tests do, under the idle
# scheduling class (chrt --idle): they take only the CPU time the tests leave
# unused (much of it: the tests wait on processes, sockets and timers), so
# the tests run as they would alone. Their log: build/sanitizer-builds.log.
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
# setsid: its own process group, so that an early exit stops the whole build.
setsid chrt --idle 0 scripts/sanitize.sh build >"$sanitizer_builds_log" 2>&1 &
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
if ! wait "$sanitizer_builds"; then
  tail -40 "$sanitizer_builds_log" >&2
  echo "the sanitizer builds failed: $sanitizer_builds_log" >&2
  exit 1
fi
trap - EXIT
phase "the rest of the sanitizer builds"
scripts/sanitize.sh test
phase "the sanitizer tests"
FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh
phase "fuzzing"
