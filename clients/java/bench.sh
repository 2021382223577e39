#!/usr/bin/env bash
# The Java client's benchmark (bench/io/snowid/client/ClientBench.java) against a snowidd it starts
# from $SNOWIDD: next() from the buffer, the in-process floor and one HTTP round trip per ID, per
# thread (figures in docs/performance.md).
#
#   SNOWIDD=build/snowidd clients/java/bench.sh [SECONDS per measurement, default 3]
set -euo pipefail
exec "$(dirname "$0")/test.sh" --bench "$@"
