#!/usr/bin/env bash
# Installs the Debian 12 packages snowid needs to build and test, skipping
# those already present. Safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libtomlplusplus-dev libboost-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libpq-dev postgresql
  libssl-dev openssl faketime curl etcd-server etcd-client slowhttptest
  libhiredis-dev redis-server redis-tools
  # Twitter Snowflake's Thrift service: the C++ library and compiler; the
  # Python client the tests generate with it, and Python's Redis client.
  libthrift-dev thrift-compiler python3-thrift python3-redis
  libzookeeper-mt-dev zookeeper
  # scripts/fuzz.sh: clang, libFuzzer (libclang_rt.fuzzer-x86_64.a; clang's
  # packages only recommend it) and llvm-symbolizer for readable crash reports.
  clang libclang-rt-14-dev llvm
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
