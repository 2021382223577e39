#!/usr/bin/env bash
# Business IDs over HTTP from one node, side by side with the plain segment
# numbers they are made from, on the same snowidd and its default store
# (SQLite in the state directory), in one run: wrk against
# GET /v1/business/{tag} and GET /v1/segment/{tag}, one per request and 100
# per request. Both tags have step 10,000 and are created through the
# service (POST /v1/tags: no token is configured, so any caller administers).
# Server (2 I/O threads) and wrk (2 threads) share both cores.
# Usage: bench/business_http.sh [seconds per run, default 10]
# SNOWIDD_BINARY=path skips the release build and runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk
[[ -n ${SNOWIDD_BINARY:-} ]] || build_release

machine_line
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start_snowidd business --io-threads 2
base="http://127.0.0.1:$snowidd_http_port"
curl -sf -X POST "$base/v1/tags" -d '{"tag": "plain", "step": 10000}' >/dev/null
curl -sf -X POST "$base/v1/tags" \
  -d '{"tag": "orders", "step": 10000, "template": "ORD-{yyyyMMdd}-{seq:08}"}' >/dev/null
run() {
  echo "-- GET $1, 64 connections, 2 wrk threads, ${secs}s"
  wrk -t2 -c64 -d"${secs}s" --latency "$base$1" | grep -E 'Requests/sec|^ +(50|99)%|Non-2xx'
}
for count in 1 100; do
  run "/v1/segment/plain?count=$count"
  run "/v1/business/orders?count=$count"
done
echo "-- business metrics after the runs"
curl -s "$base/metrics" | grep -E '^snowid_business_[a-z_]+\{tag="orders"'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
stop_snowidd
