#!/usr/bin/env bash
# Soaks outside CI: 3 snowidd nodes (--nodes N) leasing node ids from a
# 3-member etcd or ZooKeeper ensemble, a Redis primary with 2 replicas and
# 3 Sentinels, a PostgreSQL primary with a synchronous and an asynchronous
# standby (failed over by pg_ctl promote, rejoined by pg_rewind), or a
# MariaDB primary with a semi-sync and an asynchronous replica (failed over
# by the harness, as an operator would), every process in a network
# namespace of its own, under a random fault schedule drawn from a seed,
# with clients drawing IDs from every node all along; then the checker over
# every answer
# (docs/reliability.md, "The nemesis"). Prints IDs drawn, faults by kind,
# duplicates and availability per fault kind; a failing run prints its
# seed, the schedule and the command that replays it.
#
#   scripts/nemesis.sh --store etcd|zookeeper|redis|postgres|mariadb --minutes M [--seed S] [--nodes N]
#
# Needs root (ip netns) and build/src/server/snowidd (or SNOWIDD=PATH).
# Any further option goes to tests/nemesis/run.py (--kinds, --keep, --verbose).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -eq 0 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
exec python3 tests/nemesis/run.py --snowidd "${SNOWIDD:-build/src/server/snowidd}" "$@"
