#!/usr/bin/env bash
# What cluster mode costs on the hot path: wrk against GET /v1/id on a
# static-mode snowidd and on an etcd-mode snowidd (one local etcd member),
# both running at once, in alternating rounds (A B B A ...) so that drift in
# the machine's load falls on both alike. The etcd node's work beyond the
# static node's is a lease keep-alive every ttl/3 and a reservation write
# about every 2 s, on a background thread; each request reads two atomics.
# Everything stops by itself.
# Usage: bench/cluster.sh [seconds per run, default 10] [rounds, default 4]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-4}
source bench/common.sh
ensure_packages wrk
build_release

etcd_client=$(free_port)
etcd_peer=$(free_port)
etcd --name bench --data-dir "$bench_work/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_client" \
  --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "bench=http://127.0.0.1:$etcd_peer" \
  --log-level warn --logger zap >"$bench_work/etcd.log" 2>&1 &
bench_pids+=("$!")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$etcd_client/health" >/dev/null && break
  sleep 0.1
done

start_snowidd static --io-threads 2
static_port=$snowidd_http_port
start_snowidd etcd --io-threads 2 --coordinator etcd --etcd-endpoints "127.0.0.1:$etcd_client" \
  --cluster bench
etcd_port=$snowidd_http_port
etcd_node_pid=$snowidd_pid

machine_line
echo "-- wrk -t2 -c64 -d${secs}s GET /v1/id, $rounds rounds of each mode"
run() {  # run MODE PORT: prints "MODE req/s"
  local rate
  rate=$(wrk -t2 -c64 -d"${secs}s" "http://127.0.0.1:$2/v1/id" | awk '/Requests\/sec/ {print $2}')
  echo "$1 $rate"
}
results="$bench_work/results"
for round in $(seq "$rounds"); do
  if ((round % 2)); then order="static etcd"; else order="etcd static"; fi
  for mode in $order; do
    if [[ $mode == static ]]; then run static "$static_port"; else run etcd "$etcd_port"; fi
  done | tee -a "$results"
done
awk '{sum[$1] += $2; n[$1]++}
     END {
       s = sum["static"] / n["static"]; e = sum["etcd"] / n["etcd"];
       printf "mean static %.0f req/s, etcd %.0f req/s: etcd mode at %.1f%% of static\n", s, e, 100 * e / s
     }' "$results"
echo "-- etcd node after the runs (must still hold its claim, no fencing):"
curl -s "http://127.0.0.1:$etcd_port/metrics" |
  grep -E '^snowid_cluster_(claim_held|fencing_events_total|reclaims_total)|^snowid_etcd_requests_total' || true
rss_of "$etcd_node_pid"
