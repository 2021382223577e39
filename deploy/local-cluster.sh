#!/usr/bin/env bash
# Three snowidd nodes and a three-member etcd cluster on this machine, all on
# loopback: a place to watch cluster mode work (node ids claimed, fencing,
# take-over) before deploying it. Data lives in a temporary directory that is
# removed at exit.
#
#   deploy/local-cluster.sh           run until Ctrl-C, printing the endpoints
#   deploy/local-cluster.sh --smoke   check that the three nodes hold distinct
#                                     node ids and issue IDs, then stop
#
# Ports: etcd clients 23791-23793, etcd peers 23801-23803, snowidd HTTP
# 18081-18083 and gRPC 19091-19093 (override the bases with ETCD_CLIENT_BASE,
# ETCD_PEER_BASE, HTTP_BASE, GRPC_BASE). Needs etcd (Debian: etcd-server) and
# a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
snowidd=${SNOWIDD:-build/src/server/snowidd}
[ -x "$snowidd" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
command -v etcd >/dev/null || { echo "etcd is missing: apt-get install etcd-server" >&2; exit 2; }

client_base=${ETCD_CLIENT_BASE:-23790}
peer_base=${ETCD_PEER_BASE:-23800}
http_base=${HTTP_BASE:-18080}
grpc_base=${GRPC_BASE:-19090}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

initial=""
endpoints=""
for i in 1 2 3; do
  initial+="${initial:+,}m$i=http://127.0.0.1:$((peer_base + i))"
  endpoints+="${endpoints:+,}127.0.0.1:$((client_base + i))"
done
for i in 1 2 3; do
  etcd --name "m$i" --data-dir "$work/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$((client_base + i))" \
    --advertise-client-urls "http://127.0.0.1:$((client_base + i))" \
    --listen-peer-urls "http://127.0.0.1:$((peer_base + i))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((peer_base + i))" \
    --initial-cluster "$initial" --initial-cluster-state new \
    >"$work/etcd-$i.log" 2>&1 &
  pids+=($!)
done

# Every node is configured alike, as worker 0: etcd gives each its own id.
for i in 1 2 3; do
  "$snowidd" --coordinator etcd --etcd-endpoints "$endpoints" --cluster local \
    --worker-id 0 --http "127.0.0.1:$((http_base + i))" --grpc "127.0.0.1:$((grpc_base + i))" \
    --state-dir "$work/node-$i" >"$work/node-$i.log" 2>&1 &
  pids+=($!)
done

ready() { curl -sf "http://127.0.0.1:$((http_base + $1))/readyz" >/dev/null; }
for i in 1 2 3; do
  for _ in $(seq 150); do ready "$i" && break; sleep 0.2; done
  ready "$i" || { echo "node $i did not become ready:" >&2; cat "$work/node-$i.log" >&2; exit 1; }
done

echo "etcd members: $endpoints"
for i in 1 2 3; do
  node_id=$(curl -s "http://127.0.0.1:$((http_base + i))/v1/info" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["node_id"])')
  echo "node $i: http 127.0.0.1:$((http_base + i)), grpc 127.0.0.1:$((grpc_base + i)), node id $node_id"
  echo "$node_id" >>"$work/node-ids"
done

if [ "$mode" = "--smoke" ]; then
  [ "$(sort -u "$work/node-ids" | wc -l)" -eq 3 ] || { echo "node ids are not distinct" >&2; exit 1; }
  for i in 1 2 3; do
    curl -sf "http://127.0.0.1:$((http_base + i))/v1/ids?count=1000&format=text" >>"$work/ids"
  done
  total=$(wc -l <"$work/ids")
  distinct=$(sort -u "$work/ids" | wc -l)
  echo "IDs: $total issued, $distinct distinct"
  [ "$total" -eq 3000 ] && [ "$distinct" -eq 3000 ] || exit 1
  echo "smoke check passed"
  exit 0
fi
echo "try: curl -s 127.0.0.1:$((http_base + 1))/v1/id; Ctrl-C stops everything"
wait
