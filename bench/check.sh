#!/usr/bin/env bash
# `snowid check` end to end on generated IDs: N IDs from `snowid gen` (in
# increasing order, as one client receives them), the same IDs shuffled
# (the radix sort's worst case), and the same split into 4 named sources
# interleaved in one stream. Time and peak memory from /usr/bin/time.
# Usage: bench/check.sh [millions of IDs, default 50]
set -euo pipefail
cd "$(dirname "$0")/.."
millions=${1:-50}
n=$((millions * 1000000))
source bench/common.sh
build_release
machine_line
echo "== load average before the runs: $(cut -d" " -f1-3 /proc/loadavg)"
cli=build-release/src/cli/snowid
$cli gen -n "$n" >"$bench_work/sorted.txt"
shuf "$bench_work/sorted.txt" >"$bench_work/shuffled.txt"
awk '{ printf "client-%d\t%s\n", NR % 4, $0 }' "$bench_work/sorted.txt" >"$bench_work/named.txt"
for input in sorted shuffled named; do
  echo "-- $millions M IDs, $input ($(stat -c %s "$bench_work/$input.txt") bytes), 3 runs"
  for _ in 1 2 3; do
    /usr/bin/time -f "%e s elapsed, %U s user + %S s system CPU, %M KB max RSS" \
      $cli check "$bench_work/$input.txt" | head -1 || true  # shuffled: order violations
  done
done
