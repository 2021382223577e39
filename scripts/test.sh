#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the
# whole test suite through ctest: once in the normal build (with the fault
# scenarios, label chaos), then again, without them, under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer; then runs every fuzz
# target for FUZZ_SECONDS (default here 30) seconds. Each phase prints its
# time.
#
# The normal pass records the fault scenarios' results and writes
# docs/reliability.md with that run's table to build/reliability.md
# (scripts/reliability-report.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
began=$SECONDS
phase_began=$SECONDS
phase() {  # ends the phase under way: phase NAME
  echo "== $1 took $((SECONDS - phase_began)) s (total $((SECONDS - began)) s)"
  phase_began=$SECONDS
}

scripts/install-deps.sh
phase "installing"
scripts/build.sh
phase "the build"
results="$PWD/build/chaos-results.jsonl"
rm -f "$results"
status=0
(cd build && SNOWID_CHAOS_REPORT="$results" ctest --output-on-failure --parallel "$(nproc)" \
  --timeout 600) || status=$?
if [ -s "$results" ]; then scripts/reliability-report.sh "$results" build/reliability.md; fi
phase "the tests"
[ "$status" -eq 0 ] || exit "$status"
scripts/sanitize.sh
phase "the sanitizer builds and tests"
FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/fuzz.sh
phase "fuzzing"
