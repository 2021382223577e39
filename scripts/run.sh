#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, and
# starts snowidd as worker 0 of datacenter 0 on 127.0.0.1:8080, with its state
# in ./.snowid/. Stop it with Ctrl-C (it writes its final state and exits 0).
# Extra arguments go to snowidd and win over everything, e.g. --http
# 127.0.0.1:0, --state-dir DIR or --config FILE (./.snowid is snowidd's own
# default state_dir, relative to the repository, where this script runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what building and running need: no test servers, no test libraries.
scripts/install-deps.sh run
# Builds snowidd alone (not the CLI, the client library or the tests), with
# the configure options of scripts/build.sh: SNOWID_BUILD_TARGET names it.
SNOWID_BUILD_TARGET=snowidd scripts/build.sh -DSNOWID_BUILD_TESTS=OFF -DSNOWID_BUILD_BENCH=OFF
exec build/src/server/snowidd "$@"
