#!/usr/bin/env bash
# Builds the Debian package snowid_<version>_amd64.deb: snowid and snowidd,
# the systemd unit, /etc/snowid/snowid.toml (a conffile), the man pages and
# bash completion (cmake/Package.cmake). Needs help2man and dpkg-dev
# (scripts/install-deps.sh test installs them).
#
#   scripts/package.sh [BUILD_DIR [OUTPUT_DIR]]   default: build build
#
# BUILD_DIR is configured by scripts/build.sh when it does not exist yet;
# prints the path of the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
output=${2:-$build}
if [ ! -f "$build/CPackConfig.cmake" ]; then
  if [ "$build" != build ]; then
    echo "$build is not a configured snowid build" >&2
    exit 2
  fi
  scripts/build.sh
fi
command -v help2man >/dev/null || {
  echo "help2man is missing (the man pages): scripts/install-deps.sh test" >&2
  exit 1
}
# Configured again if help2man was installed since.
grep -q '^HELP2MAN:FILEPATH=/' "$build/CMakeCache.txt" || cmake "$build" >/dev/null
cmake --build "$build" --parallel "$(nproc)" \
  --target snowid snowidd snowid_man_pages snowid_bash_completion >/dev/null
mkdir -p "$output"
output=$(cd "$output" && pwd)
cpack --config "$build/CPackConfig.cmake" -B "$output" >"$output/cpack.log" 2>&1 ||
  { cat "$output/cpack.log" >&2; exit 1; }
rm -rf "$output/_CPack_Packages"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
deb=$output/snowid_${version}_amd64.deb
[ -f "$deb" ] || { echo "cpack made no $deb" >&2; exit 1; }
echo "$deb"
