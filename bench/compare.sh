#!/usr/bin/env bash
# Two builds side by side in one run: this tree's Release build ("this") and
# another tree's ("other", say a worktree of the commit before a change), so
# that a refactor can show it costs nothing. In process (snowid_bench, the
# generator's hot path) and over HTTP (wrk against GET /v1/id and
# GET /v1/ids?count=100, and the gRPC load tool against NextId), the two
# alternating round by round so that a noisy machine disturbs both alike.
# Loopback only; everything stops by itself.
# Usage: bench/compare.sh OTHER_TREE [seconds per run, default 5] [rounds, default 3]
#   OTHER_TREE must hold build-release/ with snowidd and snowid_bench built
#   (cmake -DCMAKE_BUILD_TYPE=Release -DSNOWID_BUILD_TESTS=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
other=${1:?usage: bench/compare.sh OTHER_TREE [seconds] [rounds]}
secs=${2:-5}
rounds=${3:-3}
source bench/common.sh
ensure_packages wrk
build_release
for binary in build-release/src/server/snowidd build-release/bench/snowid_bench; do
  [[ -x $other/$binary ]] || { echo "missing $other/$binary" >&2; exit 2; }
done
machine_line
echo "this:  $(git rev-parse --short HEAD) ($PWD)"
echo "other: $(git -C "$other" rev-parse --short HEAD) ($other)"

# requests/s of wrk (2 threads, 64 connections) against URL.
wrk_rate() {
  wrk -t2 -c64 -d"${secs}s" "$1" | awk '/Requests\/sec/ {print $2}'
}

echo "== in process: snowid_bench (ns per ID; lower is better)"
filter='BM_RawThroughput|BM_Batch1000|BM_SingleThreadAtCap'
for round in $(seq "$rounds"); do
  for tree in "$PWD" "$other"; do
    label=$([[ $tree == "$PWD" ]] && echo this || echo other)
    "$tree/build-release/bench/snowid_bench" --benchmark_filter="$filter" \
      --benchmark_format=csv 2>/dev/null |
      awk -F, -v label="$label" -v round="$round" \
        'NR > 1 && $1 ~ /BM_/ {gsub(/"/, "", $1); printf "%s round %s %s %.2f ns\n", label, round, $1, $4}'
  done
done

echo "== over HTTP and gRPC (requests/s; higher is better)"
for round in $(seq "$rounds"); do
  for tree in "$PWD" "$other"; do
    label=$([[ $tree == "$PWD" ]] && echo this || echo other)
    SNOWIDD_BINARY=$tree/build-release/src/server/snowidd start_snowidd "$label-$round" \
      --segment-store off
    id=$(wrk_rate "http://127.0.0.1:$snowidd_http_port/v1/id")
    ids=$(wrk_rate "http://127.0.0.1:$snowidd_http_port/v1/ids?count=100")
    grpc=$(build-release/src/cli/snowid bench grpc --target "127.0.0.1:$snowidd_grpc_port" \
      --duration "$secs" --concurrency 64 2>&1 | grep -oP "[0-9.]+(?= calls/s)" | head -1 || true)
    echo "$label round $round: /v1/id $id, /v1/ids?count=100 $ids, gRPC NextId ${grpc:-?} calls/s"
    stop_snowidd
  done
done
