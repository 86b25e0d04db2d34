#!/usr/bin/env bash
# Fetches one pinned npm package tarball and checks it against the sha512
# integrity npm publishes for it (`npm view PKG@VER dist.integrity`). Prints
# the verified tarball's path on stdout. Tarballs are cached in
# $ORTGPU_CACHE/tgz (default ~/.cache/ortgpu/tgz): once a tarball is there
# and verified, nothing is downloaded again. Shared by fetch_ort.sh and
# fetch_chartjs.sh, so there is one way the project takes code from npm.
#
#   scripts/npm_fetch.sh chart.js@4.5.1 sha512-...   # -> ~/.cache/ortgpu/tgz/chart.js-4.5.1.tgz
set -euo pipefail
say() { echo "npm_fetch: $*" >&2; }
[ $# -eq 2 ] || { say "usage: npm_fetch.sh NAME@VERSION sha512-INTEGRITY"; exit 2; }
spec=$1 want=$2
cache=${ORTGPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu}
name=${spec%@*}; ver=${spec##*@}; file="$cache/tgz/${name//\//-}-${ver}.tgz"
mkdir -p "$cache/tgz"
if [ ! -f "$file" ]; then
  command -v npm >/dev/null || { say "npm is needed to fetch $spec; run: apt-get install -y npm"; exit 1; }
  say "downloading $spec"
  tmp=$(mktemp -d "$cache/tgz/.dl.XXXX")
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null) || { rm -rf "$tmp"; say "npm pack $spec failed"; exit 1; }
  mv "$tmp"/*.tgz "$file.check" && rm -rf "$tmp"
fi
check=$file; [ -f "$file.check" ] && check=$file.check
got="sha512-$(openssl dgst -sha512 -binary "$check" | base64 -w0)"
if [ "$got" != "$want" ]; then
  rm -f "$check"
  say "integrity mismatch for $spec: got $got, pinned $want; the tarball was deleted, so a second run downloads it afresh; if it differs again, the registry (npm config get registry) is not serving the published package"
  exit 1
fi
[ "$check" = "$file" ] || mv "$check" "$file"
echo "$file"
