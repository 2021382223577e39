#!/usr/bin/env bash
# HTTP load on segment mode: wrk against snowidd's GET /v1/segment/{tag} (one
# number per request, and batches of 100), with GET /v1/id on the same server
# as the reference, on loopback. The tag is made with the CLI in the server's
# default store (SQLite in its state directory) with the CLI's default step
# (1000), so the dynamic step's ramp is part of the run. After the runs,
# /metrics tells how many requests waited for the database.
# Server (2 I/O threads) and wrk (2 threads) share both cores.
# Usage: bench/segment_http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk
build_release

state="$bench_work/segment-state"
mkdir -p "$state"
build-release/src/cli/snowid segment create bench --segment-store "sqlite://$state/segments.db" \
  --description "bench/segment_http.sh"

machine_line
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start_snowidd segment --io-threads 2
base="http://127.0.0.1:$snowidd_http_port"
echo "-- snowidd resident memory after start"
rss_of "$snowidd_pid"
for conns in 16 64 256; do
  echo "-- GET /v1/segment/bench, $conns connections, 2 wrk threads, ${secs}s"
  wrk -t2 -c"$conns" -d"${secs}s" --latency "$base/v1/segment/bench" |
    grep -E 'Requests/sec|^ +(50|99)%|Non-2xx'
done
echo "-- GET /v1/segment/bench?count=100, 64 connections, ${secs}s"
wrk -t2 -c64 -d"${secs}s" --latency "$base/v1/segment/bench?count=100" |
  grep -E 'Requests/sec|^ +(50|99)%|Non-2xx'
echo "-- reference: GET /v1/id, 64 connections, ${secs}s"
wrk -t2 -c64 -d"${secs}s" --latency "$base/v1/id" | grep -E 'Requests/sec|^ +(50|99)%|Non-2xx'
echo "-- segment metrics after the runs"
curl -s "$base/metrics" | grep -E '^snowid_segment_[a-z_]+\{tag="bench"\}'
echo "-- snowidd resident memory after the runs"
rss_of "$snowidd_pid"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
stop_snowidd
