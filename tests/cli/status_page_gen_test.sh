#!/bin/sh
# snowid_status_page_gen GENERATOR: the policy it writes allows the page's
# inline style and script by their SHA-256 (checked against openssl), and it
# refuses, with exit 1 and a line naming the cause, a page whose markup the
# policy would block without a word.
set -eu
gen=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
hash() { printf '%s' "$1" | openssl dgst -sha256 -binary | base64; }

printf '<!DOCTYPE html><style>p{}</style><p>x</p><script>go()</script>\n' >"$dir/ok.html"
"$gen" "$dir/ok.html" "$dir/ok.h" || fail "a valid page was refused"
grep -qF "script-src 'sha256-$(hash 'go()')'" "$dir/ok.h" || fail "script hash: $(cat "$dir/ok.h")"
grep -qF "style-src 'sha256-$(hash 'p{}')'" "$dir/ok.h" || fail "style hash: $(cat "$dir/ok.h")"
grep -qF "default-src 'none'" "$dir/ok.h" || fail "no default-src 'none'"

refuse() {  # refuse NAME PAGE WORDS: the generator exits 1 saying WORDS
  printf '%s\n' "$2" >"$dir/$1.html"
  status=0
  "$gen" "$dir/$1.html" "$dir/$1.h" 2>"$dir/$1.err" || status=$?
  [ "$status" -eq 1 ] || fail "$1: exit $status, not 1"
  grep -qF "$3" "$dir/$1.err" || fail "$1: stderr does not say '$3': $(cat "$dir/$1.err")"
}
refuse style-attribute '<style></style><p style="color:red">x</p><script></script>' 'a style attribute'
refuse handler '<style></style><button onclick="go()">x</button><script></script>' 'a onclick attribute'
refuse two-scripts '<style></style><script>a()</script><script>b()</script>' 'exactly one <script>'
refuse external '<style></style><script src="x.js"></script>' 'exactly one <script>'
refuse delimiter '<style></style><script>")snowid_page"</script>' 'delimiter'
echo ok
