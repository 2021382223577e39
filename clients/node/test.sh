#!/usr/bin/env bash
# Runs the Node.js client's tests (node:test, no npm packages) against real
# snowidd nodes: SNOWIDD names the binary (ctest passes $<TARGET_FILE:snowidd>).
set -euo pipefail
cd "$(dirname "$0")"
: "${SNOWIDD:?set SNOWIDD to the snowidd binary, e.g. build/snowidd}"
export SNOWIDD
# One file at a time (each starts two snowidd nodes; CI has 2 cores).
for file in test/client.test.mjs test/answer.test.mjs test/hostile.test.mjs test/failover.test.mjs test/workers.test.mjs; do
  node --test "$file"
done
