#!/usr/bin/env bash
# What the takeover rule costs a start (docs/design.md, "A node never trusts
# a store's record to be current"): the time from starting snowidd to its
# first served ID, under node_id_policy = "require", on one local Redis, for
#   first:   the first claim of a cluster marked new to the store;
#   restart: a start after a clean stop (SIGTERM) of the id's last holder;
#   takeover: a start right after a kill -9 of the id's holder;
# with a 2 s lease and with the default 10 s one (3 tries each). Given two
# snowidd binaries (this build's and an earlier one's), both run in one
# pass, alternating, so that the machine's load falls on each alike.
# Everything stops by itself; loopback only.
# Usage: bench/takeover_cost.sh SNOWIDD [EARLIER_SNOWIDD]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
[[ $# -ge 1 ]] || { echo "usage: bench/takeover_cost.sh SNOWIDD [EARLIER_SNOWIDD]" >&2; exit 2; }
binaries=("$@")

redis_port=$(free_port)
mkdir -p "$bench_work/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$bench_work/redis" --save "" \
  --appendonly no --daemonize no --logfile "$bench_work/redis.log" &
bench_pids+=("$!")
for _ in $(seq 100); do redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done

now_ms() { date +%s%3N; }
# serve NAME BINARY FLAGS...: starts a node, waits for its first ID (30 s at
# most); sets served_ms to the ms from the start to it ("never" if none) and
# node_pid.
serve() {
  local name=$1 binary=$2 began port=""
  shift 2
  began=$(now_ms)
  "$binary" --http 127.0.0.1:0 --grpc 127.0.0.1:0 --state-dir "$bench_work/$name-state" \
    --coordinator redis --redis-endpoints "127.0.0.1:$redis_port" --worker-id 5 \
    --node-id-policy require --claim-timeout-ms 30000 "$@" >"$bench_work/$name.log" 2>&1 &
  node_pid=$!
  bench_pids+=("$node_pid")
  served_ms=never
  for _ in $(seq 1200); do
    port=$(grep -oP 'starting: .* http 127\.0\.0\.1:\K[0-9]+' "$bench_work/$name.log" || true)
    if [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/v1/id" >/dev/null 2>&1; then
      served_ms=$(($(now_ms) - began))
      return
    fi
    sleep 0.025
  done
  tail -3 "$bench_work/$name.log" >&2
}

machine_line
for ttl in 2 10; do
  echo "-- lease ${ttl} s: ms from start to the first ID (first claim, restart after SIGTERM, take-over after kill -9)"
  for try in 1 2 3; do
    for b in "${!binaries[@]}"; do
      binary=${binaries[$b]}
      cluster="c$ttl-$try-$b"
      # One cluster at a time: two of one layout in one store are refused.
      redis-cli -p "$redis_port" flushall >/dev/null
      redis-cli -p "$redis_port" set "snowid:{$cluster}:created" 0 >/dev/null
      flags=(--cluster "$cluster" --lease-ttl-s "$ttl")
      serve "$cluster-a" "$binary" "${flags[@]}"
      first=$served_ms
      kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true
      serve "$cluster-b" "$binary" "${flags[@]}"
      restart=$served_ms
      kill -9 "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true
      serve "$cluster-c" "$binary" "${flags[@]}"
      takeover=$served_ms
      kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true
      echo "$binary try $try: first $first, restart $restart, take-over $takeover"
    done
  done
done
