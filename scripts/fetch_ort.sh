#!/usr/bin/env bash
# Fetches ONNX Runtime 1.29.0 from the npm registry, checks each package against
# the integrity hash pinned below, and lays it out as an official release would:
#   $ORTGPU_CACHE/ort-1.29.0/{include,lib,LICENSE}
# LICENSE is ONNX Runtime's licence; lib/ holds libonnxruntime.so.1 (CUDA-capable host build) and the CUDA 13 /
# cuDNN 9 execution provider libraries. Prints the folder on stdout.
#
#   scripts/fetch_ort.sh            # download once, reuse the cache after
#   ORT_ROOT=/opt/onnxruntime ...   # an official release: checked, not downloaded
set -euo pipefail
ORT_VERSION=1.29.0
cache=${ORTGPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu}
say() { echo "fetch_ort: $*" >&2; }

if [ -n "${ORT_ROOT:-}" ]; then
  for f in include/onnxruntime_cxx_api.h lib/libonnxruntime.so.1; do
    [ -e "$ORT_ROOT/$f" ] || { say "ORT_ROOT=$ORT_ROOT has no $f; an official release has include/ and lib/"; exit 1; }
  done
  echo "$ORT_ROOT"; exit 0
fi

# package spec | sha512 integrity as npm publishes it
PKGS=(
  "onnxruntime-node@1.29.0|sha512-WjiVVB72riILz8HbYvxvmjKyE/WmkYoSfKY++axo5jAR609HQg8MwiG/HhShpTcJfmmAdzxxmB+MMST3A+SiPA=="
  "com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9|sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w=="
  "com.github.asus4.onnxruntime@0.4.9|sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jXah8OYyJbCN29Fg=="
)
root="$cache/ort-$ORT_VERSION"
LAYOUT="layout 3"  # bump when the set of extracted files changes
if [ -f "$root/.complete" ] && grep -qx "$LAYOUT" "$root/.complete"; then echo "$root"; exit 0; fi
command -v npm >/dev/null || { say "npm is needed to fetch ONNX Runtime; run: apt-get install -y npm (or set ORT_ROOT)"; exit 1; }
# spec|integrity -> verified tarball path (downloaded once, then cached)
tgz_of() { "$(dirname "$0")/npm_fetch.sh" "${1%%|*}" "${1#*|}"; }
host=$(tgz_of "${PKGS[0]}"); gpu=$(tgz_of "${PKGS[1]}"); hdr=$(tgz_of "${PKGS[2]}")
stage=$(mktemp -d "$cache/.stage.XXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/include" "$stage/lib"
tar --no-same-owner -xzf "$host" -C "$stage" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
mv "$stage/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$stage/lib/"
tar --no-same-owner -xzf "$gpu" -C "$stage" package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so \
  package/Plugins/Linux/x64/libonnxruntime_providers_shared.so package/Plugins/Linux/x64/libonnxruntime_providers_tensorrt.so
mv "$stage"/package/Plugins/Linux/x64/*.so "$stage/lib/"
# ONNX Runtime's MIT licence (Microsoft's), shipped in the bundle's LICENSES/.
tar --no-same-owner -xzf "$gpu" -C "$stage" package/LICENSE
mv "$stage/package/LICENSE" "$stage/LICENSE"
hdir='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
tar --no-same-owner -xzf "$hdr" -C "$stage" --wildcards "$hdir/*.h"
mv "$stage/$hdir"/*.h "$stage/include/"
ln -sf libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"
echo "$ORT_VERSION" > "$stage/VERSION"
chmod 755 "$stage"; rm -rf "$stage/package" "$root"
mv "$stage" "$root"; trap - EXIT
echo "$LAYOUT" > "$root/.complete"
say "ONNX Runtime $ORT_VERSION ready in $root"
echo "$root"
