#!/usr/bin/env bash
# One snowidd, every protocol, side by side in one run: HTTP GET /v1/id (wrk,
# 2 threads), gRPC unary NextId and StreamIds (`snowid bench grpc`), and
# Twitter's Thrift get_id (`snowid bench thrift`: the C++ client
# thrift-compiler generates, one thread and one call in flight per
# connection), each with the same number of requests in flight. The load
# tools share the 2 cores with snowidd. Unary NextId is also driven by h2load
# (nghttp2's C load tool, as light as wrk), so that the gRPC client's own
# cost does not hide the server's. Everything stops by itself.
# Usage: bench/protocols.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk nghttp2-client
build_release
thrift_port=$(free_port)
start_snowidd protocols --thrift "127.0.0.1:$thrift_port" --max-batch 10000
machine_line
printf '\0\0\0\0\0' >"$bench_work/empty-grpc-message"
cli=build-release/src/cli/snowid
grpc() { $cli bench grpc --target "127.0.0.1:$snowidd_grpc_port" --duration "$secs" --verify "$@"; }
for inflight in 16 64; do
  echo "-- $inflight requests in flight, ${secs}s each"
  echo "HTTP GET /v1/id ($inflight connections):"
  wrk -t2 -c"$inflight" -d"${secs}s" --latency "http://127.0.0.1:$snowidd_http_port/v1/id" |
    grep -E 'Requests/sec|^ +(50|99)%'
  echo "gRPC unary NextId ($inflight calls on 2 connections):"
  grpc --concurrency "$inflight" | grep -E 'calls/s|latency|verify'
  echo "gRPC unary NextId from h2load ($inflight streams on 2 connections):"
  # A unary call on the wire: an empty NextIdRequest behind gRPC's 5-byte
  # message prefix. h2load does not read grpc-status: the line above checks
  # that the calls succeed and their IDs are unique.
  h2load -D "$secs" -c 2 -m $((inflight / 2)) -t 1 -d "$bench_work/empty-grpc-message" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$snowidd_grpc_port/snowid.v1.IdService/NextId" | grep -E '^finished|^requests'
  echo "gRPC StreamIds, 1 ID per message ($inflight streams on 2 connections):"
  grpc --concurrency "$inflight" --stream --batch 1 | grep -E 'calls/s|latency|verify'
  echo "Thrift get_id ($inflight connections):"
  $cli bench thrift --port "$thrift_port" --connections "$inflight" --duration "$secs" --verify |
    grep -E 'calls/s|latency|verify'
done
echo "-- batches: IDs/s of NextIds(1000) and StreamIds(1000 per message), 4 in flight"
grpc --concurrency 4 --batch 1000 | grep -E 'IDs/s'
grpc --concurrency 4 --batch 1000 --stream | grep -E 'IDs/s'
stop_snowidd
