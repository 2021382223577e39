#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, and
# issues IDs as worker 0 of datacenter 0 with its state in ./.snowid/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p .snowid
build/src/cli/snowid gen -n "${SNOWID_COUNT:-10}" --state-file .snowid/gen.state "$@"
