#!/usr/bin/env bash
# Builds the Python client as a user does (an offline pip install into a
# fresh virtual environment that sees Debian's setuptools) and runs its
# tests (unittest) against real snowidd nodes from $SNOWIDD.
# Everything it writes goes to a temporary directory, removed at the end.
# $PYTHON: Debian 12's interpreter, whose setuptools and wheel the build uses
# (not a python3 found first on PATH, such as pyenv's).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
: "${SNOWIDD:?set SNOWIDD to a snowidd binary (ctest passes the one it built)}"
export SNOWIDD
python=${PYTHON:-/usr/bin/python3}

work=$(mktemp -d /tmp/snowid-python-client-XXXXXX)
trap 'rm -rf "$work"' EXIT
# A copy, so that setuptools' in-tree build files stay out of the source tree.
mkdir "$work/package"
cp -r "$here/pyproject.toml" "$here/README.md" "$here/src" "$work/package/"
"$python" -m venv --system-site-packages --without-pip "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-build-isolation --no-index "$work/package"

export PYTHONPYCACHEPREFIX="$work/pycache" PYTHONDONTWRITEBYTECODE=1
cd "$work"
"$work/venv/bin/python" -m unittest discover -s "$here/tests" -t "$here/tests" -v
