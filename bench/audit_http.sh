#!/usr/bin/env bash
# The audit log's cost over HTTP, side by side in one run: wrk against
# snowidd with audit_log off, on, and on with audit_fsync, for GET /v1/id
# (one record and one write(2) per request) and GET /v1/ids?count=100 (one
# record per block of IDs). snowidd (2 I/O threads) and wrk (2 threads)
# share both cores; the audit log is a file on local disk. Then the size
# and metrics of the logs, and `snowid check --audit` over IDs fetched from
# an audited server. Everything stops by itself.
# Usage: bench/audit_http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
build_release
machine_line
echo "== load average before the runs: $(cut -d" " -f1-3 /proc/loadavg)"

run_mode() {
  local mode=$1 conns=$2
  local args=()
  case $mode in
    on) args=(--audit-log "$bench_work/$mode-$conns.audit") ;;
    fsync) args=(--audit-log "$bench_work/$mode-$conns.audit" --audit-fsync true) ;;
  esac
  start_snowidd "audit-$mode-$conns" --io-threads 2 "${args[@]}"
  for target in /v1/id "/v1/ids?count=100"; do
    echo "-- audit $mode, $conns connections, GET $target, ${secs}s"
    wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$snowidd_http_port$target" |
      grep -E 'Requests/sec|^ +(50|99)%'
  done
  if [[ $mode != off ]]; then
    echo "audit log: $(stat -c %s "$bench_work/$mode-$conns.audit") bytes"
    curl -s "127.0.0.1:$snowidd_http_port/metrics" | grep -E '^snowid_audit_'
  fi
  stop_snowidd
}

for conns in 16 64; do
  for mode in off on fsync; do run_mode "$mode" "$conns"; done
done

echo "-- snowid check --audit over IDs fetched from an audited server"
start_snowidd audit-check --audit-log "$bench_work/check.audit"
for _ in $(seq 200); do
  curl -s "127.0.0.1:$snowidd_http_port/v1/ids?count=10000&format=text"
done >"$bench_work/fetched.txt"
stop_snowidd
/usr/bin/time -f "%e s elapsed, %M KB max RSS" build-release/src/cli/snowid check \
  --audit "$bench_work/check.audit" "$bench_work/fetched.txt"
