#!/usr/bin/env bash
# What a fleet costs its store (docs/performance.md, "What a fleet costs its
# store"): runs snowid_fleet_bench once per store, each in its own process,
# which starts that store on free loopback ports (a 3-member etcd, a Redis
# primary with 2 replicas, a 3-server ZooKeeper ensemble, PostgreSQL,
# MariaDB), claims and renews the ladder of fleets against it and stops it
# by pid when it ends; `timeout` bounds each store's run. Prints each
# store's table, then one markdown table of every rung (also in
# $FLEET_OUT, default fleet-results.jsonl, one JSON object per rung).
# Usage: bench/fleet.sh [STORE...]   (default: all five)
# Environment: FLEET_NODES (10,100,300,1000,2000), FLEET_LEASE_TTL_S (10),
# FLEET_PERIODS (3), FLEET_NODE_BITS (12), FLEET_BUDGET_S (240 per store),
# FLEET_BENCH (build/bench/snowid_fleet_bench, built with
# -DSNOWID_BUILD_TESTS=ON -DSNOWID_BUILD_BENCH=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${FLEET_BENCH:-build/bench/snowid_fleet_bench}
[[ -x $bench ]] || { echo "fleet.sh: no $bench (ninja -C build snowid_fleet_bench)" >&2; exit 2; }
stores=("$@")
[[ ${#stores[@]} -gt 0 ]] || stores=(etcd redis zookeeper postgres mysql)
out=${FLEET_OUT:-fleet-results.jsonl}
budget=${FLEET_BUDGET_S:-240}
: >"$out"
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
status=0
for store in "${stores[@]}"; do
  log=$(mktemp)
  # The budget bounds the ladder; the last rung and the stores' start and
  # stop get 150 s more before timeout ends the run (SIGTERM, then SIGKILL).
  timeout -k 10 $((budget + 150)) "$bench" --store "$store" \
    --nodes "${FLEET_NODES:-10,100,300,1000,2000}" --lease-ttl-s "${FLEET_LEASE_TTL_S:-10}" \
    --periods "${FLEET_PERIODS:-3}" --node-bits "${FLEET_NODE_BITS:-12}" \
    --budget-s "$budget" 2>&1 | tee "$log" | grep --line-buffered -v '^RESULT ' || status=1
  sed -n 's/^RESULT //p' "$log" >>"$out"
  rm -f "$log"
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("\n| store | N | fleet claim (s) | claim p99 (ms) | renewals/s | store requests/s "
      "| renewal p50 (ms) | renewal p99 (ms) | store CPU idle / with fleet (% of a core) "
      "| CPU per node above idle (us/s) "
      "| store memory per node (KiB) | lost |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['store']} | {r['nodes']}{'' if r['claimed'] == r['nodes'] else ' (' + str(r['claimed']) + ' claimed)'} "
          f"| {r['fleet_claim_s']:.1f} | {r['claim_p99_ms']} | {r['renewals_per_s']:.0f} "
          f"| {r['store_requests_per_s']:.0f} | {r['renewal_p50_ms']} | {r['renewal_p99_ms']} "
          f"| {r['store_idle_cpu_pct']:.0f} / {r['store_cpu_pct']:.0f} | {r['store_cpu_us_per_node_s']:.0f} "
          f"| {r['store_pss_kib_per_node']:.0f} | {r['losses']} |")
PY
exit $status
