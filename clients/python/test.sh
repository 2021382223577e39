#!/usr/bin/env bash
# Builds the Python client's wheel as a user does (offline, Debian 12's
# /usr/bin/python3 with python3-build, python3-setuptools and
# python3-wheel), installs it into a virtual environment that also sees
# Debian's python3-django, python3-sqlalchemy and python3-psycopg2, starts
# a throwaway PostgreSQL (clients/testing/postgres.sh) for the framework
# examples, and runs the tests (unittest) against real snowidd nodes from
# $SNOWIDD. tests/test_install.py installs the same wheel into a fresh
# virtual environment of its own.
# Everything it writes goes to a temporary directory, removed at the end.
# $PYTHON: Debian 12's interpreter (not a python3 found first on PATH, such
# as pyenv's, which lacks Debian's packages).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${SNOWIDD:?set SNOWIDD to a snowidd binary (ctest passes the one it built)}"
export SNOWIDD
python=${PYTHON:-/usr/bin/python3}
started=$(date +%s)

work=$(mktemp -d /tmp/snowid-python-client-XXXXXX)
. "$repo/clients/testing/postgres.sh"
trap 'postgres_stop; rm -rf "$work"' EXIT

# The wheel, from a copy, so that setuptools' build files stay out of the
# source tree. python3-build when installed, else pip (the same setuptools).
mkdir "$work/package"
cp -r "$here/pyproject.toml" "$here/README.md" "$here/src" "$work/package/"
if "$python" -c 'import build' 2>/dev/null; then
  "$python" -m build --wheel --no-isolation --outdir "$work/dist" "$work/package" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
else
  "$python" -m pip wheel --no-build-isolation --no-index --no-deps --wheel-dir "$work/dist" \
    "$work/package" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
fi
CLIENT_WHEEL=$(ls "$work"/dist/snowid_client-*.whl)
# (Not SNOWID_*: snowidd reads those as its options.)
export CLIENT_WHEEL CLIENT_PYTHON=$python
echo "built $(basename "$CLIENT_WHEEL")"

"$python" -m venv --system-site-packages --without-pip "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-deps "$CLIENT_WHEEL"

postgres_start "$work/pg"
# libpq's own variables (the Django example reads them) and a URL (the
# SQLAlchemy one reads it).
export PGHOST=127.0.0.1 PGPORT=$POSTGRES_PORT PGUSER=postgres PGDATABASE=postgres
export DATABASE_URL=$POSTGRES_URL

export PYTHONPYCACHEPREFIX="$work/pycache" PYTHONDONTWRITEBYTECODE=1
cd "$work"
"$work/venv/bin/python" -m unittest discover -s "$here/tests" -t "$here/tests" -v
echo "clients/python/test.sh: $(( $(date +%s) - started )) s"
