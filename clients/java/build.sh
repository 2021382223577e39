#!/usr/bin/env bash
# Builds the Java client with the JDK alone (javac, jar; Debian 12's openjdk-17-jdk-headless),
# offline, into a directory outside the source tree.
#
#   clients/java/build.sh [jar]   $BUILD_DIR/snowid-client.jar (the library)
#   clients/java/build.sh test    that, plus the test classes ($BUILD_DIR/test-classes; JUnit 4
#                                 and Hamcrest from Debian's junit4 package)
#   clients/java/build.sh bench   that, plus the benchmark ($BUILD_DIR/bench-classes)
#
# BUILD_DIR defaults to ${TMPDIR:-/tmp}/snowid-client-java. Warnings are errors.
set -euo pipefail

what=${1:-jar}
case $what in
  jar | test | bench) ;;
  *)
    echo "usage: clients/java/build.sh [jar|test|bench]" >&2
    exit 2
    ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-${TMPDIR:-/tmp}/snowid-client-java}
junit=/usr/share/java/junit4.jar
hamcrest=/usr/share/java/hamcrest-core.jar
javac_flags=(--release 17 -encoding UTF-8 -Xlint:all -Werror -g)

# compile OUT CLASSPATH SOURCES...: a fresh OUT from the sources.
compile() {
  local out=$1 classpath=$2
  shift 2
  rm -rf "$out"
  mkdir -p "$out"
  javac "${javac_flags[@]}" -cp "$classpath" -d "$out" "$@"
}

mapfile -t main_sources < <(find "$here/src/main/java" -name '*.java' | sort)
compile "$build/classes" "" "${main_sources[@]}"
jar --create --file "$build/snowid-client.jar" -C "$build/classes" .
echo "built $build/snowid-client.jar"

if [ "$what" = test ] || [ "$what" = bench ]; then
  for f in "$junit" "$hamcrest"; do
    [ -r "$f" ] || { echo "missing $f: scripts/install-deps.sh test (Debian's junit4)" >&2; exit 1; }
  done
  mapfile -t test_sources < <(find "$here/src/test/java" -name '*.java' | sort)
  compile "$build/test-classes" "$build/classes:$junit" "${test_sources[@]}"
  echo "built $build/test-classes"
fi
if [ "$what" = bench ]; then
  mapfile -t bench_sources < <(find "$here/bench" -name '*.java' | sort)
  compile "$build/bench-classes" "$build/classes:$build/test-classes" "${bench_sources[@]}"
  echo "built $build/bench-classes"
fi
