#!/usr/bin/env bash
# Makes (once) a minimal Debian 12 root file system with mmdebstrap
# --variant=minbase and prints its folder on stdout. It has none of the
# build's packages: only Essential ones and apt, so glibc and libstdc++ but
# no gRPC, protobuf, abseil, OpenSSL dev files, ONNX Runtime or CUDA. The
# bundle test (tests/deploy/bundle_test.py) runs the unpacked bundle in it
# under chroot, as the runtime stage of deploy/docker/Dockerfile would.
#
# Cached in $ORTGPU_CACHE/rootfs/<key> (default ~/.cache/ortgpu), where <key>
# hashes everything that shapes the tree (suite, variant, mirror, this
# script), so a change makes a new one and an unchanged one is reused.
# Needs root (mmdebstrap's root mode) and the Debian mirror; exits 1 with the
# reason on stderr when it cannot make the tree.
#
#   scripts/debian_rootfs.sh   # -> ~/.cache/ortgpu/rootfs/bookworm-minbase-1a2b3c4d5e6f
set -euo pipefail
say() { echo "debian_rootfs: $*" >&2; }
SUITE=bookworm
VARIANT=minbase
MIRROR=${ORTGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${ORTGPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu}
key=$( (echo "$SUITE $VARIANT $MIRROR"; cat "$0") | sha256sum | cut -c1-12)
root="$cache/rootfs/$SUITE-$VARIANT-$key"
if [ -f "$root/.complete" ]; then echo "$root"; exit 0; fi

[ "$(id -u)" -eq 0 ] || { say "needs root (mmdebstrap's root mode and chroot); run as root"; exit 1; }
command -v mmdebstrap >/dev/null || { say "mmdebstrap is not installed; run: scripts/setup.sh (apt-get install mmdebstrap)"; exit 1; }
mkdir -p "$cache/rootfs"
stage=$(mktemp -d "$cache/rootfs/.stage.XXXX")
trap 'rm -rf "$stage"' EXIT
say "making a Debian $SUITE $VARIANT root in $root (once; about a minute)"
if ! mmdebstrap --quiet --mode=root --variant="$VARIANT" \
     "$SUITE" "$stage" "deb $MIRROR $SUITE main" >"$stage.log" 2>&1; then
  say "mmdebstrap failed (is $MIRROR reachable?); its last lines:"
  tail -5 "$stage.log" >&2
  rm -f "$stage.log"
  exit 1
fi
rm -f "$stage.log"
chmod 755 "$stage"
touch "$stage/.complete"
# Another run may have made it meanwhile: then its tree stays and this one goes.
mv -T "$stage" "$root" 2>/dev/null || rm -rf "$stage"
trap - EXIT
echo "$root"
