#!/usr/bin/env bash
# The Redis protocol on loopback, side by side in one run: redis-benchmark
# against redis-server's own INCR (what teams use for IDs today) and against
# snowidd's RESP listener (INCR of a segment tag, SNOWID.ID), at 1, 16 and 64
# connections, without and with pipelining (-P 16). redis-server is one
# thread; snowidd serves RESP on io_threads (2); redis-benchmark
# (2 threads) shares the same 2 cores. Everything stops by itself.
# Usage: bench/resp.sh [requests per run without pipelining, default 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-100000}
source bench/common.sh
ensure_packages redis-server redis-tools
build_release

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$bench_work" --daemonize no >"$bench_work/redis.log" 2>&1 &
bench_pids+=("$!")
resp_port=$(free_port)
start_snowidd resp --resp "127.0.0.1:$resp_port" --segment-auto-create true
for _ in $(seq 50); do
  redis-cli -p "$redis_port" PING >/dev/null 2>&1 && redis-cli -p "$resp_port" PING >/dev/null 2>&1 &&
    break
  sleep 0.1
done

# run LABEL PORT CONNECTIONS PIPELINE COMMAND...: one line, requests per second.
run() {
  local label=$1 port=$2 conns=$3 pipeline=$4
  shift 4
  local n=$requests
  [ "$pipeline" -gt 1 ] && n=$((requests * 10))
  printf '%-28s c=%-3s P=%-3s ' "$label" "$conns" "$pipeline"
  timeout 120 redis-benchmark -p "$port" -c "$conns" -n "$n" -P "$pipeline" --threads 2 -q "$@" \
    2>/dev/null | tr '\r' '\n' | grep -E 'requests per second' | tail -1
}

machine_line
for pipeline in 1 16; do
  for conns in 1 16 64; do
    run "redis-server INCR" "$redis_port" "$conns" "$pipeline" INCR ids
    run "snowidd INCR (segment)" "$resp_port" "$conns" "$pipeline" INCR ids
    run "snowidd SNOWID.ID" "$resp_port" "$conns" "$pipeline" SNOWID.ID
  done
done
echo "-- snowidd resident memory after the runs"
rss_of "$snowidd_pid"
stop_snowidd
