#!/usr/bin/env bash
# The Java client's tests, offline, with Debian 12's Maven (pom.xml, debian-settings.xml):
#
#   1. `mvn -o install` into a temporary local repository: builds the client, runs every JUnit test
#      (against real snowidd nodes from $SNOWIDD, the hostile stand-in tests/support/hostile_node.py
#      under python3, and, for the documentation's code blocks, a throwaway PostgreSQL from
#      clients/testing/postgres.sh), and installs io.snowid:snowid-client into that repository;
#   2. checks the jar's manifest (version, Automatic-Module-Name);
#   3. a fresh Maven project in a temporary directory outside the tree, depending on the client by
#      its coordinates (the <dependency> block of clients/java/README.md) and requiring it as the
#      module io.snowid.client, is built offline and draws IDs from a live snowidd.
#
#   SNOWIDD=build/src/server/snowidd clients/java/test.sh
#   SNOWIDD=build/src/server/snowidd clients/java/test.sh --bench [SECONDS per measurement]
#
# Everything it builds and starts lives in a temporary directory, removed at the end; the processes
# it starts are stopped by their pids.
set -euo pipefail

: "${SNOWIDD:?set SNOWIDD to the snowidd binary (e.g. build/src/server/snowidd)}"
SNOWIDD=$(realpath "$SNOWIDD")
export SNOWIDD
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/snowid-client-java.XXXXXX")
node_pid=""
cleanup() {
  if [ -n "$node_pid" ]; then { kill -9 "$node_pid" && wait "$node_pid"; } 2>/dev/null || true; fi
  if declare -F postgres_stop >/dev/null; then postgres_stop || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mvn=(mvn -B -o -Dstyle.color=never -s "$here/debian-settings.xml" -Dmaven.repo.local="$work/m2")
build="$work/build"
started=$SECONDS

if [ "${1:-}" = --bench ]; then
  shift
  (cd "$here" && "${mvn[@]}" -q -Dsnowid.buildDirectory="$build" -DskipTests test-compile) >&2
  java -cp "$build/classes:$build/test-classes" io.snowid.client.ClientBench "$@"
  exit
fi

# 1. Build, every test, install.
. "$here/../testing/postgres.sh"
postgres_start "$work/pg"
echo "PostgreSQL on port $POSTGRES_PORT"
(cd "$here" && "${mvn[@]}" -Dsnowid.buildDirectory="$build" install)

# 2. The jar's manifest.
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' "$here/pom.xml" | head -1)
jar="$work/m2/io/snowid/snowid-client/$version/snowid-client-$version.jar"
manifest=$(python3 -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("META-INF/MANIFEST.MF").decode())' "$jar")
for line in "Automatic-Module-Name: io.snowid.client" "Implementation-Version: $version"; do
  grep -q "^$line" <<<"$manifest" || { echo "FAIL: no '$line' in $jar's manifest" >&2; exit 1; }
done
echo "installed $jar ($version, module io.snowid.client)"

# 3. A fresh project outside the tree, built offline against the installed client, draws IDs.
app="$work/app"
mkdir -p "$app/src/main/java/app"
dependency=$(python3 - "$here/README.md" <<'PY'
import re, sys
blocks = re.findall(r"```xml\n(.*?)```", open(sys.argv[1]).read(), re.S)
print(next(b for b in blocks if "<artifactId>snowid-client</artifactId>" in b))
PY
)
cat >"$app/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>app</artifactId>
  <version>1.0</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>17</maven.compiler.release>
  </properties>
  <dependencies>
$dependency
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-jar-plugin</artifactId><version>3.3.0</version></plugin>
    </plugins>
  </build>
</project>
POM
cat >"$app/src/main/java/module-info.java" <<'JAVA'
module app {
  requires io.snowid.client;
}
JAVA
cat >"$app/src/main/java/app/Main.java" <<'JAVA'
package app;

import io.snowid.client.SnowidClient;
import io.snowid.client.SnowidClientOptions;

public class Main {
  public static void main(String[] args) {
    try (SnowidClient client =
        SnowidClient.open(SnowidClientOptions.builder().endpoints(args[0]).build())) {
      long[] ids = new long[10_000];
      client.next(ids);
      for (int i = 1; i < ids.length; i++) {
        if (ids[i] <= ids[i - 1]) throw new IllegalStateException("not increasing at " + i);
      }
      String text = client.nextString();
      if (Long.parseLong(text) <= ids[ids.length - 1]) throw new IllegalStateException(text);
      System.out.println("drew " + ids.length + " IDs from " + ids[0] + ", then \"" + text + "\"");
    }
  }
}
JAVA
(cd "$app" && "${mvn[@]}" -q package)
mkdir -p "$work/node"
"$SNOWIDD" --http 127.0.0.1:0 --grpc off --state-dir "$work/node/state" --worker-id 9 \
  >"$work/node/log" 2>&1 &
node_pid=$!
for _ in $(seq 100); do
  port=$(grep -o ', http 127\.0\.0\.1:[0-9]*' "$work/node/log" | head -1 | sed 's/.*://') || true
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "${port:-}" ] || { cat "$work/node/log" >&2; echo "FAIL: snowidd did not start" >&2; exit 1; }
java -p "$app/target/app-1.0.jar:$jar" -m app/app.Main "http://127.0.0.1:$port"
echo "a fresh project built offline against io.snowid:snowid-client:$version drew IDs"
echo "clients/java/test.sh: passed in $((SECONDS - started)) s"
