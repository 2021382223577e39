#!/usr/bin/env bash
# The audit log's cost over HTTP, side by side in one run: wrk against
# snowidd with audit_log off, on, and on with audit_fsync, for GET /v1/id
# (one record and one write(2) per request) and GET /v1/ids?count=100 (one
# record per block of IDs). snowidd (2 I/O threads) and wrk (2 threads)
# share both cores; the audit log is a file on local disk. Besides wrk's
# figures, snowidd's CPU time per request (steadier than throughput when
# other jobs share the machine). Then the size and metrics of the logs, and
# `snowid check --audit` over IDs fetched from an audited server.
# Everything stops by itself.
# Usage: bench/audit_http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
build_release
machine_line
echo "== load average before the runs: $(cut -d" " -f1-3 /proc/loadavg)"

# User + system CPU time of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

run_mode() {
  local mode=$1 conns=$2
  local log="$bench_work/$mode-$conns.audit" args=()
  rm -f "$log"
  case $mode in
    on) args=(--audit-log "$log") ;;
    fsync) args=(--audit-log "$log" --audit-fsync true) ;;
  esac
  start_snowidd "audit-$mode-$conns" --io-threads 2 "${args[@]}"
  for target in /v1/id "/v1/ids?count=100"; do
    echo "-- audit $mode, $conns connections, GET $target, ${secs}s (load $(cut -d" " -f1 /proc/loadavg))"
    local before after out
    before=$(cpu_ticks "$snowidd_pid")
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$snowidd_http_port$target")
    after=$(cpu_ticks "$snowidd_pid")
    grep -E 'Requests/sec|^ +(50|99)%' <<<"$out"
    # snowidd's own CPU time per request: steadier than throughput on a shared machine.
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" \
      '/requests in/ { printf "snowidd CPU per request: %.1f us\n", ticks / hz * 1e6 / $1 }' <<<"$out"
  done
  if [[ $mode != off ]]; then
    echo "audit log: $(stat -c %s "$log") bytes"
    curl -s "127.0.0.1:$snowidd_http_port/metrics" | grep -E '^snowid_audit_'
  fi
  stop_snowidd
}

# Off and on alternate, twice, so that a change in the machine's load shows
# as a difference between rounds rather than between modes.
for conns in 16 64; do
  for round in 1 2; do
    for mode in off on; do run_mode "$mode" "$conns"; done
  done
  run_mode fsync "$conns"
done

echo "-- snowid check --audit over IDs fetched from an audited server"
start_snowidd audit-check --audit-log "$bench_work/check.audit"
for _ in $(seq 200); do
  curl -s "127.0.0.1:$snowidd_http_port/v1/ids?count=10000&format=text"
done >"$bench_work/fetched.txt"
stop_snowidd
/usr/bin/time -f "%e s elapsed, %M KB max RSS" build-release/src/cli/snowid check \
  --audit "$bench_work/check.audit" "$bench_work/fetched.txt"
