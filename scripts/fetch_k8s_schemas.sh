#!/usr/bin/env bash
# Installs the Kubernetes API schemas that tests/deploy/kubernetes_test.py
# validates deploy/kubernetes against: npm's kubernetes-models (validators
# generated from Kubernetes' OpenAPI document, every built-in kind) and
# @kubernetes-models/prometheus-operator (ServiceMonitor), with ajv for the
# KServe subset in tests/deploy/schemas/. Every package is pinned by the
# sha512 in tests/deploy/k8s_schemas/package-lock.json (npm ci checks each).
# Prints the node_modules folder on stdout; cached in
# $ORTGPU_CACHE/k8s-schemas-<hash of the lock> (default ~/.cache/ortgpu).
set -euo pipefail
say() { echo "fetch_k8s_schemas: $*" >&2; }
src=$(cd "$(dirname "$0")/../tests/deploy/k8s_schemas" && pwd)
cache=${ORTGPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu}
key=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
dir="$cache/k8s-schemas-$key"
if [ -f "$dir/.complete" ]; then echo "$dir/node_modules"; exit 0; fi
command -v npm >/dev/null || { say "npm is needed; run: apt-get install -y npm"; exit 1; }
mkdir -p "$cache"
stage=$(mktemp -d "$cache/.k8s-schemas.XXXX")
trap 'rm -rf "$stage"' EXIT
cp "$src/package.json" "$src/package-lock.json" "$stage/"
(cd "$stage" && npm ci --ignore-scripts --no-audit --no-fund --silent) >&2 ||
  { say "npm ci failed (is the npm registry reachable? npm config get registry)"; exit 1; }
touch "$stage/.complete"
# Another run may have installed it meanwhile: then its folder stays.
mv -T "$stage" "$dir" 2>/dev/null || rm -rf "$stage"
trap - EXIT
echo "$dir/node_modules"
