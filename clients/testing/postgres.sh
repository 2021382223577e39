#!/usr/bin/env bash
# A throwaway PostgreSQL for the clients' framework examples (Django,
# SQLAlchemy, a Node ORM, JDBC): Debian's postgresql 15 binaries, a data
# directory under DIR, a free port on 127.0.0.1, trust authentication,
# fsync off. The caller sources it:
#
#   . clients/testing/postgres.sh
#   postgres_start "$work/pg"   # sets POSTGRES_URL, POSTGRES_PORT, POSTGRES_PID
#   ...                         # postgresql://postgres@127.0.0.1:PORT/postgres
#   postgres_stop               # stops it by its pid (also from an EXIT trap)
#
# initdb and the server refuse to run as root: as root the data directory
# goes to the postgres user (which Debian's postgresql package creates), and
# DIR's parent is made searchable by others (chmod o+x) so that it can
# reach it.
# Needs `scripts/install-deps.sh test` (postgresql).

POSTGRES_BIN=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

_postgres_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    /usr/sbin/runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# A TCP port on 127.0.0.1 that nothing listens on now.
_postgres_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

postgres_start() {  # postgres_start DIR
  local dir=$1
  if [ ! -x "$POSTGRES_BIN/initdb" ]; then
    echo "postgres.sh: $POSTGRES_BIN/initdb is missing: run scripts/install-deps.sh test" >&2
    return 1
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$dir"
    # The postgres user must reach DIR: a mktemp -d parent is 0700.
    chmod o+x "$(dirname "$dir")"
  fi
  _postgres_as_owner "$POSTGRES_BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  local attempt
  for attempt in 1 2 3; do
    POSTGRES_PORT=$(_postgres_free_port)
    if _postgres_as_owner "$POSTGRES_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $POSTGRES_PORT -k $dir -c listen_addresses=127.0.0.1 -c fsync=off \
          -c full_page_writes=off -c max_connections=60" start >/dev/null; then
      POSTGRES_PID=$(head -1 "$dir/data/postmaster.pid")
      POSTGRES_URL="postgresql://postgres@127.0.0.1:$POSTGRES_PORT/postgres"
      export POSTGRES_URL POSTGRES_PORT POSTGRES_PID
      return 0
    fi
    # The port may have been taken between the probe and the start.
    echo "postgres.sh: start on port $POSTGRES_PORT failed (attempt $attempt)" >&2
  done
  cat "$dir/server.log" >&2
  return 1
}

postgres_stop() {  # stops the server postgres_start started, by its pid
  [ -n "${POSTGRES_PID:-}" ] || return 0
  kill -TERM "$POSTGRES_PID" 2>/dev/null || true
  local waited=0
  while kill -0 "$POSTGRES_PID" 2>/dev/null && [ "$waited" -lt 100 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -KILL "$POSTGRES_PID" 2>/dev/null || true
  POSTGRES_PID=
}
