#!/usr/bin/env bash
# Builds a Release tree in ./build-release and runs the benchmarks whose
# figures docs/performance.md records. Takes about a minute; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
build_release
machine_line
build-release/bench/snowid_bench "$@"
build-release/bench/snowid_segment_bench

echo "== snowid gen -n 10000000 > /dev/null (3 runs each)"
for policy in monotonic reject; do
  for _ in 1 2 3; do
    /usr/bin/time -f "policy=$policy %e s elapsed, %M KB max RSS" \
      build-release/src/cli/snowid gen -n 10000000 --clock-policy "$policy" >/dev/null
  done
done
for _ in 1 2 3; do
  /usr/bin/time -f "22 sequence bits (formatting bound): %e s elapsed" \
    build-release/src/cli/snowid gen -n 10000000 --sequence-bits 22 --worker-bits 0 \
    --datacenter-bits 0 >/dev/null
done
