#!/usr/bin/env bash
# The Java client's benchmark (src/test/java/io/snowid/client/ClientBench.java) against snowidd
# nodes it starts from $SNOWIDD: the sustained rate of next() at default options against a plain
# in-process Snowflake generator, 1 and 4 threads, and their ratio (figures in
# docs/performance.md). Built offline with Maven (test.sh --bench).
#
#   SNOWIDD=build/src/server/snowidd clients/java/bench.sh [SECONDS per measurement, default 3]
set -euo pipefail
exec "$(dirname "$0")/test.sh" --bench "$@"
