#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the
# whole test suite through ctest: once in the normal build, then again under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer;
# then runs every fuzz target for FUZZ_SECONDS (default here 30) seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 600)
scripts/sanitize.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/fuzz.sh
