#!/usr/bin/env bash
# Can gRPC's async (completion-queue) API bring unary NextId near HTTP's
# request rate? One run, one server at a time, the same load tools as
# bench/protocols.sh at 64 requests in flight:
#   1. snowidd: HTTP GET /v1/id with wrk (2 threads, 64 connections), then
#      its gRPC NextId with h2load (64 streams on 2 connections);
#   2. bench/grpc_async_server.cc with --api async (one completion queue and
#      one polling thread per core), NextId with the same h2load;
#   3. the same program with --api callback (snowidd's API), the same h2load.
# Each bench server is first checked with `snowid bench grpc --verify` (its
# calls succeed, its IDs are unique), since h2load does not read grpc-status.
# Prints requests/s, the ratio to HTTP and the server's CPU time per request
# (from /proc, so the load tool's share of the 2 cores is not counted).
# Every server is stopped by its pid.
# Usage: bench/grpc_async.sh [seconds per run, default 10]
# SNOWID_BENCH_BUILD=build uses ./build (scripts/build.sh, RelWithDebInfo)
# instead of a Release build in ./build-release.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk nghttp2-client
build_dir=${SNOWID_BENCH_BUILD:-build-release}
if [[ $build_dir == build-release ]]; then
  build_release
else
  cmake --build "$build_dir" --target snowidd snowid snowid_grpc_async_server >"$bench_work/build.log" 2>&1 ||
    { tail -40 "$bench_work/build.log" >&2; exit 1; }
fi
SNOWIDD_BINARY="$build_dir/src/server/snowidd"
cli="$build_dir/src/cli/snowid"
bench_server="$build_dir/bench/snowid_grpc_async_server"
printf '\0\0\0\0\0' >"$bench_work/empty-grpc-message"

machine_line
echo "build: $build_dir ($(grep -m1 -oP 'CMAKE_BUILD_TYPE:STRING=\K.*' "$build_dir/CMakeCache.txt"))"
echo "lscpu: $(lscpu | grep 'Model name' | sed 's/  */ /g')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# CPU time of a process so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)
# cpu_per_request PID TICKS_BEFORE REQUESTS: microseconds of CPU per request.
cpu_per_request() {
  awk -v t="$(($(cpu_ticks "$1") - $2))" -v hz="$ticks_per_second" -v n="$3" \
    'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }'
}

# h2load_next_id PORT PID: unary NextId from h2load, 64 streams on 2
# connections, as bench/protocols.sh calls it. Sets rate and cpu_us.
h2load_next_id() {
  local before out done_requests
  before=$(cpu_ticks "$2")
  # A unary call on the wire: an empty NextIdRequest behind gRPC's 5-byte message prefix.
  out=$(h2load -D "$secs" -c 2 -m 32 -t 1 -d "$bench_work/empty-grpc-message" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$1/snowid.v1.IdService/NextId")
  echo "$out" | grep -E '^finished|^requests' | sed 's/^/    /'
  rate=$(echo "$out" | grep -oP '^finished in [0-9.]+s, \K[0-9.]+')
  done_requests=$(echo "$out" | grep -oP '^requests: .* \K[0-9]+(?= succeeded)')
  cpu_us=$(cpu_per_request "$2" "$before" "$done_requests")
}

# start_bench_server API: sets bench_server_pid and bench_server_port.
start_bench_server() {
  "$bench_server" --api "$1" --threads "$(nproc)" --port 0 >"$bench_work/$1.log" 2>&1 &
  bench_server_pid=$!
  bench_pids+=("$bench_server_pid")
  wait_for_line "$bench_work/$1.log" '^listening'
  bench_server_port=$(grep -oP '^listening 127\.0\.0\.1:\K[0-9]+' "$bench_work/$1.log")
}

stop_bench_server() {
  kill "$bench_server_pid" 2>/dev/null || true
  wait "$bench_server_pid" 2>/dev/null || true
}

# verify PORT: a second of NextId calls; fails unless all succeed with unique IDs.
verify() {
  local out
  out=$("$cli" bench grpc --target "127.0.0.1:$1" --duration 1 --concurrency 8 --verify)
  echo "$out" | grep -E '^calls|^verify' | sed 's/^/    /'
  echo "$out" | grep -qE '^calls .* ok, 0 failed' && echo "$out" | grep -qE '^verify +0 duplicate' ||
    { echo "NextId check failed on port $1" >&2; exit 1; }
}

echo "-- 64 requests in flight, ${secs}s each"
start_snowidd grpc-async
echo "snowidd HTTP GET /v1/id (wrk, 64 connections):"
before=$(cpu_ticks "$snowidd_pid")
wrk_out=$(wrk -t2 -c64 -d"${secs}s" "http://127.0.0.1:$snowidd_http_port/v1/id")
http_rate=$(echo "$wrk_out" | grep -oP '^Requests/sec: +\K[0-9.]+')
http_requests=$(echo "$wrk_out" | grep -oP '^ *\K[0-9]+(?= requests in)')
http_cpu=$(cpu_per_request "$snowidd_pid" "$before" "$http_requests")
echo "    $http_rate req/s"
echo "snowidd gRPC NextId (h2load, 64 streams on 2 connections):"
h2load_next_id "$snowidd_grpc_port" "$snowidd_pid"
snowidd_rate=$rate snowidd_cpu=$cpu_us
stop_snowidd

for api in async callback; do
  start_bench_server "$api"
  echo "bench server --api $api --threads $(nproc), pid $bench_server_pid:"
  verify "$bench_server_port"
  h2load_next_id "$bench_server_port" "$bench_server_pid"
  printf -v "${api}_rate" '%s' "$rate"
  printf -v "${api}_cpu" '%s' "$cpu_us"
  stop_bench_server
done

ratio() { awk -v a="$1" -v b="$http_rate" 'BEGIN { printf "%.2f", a / b }'; }
echo "-- summary (ratio: req/s over HTTP's; server CPU per request from /proc)"
printf '%-28s %12s %7s %14s\n' "server" "req/s" "ratio" "CPU us/req"
printf '%-28s %12.0f %7s %14s\n' "snowidd HTTP /v1/id" "$http_rate" "1.00" "$http_cpu"
printf '%-28s %12.0f %7s %14s\n' "snowidd gRPC (callback)" "$snowidd_rate" \
  "$(ratio "$snowidd_rate")" "$snowidd_cpu"
printf '%-28s %12.0f %7s %14s\n' "bench server, async API" "$async_rate" \
  "$(ratio "$async_rate")" "$async_cpu"
printf '%-28s %12.0f %7s %14s\n' "bench server, callback API" "$callback_rate" \
  "$(ratio "$callback_rate")" "$callback_cpu"
echo "async over callback: $(awk -v a="$async_rate" -v c="$callback_rate" 'BEGIN { printf "%.2f", a / c }')x"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
