#!/usr/bin/env bash
# Checks formatting and vet, then builds and runs the Go client's tests
# against real snowidd nodes, and its database/sql example against a
# throwaway PostgreSQL (clients/testing/postgres.sh; Debian's
# golang-github-lib-pq-dev for the driver). SNOWIDD names the snowidd binary
# (ctest passes the build's). Go writes its caches into a temporary
# directory removed at the end, never into the source tree, and downloads
# nothing: the module has no dependencies (GOPROXY=off).
#   SNOWIDD=/path/to/snowidd clients/go/test.sh
# SNOWID_GO_RACE=1 runs them once more under the race detector: about 30 s
# more, plus about 110 s to build the standard library for it on a fresh
# cache (Debian ships no race build of it), beyond the 90 s the client's
# tests may take in CI, so it is not the default.
set -euo pipefail
: "${SNOWIDD:?set SNOWIDD to a snowidd binary}"
SNOWIDD=$(realpath "$SNOWIDD")
export SNOWIDD
cd "$(dirname "$0")"
command -v go >/dev/null || {
  echo "clients/go/test.sh: go not found: scripts/install-deps.sh installs golang-go" >&2
  exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/snowid-go-test.XXXXXX")
. ../testing/postgres.sh
trap 'postgres_stop; rm -rf "$work"' EXIT
export GOCACHE=$work/cache GOPATH=$work/gopath GOTMPDIR=$work GOFLAGS=-mod=mod GOPROXY=off \
  GO111MODULE=on GOTOOLCHAIN=local CGO_ENABLED=1

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "clients/go/test.sh: not gofmt-formatted: $unformatted" >&2
  exit 1
fi
go vet ./...
postgres_start "$work/pg" # POSTGRES_URL, for snippets_test.go's database/sql example
go test -count=1 ./...
if [ "${SNOWID_GO_RACE:-0}" = 1 ]; then go test -count=1 -race ./...; fi
