#!/usr/bin/env bash
# Runs the Node.js client's tests (node:test) against real snowidd nodes:
# SNOWIDD names the binary (ctest passes $<TARGET_FILE:snowidd>). Installs
# examples/'s npm packages (Knex, pg, TypeScript: the tests', never the
# client's) when its lock file is not the one installed, as
# scripts/install-deps.sh installs the RESP tests' ones, and starts a
# throwaway PostgreSQL for the Knex example (clients/testing/postgres.sh),
# stopped by its pid on exit.
set -euo pipefail
cd "$(dirname "$0")"
: "${SNOWIDD:?set SNOWIDD to the snowidd binary, e.g. build/src/server/snowidd}"
export SNOWIDD
started=$SECONDS

if ! cmp -s examples/package-lock.json examples/node_modules/.installed-lock; then
  echo "installing the npm packages of clients/node/examples"
  npm ci --prefix examples --no-audit --no-fund --loglevel=error
  cp examples/package-lock.json examples/node_modules/.installed-lock
fi

. ../testing/postgres.sh
work=$(mktemp -d)
CLIENT_PROJECT_DIR=
trap 'postgres_stop; rm -rf "$work" ${CLIENT_PROJECT_DIR:+"$CLIENT_PROJECT_DIR"}' EXIT
postgres_start "$work/pg"
export DATABASE_URL=$POSTGRES_URL
# The client packed and installed into a fresh project outside the tree,
# once for the tests that use it (package, docs).
CLIENT_PROJECT_DIR=$(node test/project.mjs)
export CLIENT_PROJECT_DIR

# One file at a time (each starts its own snowidd nodes; CI has 2 cores).
for file in answer client business hostile spread failover workers package docs; do
  node --test "test/$file.test.mjs"
done
echo "clients/node/test.sh: $((SECONDS - started)) s"
