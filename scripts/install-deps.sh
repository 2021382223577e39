#!/usr/bin/env bash
# Installs the Debian 12 packages snowid needs, skipping those already
# present. Safe to run repeatedly.
#
#   scripts/install-deps.sh run    what building and running snowidd and the
#                                  snowid CLI need (scripts/run.sh)
#   scripts/install-deps.sh [test] that, plus the servers, clients and tools
#                                  the test suite, the sanitizer builds and the
#                                  fuzzers use (scripts/test.sh)
set -euo pipefail

what=${1:-test}
case $what in
  run | test) ;;
  *)
    echo "usage: scripts/install-deps.sh [run|test]" >&2
    exit 2
    ;;
esac

# The compiler, build tools and the -dev packages of every library snowid
# links (each pulls in its runtime library, e.g. libmariadb-dev libmariadb3);
# the Thrift and protobuf/gRPC compilers generate code at build time.
packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libtomlplusplus-dev libboost-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libsqlite3-dev libpq-dev libmariadb-dev libssl-dev libhiredis-dev libzookeeper-mt-dev
  libthrift-dev thrift-compiler
)
if [ "$what" = test ]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    # Real servers the tests start on loopback, and their clients.
    postgresql mariadb-server mariadb-client etcd-server etcd-client redis-server redis-tools
    zookeeper
    openssl faketime curl slowhttptest
    # The nemesis's network namespaces, links and neighbour entries (ip).
    iproute2
    # The status page's test loads it in headless Chromium.
    chromium
    # The Python clients the tests generate from Twitter's IDL (Thrift) and
    # Python's Redis client.
    python3-thrift python3-redis
    # clients/python: a wheel built offline (python3-build) into a venv with
    # Debian's setuptools; its Django and SQLAlchemy examples (psycopg2).
    python3 python3-venv python3-pip python3-setuptools python3-wheel python3-build
    python3-django python3-sqlalchemy python3-psycopg2
    # scripts/fuzz.sh: clang, libFuzzer (libclang_rt.fuzzer-x86_64.a; clang's
    # packages only recommend it) and llvm-symbolizer for readable crash reports.
    clang libclang-rt-14-dev llvm
    # The Debian package (scripts/package.sh) and its test: man pages from
    # --help, dpkg-shlibdeps for Depends, systemd-analyze verify on the unit
    # (which runs man to find the unit's Documentation=).
    help2man dpkg-dev systemd man-db
    # The Go client's toolchain (clients/go/test.sh), and lib/pq for its
    # database/sql example.
    golang-go golang-github-lib-pq-dev
    # SPIN, which checks the node-id take-over model (tests/model).
    spin
    # The Java client (clients/java): the JDK, Maven offline with Debian's
    # plugins and local repository, JUnit 4 with Hamcrest, and the JDBC
    # driver of its PostgreSQL example.
    openjdk-17-jdk-headless junit4 maven libmaven-resources-plugin-java
    libmaven-compiler-plugin-java libmaven-jar-plugin-java libmaven-install-plugin-java
    libsurefire-java libpostgresql-jdbc-java
  )
fi

# The Kubernetes manifest's check (tests/kubernetes) runs on Node.js, with
# npm's package of the Kubernetes API schemas (kubernetes-models) pinned by
# tests/kubernetes/package-lock.json, and so do the RESP tests' JavaScript
# Redis clients (tests/integration/resp_node/package-lock.json). The
# machine's own Node.js and npm when it has them, Debian's otherwise.
if [ "$what" = test ] && ! command -v npm >/dev/null; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm_ci DIR WHAT: installs DIR's npm packages from its package-lock.json,
# unless node_modules/.installed-lock says that lock file is installed already.
npm_ci() {
  if ! cmp -s "$1/package-lock.json" "$1/node_modules/.installed-lock"; then
    echo "installing the npm packages of $2"
    npm ci --prefix "$1" --no-audit --no-fund --loglevel=error
    cp "$1/package-lock.json" "$1/node_modules/.installed-lock"
  fi
}
if [ "$what" = test ]; then
  npm_ci "$(dirname "$0")/../tests/kubernetes" "the Kubernetes schema check"
  # The Node.js Redis clients (ioredis, node-redis) snowid_resp_tests runs.
  npm_ci "$(dirname "$0")/../tests/integration/resp_node" "the RESP tests' Node.js clients"
  npm_ci "$(dirname "$0")/../clients/node/examples" "the Node.js client's examples (Knex, pg, TypeScript)"
fi
