#!/usr/bin/env bash
# Twitter Snowflake's Thrift service on loopback, side by side in one run:
# `snowid bench thrift` (the C++ client thrift-compiler generates, one thread
# and one call in flight per connection) calling get_id, and wrk (2 threads)
# against GET /v1/id of the same snowidd, at 16 and 64 connections. Both load
# tools share the 2 cores with snowidd. Everything stops by itself.
# Usage: bench/thrift.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk
build_release
thrift_port=$(free_port)
start_snowidd thrift --thrift "127.0.0.1:$thrift_port"
machine_line
for conns in 16 64; do
  echo "-- $conns connections, ${secs}s"
  echo "Thrift get_id:"
  build-release/src/cli/snowid bench thrift --port "$thrift_port" --connections "$conns" \
    --duration "$secs" --verify | grep -E 'calls/s|latency|verify'
  echo "HTTP GET /v1/id:"
  wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$snowidd_http_port/v1/id" |
    grep -E 'Requests/sec|^ +(50|99)%'
done
stop_snowidd
