# Shared by the bench/*.sh scripts (sourced, not run): a Release build in
# ./build-release, a snowidd on free loopback ports with a throw-away state
# directory, and clean-up of everything started, whatever happens.

build_release() {
  scripts/install-deps.sh
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNOWID_BUILD_TESTS=OFF \
    -DSNOWID_WERROR=ON >/dev/null
  cmake --build build-release --parallel "$(nproc)" >"$bench_work/build.log" 2>&1 ||
    { tail -40 "$bench_work/build.log" >&2; exit 1; }
}

bench_work=$(mktemp -d)
bench_pids=()
bench_cleanup() {
  for pid in "${bench_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 0.2
  rm -rf "$bench_work"
}
trap bench_cleanup EXIT

# ensure_packages PACKAGE...: installs those of Debian's packages not yet installed.
ensure_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p"; }
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

machine_line() {
  echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
}

# wait_for_line FILE PATTERN: waits up to 30 s for a line matching PATTERN
# (grep's) in FILE, such as a server's start-up line (a cluster node's comes
# after its takeover floor, lease_ttl + reserve_ahead after its claim).
wait_for_line() {
  for _ in $(seq 300); do
    grep -q "$2" "$1" 2>/dev/null && return
    sleep 0.1
  done
}

# start_snowidd NAME [snowidd flags...]: sets snowidd_pid, snowidd_http_port
# and snowidd_grpc_port. Prefix with `taskset -c N` via SNOWIDD_PREFIX to pin;
# SNOWIDD_BINARY names another build's snowidd.
start_snowidd() {
  local name=$1
  shift
  ${SNOWIDD_PREFIX:-} "${SNOWIDD_BINARY:-build-release/src/server/snowidd}" --http 127.0.0.1:0 --grpc 127.0.0.1:0 \
    --state-dir "$bench_work/$name-state" "$@" >"$bench_work/$name.log" 2>&1 &
  snowidd_pid=$!
  bench_pids+=("$snowidd_pid")
  wait_for_line "$bench_work/$name.log" 'grpc 127'
  snowidd_http_port=$(grep -oP 'http 127\.0\.0\.1:\K[0-9]+' "$bench_work/$name.log")
  snowidd_grpc_port=$(grep -oP 'grpc 127\.0\.0\.1:\K[0-9]+' "$bench_work/$name.log")
}

stop_snowidd() {
  kill "$snowidd_pid" 2>/dev/null || true
  wait "$snowidd_pid" 2>/dev/null || true
}

rss_of() { grep VmRSS "/proc/$1/status"; }
