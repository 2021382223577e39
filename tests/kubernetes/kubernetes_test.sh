#!/usr/bin/env bash
# deploy/kubernetes/snowid.yaml: the Kubernetes API schemas and the
# manifest's cross-references (validate.mjs), then the configuration it gives
# snowidd through `snowidd --check-config`, with the pod's token file and
# hostname (snowid-1) stood in for. Label kubernetes.
#   kubernetes_test.sh SOURCE_DIR SNOWIDD
set -euo pipefail
# snowidd refuses unknown SNOWID_* variables: the test runner's own (such as
# SNOWID_CHAOS_REPORT from scripts/test.sh) are not meant for it.
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^SNOWID_' || true)
source_dir=$1
snowidd=$2
here=$source_dir/tests/kubernetes
if [ ! -d "$here/node_modules/kubernetes-models" ]; then
  echo "FAIL: no tests/kubernetes/node_modules: run scripts/install-deps.sh test" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for manifest in "$source_dir"/deploy/kubernetes/*.yaml; do
  node "$here/validate.mjs" "$manifest" "$work/snowid.toml"
  printf 'a-test-token\n' >"$work/token"
  # token_file is a path in the pod, the flag overrides it here; the hostname
  # is a pod's in a UTS namespace of its own (root), else ordinals are off.
  check=("$snowidd" --config "$work/snowid.toml" --token-file "$work/token" --check-config)
  if unshare --uts true 2>/dev/null; then
    check=(unshare --uts sh -c 'hostname snowid-1 && exec "$0" "$@"' "${check[@]}")
  else
    check+=(--node-id-from-hostname false)
  fi
  if ! "${check[@]}" >"$work/effective.toml" 2>"$work/check.log"; then
    cat "$work/check.log" >&2
    echo "FAIL: $manifest: snowidd --check-config rejects its configuration" >&2
    exit 1
  fi
  echo "$manifest: snowidd --check-config accepts its configuration"
done
