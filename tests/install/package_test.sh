#!/usr/bin/env bash
# The Debian package, built by scripts/package.sh and installed on this
# machine with dpkg (root only; skipped otherwise): its contents and control
# fields, /usr/bin/snowid and /usr/bin/snowidd --version, the packaged
# configuration through `snowidd --check-config` and serving an ID as the
# snowid user, the unit through
# `systemd-analyze verify` (which also finds its man page), the man pages and
# bash completion; then `dpkg -r` and `dpkg --purge` leave none of its files.
# The package is purged on every exit, failures included. A snowid package
# installed before the test is purged first.
#   package_test.sh SOURCE_DIR BUILD_DIR VERSION
set -euo pipefail
# snowidd refuses unknown SNOWID_* variables: the test runner's own (such as
# SNOWID_CHAOS_REPORT from scripts/test.sh) are not meant for it.
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^SNOWID_' || true)
source_dir=$1
build=$2
version=$3
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: dpkg -i needs root"
  exit 77
fi
work=$(mktemp -d)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
installed() { dpkg-query -W -f='${Status}' snowid 2>/dev/null | grep -q 'ok installed\|config-files'; }
# dpkg ARGS...: dpkg, waiting up to 2 minutes for its lock (apt may hold it).
run_dpkg() {
  local try
  for try in $(seq 24); do
    if dpkg "$@" >"$work/dpkg.log" 2>&1; then return 0; fi
    grep -q 'lock' "$work/dpkg.log" || break
    sleep 5
  done
  cat "$work/dpkg.log" >&2
  return 1
}
server=""
cleanup() {
  if [ -n "$server" ]; then kill -KILL "$server" 2>/dev/null || true; fi
  if installed; then run_dpkg --purge snowid || echo "could not purge snowid" >&2; fi
  rm -rf "$work"
}
trap cleanup EXIT
if installed; then
  echo "purging the snowid package installed before the test"
  run_dpkg --purge snowid
fi

deb=$("$source_dir/scripts/package.sh" "$build" "$work")
[ "$(basename "$deb")" = "snowid_${version}_amd64.deb" ] || fail "package named $deb"

# What it holds: the runtime files and nothing for developers.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' | grep -v '/$' | sort >"$work/files"
for file in /usr/bin/snowid /usr/bin/snowidd /usr/lib/systemd/system/snowidd.service \
  /etc/snowid/snowid.toml /usr/share/man/man1/snowid.1.gz /usr/share/man/man8/snowidd.8.gz \
  /usr/share/bash-completion/completions/snowid /usr/lib/sysusers.d/snowid.conf \
  /usr/share/doc/snowid/copyright; do
  grep -qx "$file" "$work/files" || fail "the package lacks $file"
done
if grep -E '/include/|\.a$|/cmake/|\.pc$' "$work/files"; then fail "development files in the package"; fi
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = snowid ] && [ "$(field Version)" = "$version" ] &&
  [ "$(field Architecture)" = amd64 ] || fail "control: $(dpkg-deb -f "$deb")"
[ -n "$(field Maintainer)" ] && [ -n "$(field Description)" ] || fail "no Maintainer or Description"
depends=$(field Depends)
# dpkg-shlibdeps: the runtime libraries, never a -dev package.
[[ $depends == *libc6* && $depends == *libgrpc* ]] || fail "Depends lacks the runtime libraries: $depends"
[[ $depends != *-dev* ]] || fail "Depends names a -dev package: $depends"
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/snowid/snowid.toml "$work/control/conffiles" || fail "snowid.toml is no conffile"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/snowid/copyright >"$work/copyright"
grep -qx 'License: Apache-2.0' "$work/copyright" || fail "copyright names no Apache-2.0"

run_dpkg -i "$deb" || fail "dpkg -i"
[ "$(/usr/bin/snowid --version)" = "snowid $version" ] || fail "snowid --version: $(/usr/bin/snowid --version)"
/usr/bin/snowidd --version | grep -qw "$version" || fail "snowidd --version: $(/usr/bin/snowidd --version)"
getent passwd snowid >/dev/null || fail "no snowid user"
/usr/bin/snowidd --config /etc/snowid/snowid.toml --check-config >"$work/effective.toml" ||
  fail "the packaged configuration does not check"
grep -qx 'state_dir = "/var/lib/snowid"' "$work/effective.toml" || fail "state_dir is not /var/lib/snowid"
# It serves as the snowid user, as the unit runs it (on free ports, its
# state in a directory of the test's): an ID over HTTP, then SIGTERM, exit 0.
chmod 755 "$work"
install -d -o snowid -g snowid -m 0750 "$work/state"
setpriv --reuid=snowid --regid=snowid --init-groups /usr/bin/snowidd --config /etc/snowid/snowid.toml --http 127.0.0.1:0 \
  --grpc 127.0.0.1:0 --state-dir "$work/state" >"$work/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 100); do
  port=$(grep -o 'http 127\.0\.0\.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2 || true)
  [ -n "$port" ] || ! kill -0 "$server" 2>/dev/null || { sleep 0.1; continue; }
  break
done
[ -n "$port" ] || { cat "$work/server.log" >&2; fail "snowidd did not start as snowid"; }
curl -fsS "http://127.0.0.1:$port/v1/id" | grep -q '"id":"[0-9]*"' || fail "no ID from the packaged snowidd"
kill -TERM "$server"
wait "$server" || { cat "$work/server.log" >&2; fail "snowidd did not stop cleanly on SIGTERM"; }
server=""
[ "$(stat -c %U "$work/state/generator.state")" = snowid ] || fail "the state file is not snowid's"
systemd-analyze verify /usr/lib/systemd/system/snowidd.service >"$work/verify.log" 2>&1 ||
  { cat "$work/verify.log" >&2; fail "systemd-analyze verify"; }
[ ! -s "$work/verify.log" ] || { cat "$work/verify.log" >&2; fail "systemd-analyze verify warns"; }
zcat /usr/share/man/man1/snowid.1.gz | grep -q '^\.TH SNOWID "1"' || fail "snowid(1) is no man page"
zcat /usr/share/man/man8/snowidd.8.gz | grep -q '^\.TH SNOWIDD "8"' || fail "snowidd(8) is no man page"

# The completion sources without a word on stderr, registers _snowid, and
# completes subcommands and options.
completion=/usr/share/bash-completion/completions/snowid
complete_words() {  # complete_words WORD...: what completing the last word offers
  bash -c 'set -eu; source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _snowid
    echo "${COMPREPLY[*]}"' "$completion" "$@"
}
[ -z "$(bash -c 'source "$0"' "$completion" 2>&1)" ] || fail "the completion prints when sourced"
bash -c 'source "$0"; complete -p snowid' "$completion" | grep -q -- '-F _snowid snowid' ||
  fail "the completion registers no function for snowid"
[ "$(complete_words snowid seg)" = segment ] || fail "snowid seg: $(complete_words snowid seg)"
[ "$(complete_words snowid segment cr)" = create ] || fail "snowid segment cr"
[ "$(complete_words snowid gen -n 5 --clock)" = --clock-policy ] || fail "snowid gen -n 5 --clock"

run_dpkg -r snowid || fail "dpkg -r"
[ ! -e /usr/bin/snowid ] && [ ! -e /usr/bin/snowidd ] || fail "dpkg -r left the binaries"
[ -e /etc/snowid/snowid.toml ] || fail "dpkg -r removed the conffile (only --purge should)"
run_dpkg --purge snowid || fail "dpkg --purge"
left=()
while read -r file; do [ ! -e "$file" ] || left+=("$file"); done <"$work/files"
[ ${#left[@]} -eq 0 ] || fail "left after --purge: ${left[*]}"
! installed || fail "dpkg still lists snowid"
echo "snowid_${version}_amd64.deb: installed, checked, removed and purged"
