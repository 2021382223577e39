#!/usr/bin/env bash
# snowid::Client against one snowidd on loopback (bench/client_bench.cc):
# next() from the client's buffer at 1 and 2 threads, the same thread calling
# NextId itself, and an in-process Generator::next(). The layout has 16
# sequence bits (65.5 M IDs/s per node) so that the node's cap is not what is
# measured. Everything stops by itself.
# Usage: bench/client.sh [build directory, default build-release]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
build=${1:-build-release}
if [[ $build == build-release ]]; then
  scripts/install-deps.sh
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNOWID_BUILD_TESTS=OFF \
    -DSNOWID_WERROR=ON >/dev/null
fi
cmake --build "$build" --target snowidd snowid_client_bench >"$bench_work/build.log" 2>&1 ||
  { tail -40 "$bench_work/build.log" >&2; exit 1; }
SNOWIDD_BINARY=$build/src/server/snowidd start_snowidd client --max-batch 1000000 \
  --datacenter-bits 0 --worker-bits 6 --sequence-bits 16
machine_line
SNOWID_BENCH_GRPC=127.0.0.1:$snowidd_grpc_port "$build/bench/snowid_client_bench" \
  --benchmark_counters_tabular=true
stop_snowidd
