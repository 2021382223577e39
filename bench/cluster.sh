#!/usr/bin/env bash
# What cluster mode costs: wrk against GET /v1/id on a static-mode snowidd,
# an etcd-mode one (one local etcd member), a Redis-mode one (one local
# redis-server, append-only with fsync always) and a ZooKeeper-mode one (one
# local ZooKeeper server, tickTime 200 ms), all running at once, in rotating
# order round by round so that drift in the machine's load falls on each alike. A leased node's work beyond the static node's is a renewal every
# ttl/3 and a reservation write about every 2 s, on a background thread; each
# request reads two atomics. Then, per store: the claim time (start to the
# first served ID) and the take-over time (SIGKILL of a node holding id 5 to
# the first ID served by a successor requiring it; lease 2 s).
# Everything stops by itself.
# Usage: bench/cluster.sh [seconds per run, default 10] [rounds, default 4]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-4}
source bench/common.sh
ensure_packages wrk zookeeper
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
redis_port=$(free_port)
mkdir -p "$bench_work/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$bench_work/redis" --save "" \
  --appendonly yes --appendfsync always --daemonize no --logfile "$bench_work/redis.log" &
bench_pids+=("$!")
zookeeper_port=$(free_port)
mkdir -p "$bench_work/zookeeper"
printf '%s\n' tickTime=200 "dataDir=$bench_work/zookeeper" "clientPort=$zookeeper_port" \
  clientPortAddress=127.0.0.1 maxSessionTimeout=60000 admin.enableServer=false \
  4lw.commands.whitelist=srvr >"$bench_work/zoo.cfg"
java -Xmx192m -XX:+UseSerialGC -cp /usr/share/java/zookeeper.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$bench_work/zoo.cfg" \
  >"$bench_work/zookeeper.log" 2>&1 &
bench_pids+=("$!")
zookeeper_serves() {  # "srvr" answers with the server's mode once it serves
  { exec 3<>"/dev/tcp/127.0.0.1/$zookeeper_port"; } 2>/dev/null || return 1
  printf srvr >&3
  local answer
  answer=$(cat <&3)
  exec 3<&-
  [[ $answer == *Mode:* ]]
}
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$etcd_client/health" >/dev/null &&
    redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && zookeeper_serves && break
  sleep 0.1
done
# The bench clusters are new to Redis: no node needs to start ahead of the clock.
redis-cli -p "$redis_port" set 'snowid:{bench}:created' 0 >/dev/null
redis-cli -p "$redis_port" set 'snowid:{takeover}:created' 0 >/dev/null
for znode in /snowid /snowid/bench /snowid/bench/created /snowid/takeover /snowid/takeover/created; do
  value=""
  [[ $znode == */created ]] && value=0
  /usr/share/zookeeper/bin/zkCli.sh -server "127.0.0.1:$zookeeper_port" create "$znode" "$value" \
    >/dev/null 2>&1
done
zookeeper_flags="--coordinator zookeeper --zookeeper-endpoints 127.0.0.1:$zookeeper_port"
zookeeper_flags+=" --zookeeper-tick-ms 200"

# Clusters "bench" and "takeover" share each store and its layout on purpose.
declare -A store_flags=(
  [static]=""
  [etcd]="--coordinator etcd --etcd-endpoints 127.0.0.1:$etcd_client --share-id-space true"
  [redis]="--coordinator redis --redis-endpoints 127.0.0.1:$redis_port --share-id-space true"
  [zookeeper]="$zookeeper_flags --share-id-space true"
)
declare -A port_of pid_of
for mode in static etcd redis zookeeper; do
  # shellcheck disable=SC2086
  start_snowidd "$mode" --io-threads 2 ${store_flags[$mode]} $([[ $mode == static ]] || echo --cluster bench)
  port_of[$mode]=$snowidd_http_port
  pid_of[$mode]=$snowidd_pid
done

machine_line
echo "-- wrk -t2 -c64 -d${secs}s GET /v1/id, $rounds rounds of each mode"
run() {  # run MODE: prints "MODE req/s"
  local rate
  rate=$(wrk -t2 -c64 -d"${secs}s" "http://127.0.0.1:${port_of[$1]}/v1/id" |
    awk '/Requests\/sec/ {print $2}')
  echo "$1 $rate"
}
results="$bench_work/results"
orders=("static etcd redis zookeeper" "zookeeper static etcd redis"
  "redis zookeeper static etcd" "etcd redis zookeeper static")
for round in $(seq "$rounds"); do
  for mode in ${orders[$(((round - 1) % 4))]}; do run "$mode"; done | tee -a "$results"
done
awk '{sum[$1] += $2; n[$1]++}
     END {
       s = sum["static"] / n["static"]
       printf "mean static %.0f req/s", s
       split("etcd redis zookeeper", stores, " ")
       for (i = 1; i <= 3; i++) {
         m = sum[stores[i]] / n[stores[i]]
         printf ", %s %.0f (%.1f%% of static)", stores[i], m, 100 * m / s
       }
       printf "\n"
     }' "$results"
for mode in etcd redis zookeeper; do
  echo "-- $mode node after the runs (must still hold its claim, no fencing):"
  curl -s "http://127.0.0.1:${port_of[$mode]}/metrics" |
    grep -E '^snowid_cluster_(claim_held|fencing_events_total|reclaims_total)' || true
  rss_of "${pid_of[$mode]}"
done
for mode in static etcd redis zookeeper; do kill "${pid_of[$mode]}" 2>/dev/null || true; done

# ms since the epoch
now_ms() { date +%s%3N; }
# waits until the node started as NAME serves an ID; prints the ms waited since START
served_after() {
  local name=$1 start=$2 port=""
  for _ in $(seq 600); do
    port=$(grep -oP 'starting: .* http 127\.0\.0\.1:\K[0-9]+' "$bench_work/$name.log" 2>/dev/null || true)
    [[ -n $port ]] && break
    sleep 0.025
  done
  for _ in $(seq 400); do
    curl -sf "http://127.0.0.1:$port/v1/id" >/dev/null 2>&1 && { echo $(($(now_ms) - start)); return; }
    sleep 0.025
  done
  echo "never"
}
echo "-- claim and take-over times (lease 2 s, margin 500 ms), 3 tries per store"
for mode in etcd redis zookeeper; do
  for try in 1 2 3; do
    began=$(now_ms)
    # shellcheck disable=SC2086
    start_snowidd "$mode-holder-$try" ${store_flags[$mode]} --cluster takeover --worker-id 5 \
      --node-id-policy require --lease-ttl-s 2 --lease-safety-margin-ms 500
    claim=$(served_after "$mode-holder-$try" "$began")
    kill -9 "$snowidd_pid"
    killed=$(now_ms)
    # shellcheck disable=SC2086
    start_snowidd "$mode-successor-$try" ${store_flags[$mode]} --cluster takeover --worker-id 5 \
      --node-id-policy require --lease-ttl-s 2 --lease-safety-margin-ms 500 --claim-timeout-ms 10000
    takeover=$(served_after "$mode-successor-$try" "$killed")
    echo "$mode try $try: claim $claim ms, take-over $takeover ms"
    stop_snowidd
  done
done
