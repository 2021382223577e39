#!/usr/bin/env bash
# Builds the Java client and its tests (build.sh test) and runs them with JUnit 4 against real
# snowidd nodes and the hostile stand-in for one (tests/support/hostile_node.py, run with
# python3), or, with --bench, builds and runs the benchmark (bench.sh). The snowidd binary comes
# from $SNOWIDD (ctest passes its build of snowidd).
#
#   SNOWIDD=build/snowidd clients/java/test.sh
#   SNOWIDD=build/snowidd clients/java/test.sh --bench [SECONDS per measurement, default 3]
#
# Build outputs go to $BUILD_DIR (a temporary directory by default, removed afterwards).
set -euo pipefail

: "${SNOWIDD:?set SNOWIDD to the snowidd binary (e.g. build/snowidd)}"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${BUILD_DIR:-}" ]; then
  BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/snowid-client-java.XXXXXX")
  trap 'rm -rf "$BUILD_DIR"' EXIT
fi
export BUILD_DIR SNOWIDD
classes="$BUILD_DIR/classes:$BUILD_DIR/test-classes"

if [ "${1:-}" = --bench ]; then
  shift
  "$here/build.sh" bench >&2
  java -cp "$classes:$BUILD_DIR/bench-classes" io.snowid.client.ClientBench "$@"
  exit
fi
"$here/build.sh" test
java -cp "$classes:/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar" \
  -Dsnowid.hostileNode="$here/../../tests/support/hostile_node.py" \
  org.junit.runner.JUnitCore \
  io.snowid.client.RepliesTest \
  io.snowid.client.BatchOrderTest \
  io.snowid.client.HostileNodeTest \
  io.snowid.client.SnowidClientOptionsTest \
  io.snowid.client.SnowidClientTest
