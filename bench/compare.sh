#!/usr/bin/env bash
# Two builds side by side in one run: this tree's Release build ("this") and
# another tree's ("other", say a worktree of the commit before a change), so
# that a refactor can show it costs nothing. In process (snowid_bench, the
# generator's hot path) and over HTTP (wrk against GET /v1/id and
# GET /v1/ids?count=100, and the gRPC load tool against NextId) and over the
# Redis protocol (redis-benchmark, 64 connections, without and with -P 16,
# against SNOWID.ID and INCR of a segment tag made by segment_auto_create),
# the two alternating round by round so that a noisy machine disturbs both
# alike. Loopback only; everything stops by itself.
# Usage: bench/compare.sh OTHER_TREE [seconds per run, default 5] [rounds, default 3]
#   OTHER_TREE must hold build-release/ with snowidd and snowid_bench built
#   (cmake -DCMAKE_BUILD_TYPE=Release -DSNOWID_BUILD_TESTS=OFF).
#   A RESP run takes about SECONDS at 60,000 requests/s (SECONDS * 60,000
#   requests without pipelining, ten times that with -P 16).
set -euo pipefail
cd "$(dirname "$0")/.."
other=${1:?usage: bench/compare.sh OTHER_TREE [seconds] [rounds]}
secs=${2:-5}
rounds=${3:-3}
source bench/common.sh
ensure_packages wrk redis-tools
build_release
for binary in build-release/src/server/snowidd build-release/bench/snowid_bench; do
  [[ -x $other/$binary ]] || { echo "missing $other/$binary" >&2; exit 2; }
done
machine_line
echo "this:  $(git rev-parse --short HEAD) ($PWD)"
echo "other: $(git -C "$other" rev-parse --short HEAD) ($other)"

# label_of TREE: "this" for this tree, "other" for the other.
label_of() {
  if [[ $1 == "$PWD" ]]; then echo this; else echo other; fi
}

# requests/s of wrk (2 threads, 64 connections) against URL.
wrk_rate() {
  wrk -t2 -c64 -d"${secs}s" "$1" | awk '/Requests\/sec/ {print $2}'
}

echo "== in process: snowid_bench (ns per ID; lower is better)"
filter='BM_RawThroughput|BM_Batch1000|BM_SingleThreadAtCap'
for round in $(seq "$rounds"); do
  for tree in "$PWD" "$other"; do
    label=$(label_of "$tree")
    "$tree/build-release/bench/snowid_bench" --benchmark_filter="$filter" \
      --benchmark_format=csv 2>/dev/null |
      awk -F, -v label="$label" -v round="$round" \
        'NR > 1 && $1 ~ /BM_/ {gsub(/"/, "", $1); printf "%s round %s %s %.2f ns\n", label, round, $1, $4}'
  done
done

echo "== over HTTP and gRPC (requests/s; higher is better)"
for round in $(seq "$rounds"); do
  for tree in "$PWD" "$other"; do
    label=$(label_of "$tree")
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

# resp_rate PORT PIPELINE COMMAND...: requests/s of redis-benchmark (2 threads,
# 64 connections) running COMMAND against PORT with PIPELINE requests in flight
# on each connection.
resp_rate() {
  local port=$1 pipeline=$2
  shift 2
  local n=$((secs * 60000))
  [ "$pipeline" -gt 1 ] && n=$((n * 10))
  timeout 120 redis-benchmark -p "$port" -c 64 -n "$n" -P "$pipeline" --threads 2 -q "$@" \
    2>/dev/null | tr '\r' '\n' | grep -oP '[0-9.]+(?= requests per second)' | tail -1 || true
}

# wait_for_resp PORT: waits up to 5 s for PONG on PORT.
wait_for_resp() {
  for _ in $(seq 50); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return
    sleep 0.1
  done
}

echo "== over RESP, 64 connections (requests/s; higher is better)"
for round in $(seq "$rounds"); do
  for tree in "$PWD" "$other"; do
    label=$(label_of "$tree")
    resp_port=$(free_port)
    SNOWIDD_BINARY=$tree/build-release/src/server/snowidd start_snowidd "$label-resp-$round" \
      --resp "127.0.0.1:$resp_port" --segment-auto-create true
    wait_for_resp "$resp_port"
    id=$(resp_rate "$resp_port" 1 SNOWID.ID)
    id_p=$(resp_rate "$resp_port" 16 SNOWID.ID)
    incr=$(resp_rate "$resp_port" 1 INCR ids)
    incr_p=$(resp_rate "$resp_port" 16 INCR ids)
    echo "$label round $round: SNOWID.ID ${id:-?}, SNOWID.ID -P 16 ${id_p:-?}," \
      "INCR ids ${incr:-?}, INCR ids -P 16 ${incr_p:-?}"
    stop_snowidd
  done
done
