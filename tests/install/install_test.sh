#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then a program outside the tree
# built against it twice: with find_package(snowid) (tests/install/consumer)
# and with pkg-config. Each must print three increasing IDs of node 3/7.
# Also checks that only the public headers (and include/snowid/ext/) are
# installed, each compiling alone against the installed tree, that
# snowid::core's link interface names no server-only library, and that the
# installed snowid::client links and answers without a node.
#   install_test.sh BUILD_DIR CXX_COMPILER
set -euo pipefail
build=$1
cxx=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_ids FILE: three lines "<id> 3/7", the IDs strictly increasing.
expect_ids() {
  local last=0 lines=0 id node
  while read -r id node; do
    [[ $id =~ ^[0-9]+$ ]] || fail "$1: not an ID: $id"
    [ "$node" = 3/7 ] || fail "$1: node $node, want 3/7"
    [ "$id" -gt "$last" ] || fail "$1: $id does not follow $last"
    last=$id
    lines=$((lines + 1))
  done <"$1"
  [ "$lines" -eq 3 ] || fail "$1: $lines lines, want 3"
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log"

# Exactly the public headers (snowid::core's and snowid::client's) and the
# extension headers of include/snowid/ext/; nothing internal (the leased
# coordinators, time_text.h, mac_pid.h, ...).
public_headers="client clock coordinator decode error generator id_encoding id_formats layout opaque_id segment_tag"
ext_headers="business_format segment segment_store"
expected=$( (for h in $public_headers; do echo "snowid/$h.h"; done
  for h in $ext_headers; do echo "snowid/ext/$h.h"; done) | sort)
installed_headers=$(cd "$prefix/include" && find . -type f | sed 's|^\./||' | sort)
[ "$installed_headers" = "$expected" ] ||
  fail "installed headers differ from the public API (< installed, > expected):
$(diff <(echo "$installed_headers") <(echo "$expected") | grep '^[<>]')"
# Each installed header includes only installed headers and compiles alone
# against the installed tree: a public header that includes an internal one
# breaks every consumer.
for header in $installed_headers; do
  while read -r included; do
    [ -f "$prefix/include/$included" ] || fail "$header includes $included, which is not installed"
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$prefix/include/$header")
  echo "#include \"$header\"" | "$cxx" -std=c++20 -fsyntax-only -Wall -Werror -I"$prefix/include" \
    -x c++ - 2>"$work/header.log" ||
    { cat "$work/header.log" >&2; fail "$header does not compile alone against the installed tree"; }
done
[ -x "$prefix/bin/snowid" ] && [ -x "$prefix/bin/snowidd" ] || fail "binaries not installed"
targets=$(find "$prefix" -name 'snowidTargets*.cmake')
[ -n "$targets" ] || fail "no snowidTargets.cmake"
# snowid::core's own block (snowid::client and snowid::proto link gRPC, as they must).
core_block=$(awk '/add_library\(snowid::core /{on=1} /# Create imported target/{if (on) exit} on' $targets)
[ -n "$core_block" ] || fail "no snowid::core in snowidTargets.cmake"
if grep -Eiq 'grpc|spdlog|boost|sqlite|libpq|hiredis|zookeeper|protobuf' <<<"$core_block"; then
  fail "snowid::core's interface names a server-only library: $(grep -Eio 'grpc|spdlog|boost|sqlite|libpq|hiredis|zookeeper|protobuf' <<<"$core_block" | sort -u | tr '\n' ' ')"
fi

# find_package(snowid CONFIG REQUIRED) + snowid::core.
cmake -S "$here/consumer" -B "$work/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; fail "the consumer does not configure"; }
cmake --build "$work/consumer" >"$work/build.log" ||
  { cat "$work/build.log"; fail "the consumer does not build"; }
"$work/consumer/app" >"$work/cmake-ids.txt"
expect_ids "$work/cmake-ids.txt"
echo "find_package: $(head -1 "$work/cmake-ids.txt")"
"$work/consumer/client_app" >"$work/client.txt" ||
  { cat "$work/client.txt"; fail "the installed snowid::client does not answer as it should"; }
echo "find_package snowid::client: $(cat "$work/client.txt")"

# The same program through pkg-config (a static library: --static).
pc_dir=$(dirname "$(find "$prefix" -name snowid.pc)")
[ "$(PKG_CONFIG_PATH=$pc_dir pkg-config --modversion snowid)" = "$(
  "$prefix/bin/snowid" --version | cut -d' ' -f2)" ] || fail "snowid.pc's version is not snowid's"
read -r -a flags <<<"$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --static --libs snowid)"
"$cxx" -std=c++20 "$here/consumer/main.cc" -o "$work/pkg-config-app" "${flags[@]}" ||
  fail "the consumer does not build with pkg-config's flags: ${flags[*]}"
"$work/pkg-config-app" >"$work/pkg-config-ids.txt"
expect_ids "$work/pkg-config-ids.txt"
echo "pkg-config: $(head -1 "$work/pkg-config-ids.txt")"
