#!/usr/bin/env bash
# HTTP load on loopback, side by side in one run: wrk against snowidd's
# GET /v1/id and against nginx returning a fixed 200 (the practical ceiling of
# HTTP/1.1 on this machine), at the same connection counts; then the latency
# of both at about half of snowidd's throughput (wrk with a per-connection
# delay: rate = connections / (delay + latency)). Two placements:
#   shared  server (2 threads / 2 workers) and wrk (2 threads) on both cores
#   pinned  server (1 thread / 1 worker) on core 0, wrk (1 thread) on core 1
# Everything stops by itself.
# Usage: bench/http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source bench/common.sh
ensure_packages wrk nginx-light
build_release

# start_nginx NAME WORKERS: sets nginx_port; prefix with NGINX_PREFIX to pin.
start_nginx() {
  local dir="$bench_work/$1"
  mkdir -p "$dir"
  nginx_port=$(free_port)
  cat >"$dir/nginx.conf" <<CONF
worker_processes $2;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir;
  uwsgi_temp_path $dir; scgi_temp_path $dir;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { default_type application/json; return 200 '{"id":"2124008231138230272"}\n'; }
  }
}
CONF
  ${NGINX_PREFIX:-} nginx -c "$dir/nginx.conf" -p "$dir"
  sleep 0.3
  bench_pids+=("$(cat "$dir/nginx.pid")")
}

cat >"$bench_work/delay.lua" <<'LUA'
function delay() return 5 end
LUA

# run_placement NAME THREADS WRK_PREFIX
run_placement() {
  local name=$1 threads=$2 wrk_prefix=$3
  start_nginx "nginx-$name" "$threads"
  start_snowidd "$name" --io-threads "$threads"
  echo "== placement: $name"
  echo "-- snowidd resident memory after start"
  rss_of "$snowidd_pid"
  for conns in 16 64 256; do
    echo "-- $conns connections, $threads wrk threads, ${secs}s"
    echo "nginx fixed 200:"
    $wrk_prefix wrk -t"$threads" -c"$conns" -d"${secs}s" --latency \
      "http://127.0.0.1:$nginx_port/" | grep -E 'Requests/sec|^ +(50|99)%'
    echo "snowidd GET /v1/id:"
    $wrk_prefix wrk -t"$threads" -c"$conns" -d"${secs}s" --latency \
      "http://127.0.0.1:$snowidd_http_port/v1/id" | grep -E 'Requests/sec|^ +(50|99)%'
  done
  for target in "nginx http://127.0.0.1:$nginx_port/" \
                "snowidd http://127.0.0.1:$snowidd_http_port/v1/id"; do
    echo "-- ${target%% *} at about half load: 256 connections, each waiting 5 ms between requests"
    $wrk_prefix wrk -t"$threads" -c256 -d"${secs}s" --latency -s "$bench_work/delay.lua" \
      "${target#* }" | grep -E 'Requests/sec|^ +(50|75|90|99)%'
  done
  echo "-- snowidd resident memory after the runs"
  rss_of "$snowidd_pid"
  stop_snowidd
  kill "$(cat "$bench_work/nginx-$name/nginx.pid")"
}

machine_line
run_placement shared 2 ""
SNOWIDD_PREFIX="taskset -c 0" NGINX_PREFIX="taskset -c 0" run_placement pinned 1 "taskset -c 1"
