#!/usr/bin/env bash
# HTTP load on loopback, side by side in one run: wrk against snowidd's
# GET /v1/id and against nginx returning a fixed 200 (the practical ceiling of
# HTTP/1.1 on this machine), at the same connection count; then the latency of
# snowidd at about half of its measured throughput (wrk with a per-connection
# delay: rate = connections / delay). Everything stops by itself.
# Usage: bench/http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
scripts/install-deps.sh
for p in wrk nginx-light; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p"; }
done
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNOWID_BUILD_TESTS=OFF \
  -DSNOWID_WERROR=ON >/dev/null
cmake --build build-release --parallel "$(nproc)" >/dev/null

work=$(mktemp -d)
cleanup() {
  [ -n "${snowidd_pid:-}" ] && kill "$snowidd_pid" 2>/dev/null || true
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  sleep 0.2; rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

build-release/src/server/snowidd --http 127.0.0.1:0 --state-dir "$work/state" --io-threads 2 \
  > "$work/snowidd.log" 2>&1 &
snowidd_pid=$!
sleep 0.5
snowid_port=$(grep -oP 'http 127\.0\.0\.1:\K[0-9]+' "$work/snowidd.log")

nginx_port=$(free_port)
mkdir -p "$work/nginx"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { default_type application/json; return 200 '{"id":"2124008231138230272"}\n'; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
sleep 0.3

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for conns in 16 64 256; do
  echo "-- $conns connections, 2 wrk threads, ${secs}s"
  echo "nginx fixed 200:"
  wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$nginx_port/" | grep -E 'Requests/sec|^ +(50|99)%'
  echo "snowidd GET /v1/id:"
  wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$snowid_port/v1/id" | grep -E 'Requests/sec|^ +(50|99)%'
done

echo "-- snowidd at about half load: 256 connections, each waiting 5 ms between requests"
cat > "$work/delay.lua" <<'LUA'
function delay() return 5 end
LUA
wrk -t2 -c256 -d"${secs}s" --latency -s "$work/delay.lua" "http://127.0.0.1:$snowid_port/v1/id" |
  grep -E 'Requests/sec|^ +(50|75|90|99)%'

echo "-- snowidd resident memory"
grep VmRSS "/proc/$snowidd_pid/status"
