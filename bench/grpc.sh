#!/usr/bin/env bash
# gRPC load on loopback with the project's own load tool (`snowid bench
# grpc`): unary NextId calls/s, then NextIds(1000) IDs/s, at several numbers
# of calls in flight, every ID checked for duplicates. The load tool runs on
# the same 2 cores as snowidd. Everything stops by itself.
# Usage: bench/grpc.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
build_release
start_snowidd grpc --max-batch 10000
machine_line
echo "-- snowidd resident memory after start"
rss_of "$snowidd_pid"
load() {
  build-release/src/cli/snowid bench grpc --target "127.0.0.1:$snowidd_grpc_port" \
    --duration "$secs" --verify "$@"
}
for inflight in 16 64 256; do
  echo "-- unary NextId, $inflight calls in flight on 2 connections"
  load --concurrency "$inflight"
done
for inflight in 4 16 64; do
  echo "-- NextIds(1000), $inflight calls in flight on 2 connections"
  load --concurrency "$inflight" --batch 1000
done
echo "-- snowidd resident memory after the runs"
rss_of "$snowidd_pid"
stop_snowidd

# The twitter layout caps a node at 4,096,000 IDs/s, so batches above hit the
# layout, not the transport. A 16-bit sequence (65.5 M IDs/s per node) shows
# what the gRPC path itself delivers.
start_snowidd grpc-wide --max-batch 10000 --datacenter-bits 0 --worker-bits 6 --sequence-bits 16
for inflight in 4 16; do
  echo "-- NextIds(1000), $inflight calls in flight, layout 41/0/6/16"
  load --concurrency "$inflight" --batch 1000
done
echo "-- NextIds(10000), 4 calls in flight, layout 41/0/6/16"
load --concurrency 4 --batch 10000
