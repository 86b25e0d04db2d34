#!/usr/bin/env bash
# Installs the Debian 12 packages ortgpu builds with (only those missing) and
# fetches ONNX Runtime 1.29.0, Chart.js 4.5.1 and the Kubernetes API schemas
# the deployment tests use into the cache (scripts/fetch_ort.sh,
# scripts/fetch_chartjs.sh, scripts/fetch_k8s_schemas.sh).
# Safe to run again: it does nothing when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  build-essential cmake pkg-config git xz-utils openssl ca-certificates
  libboost1.81-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc zlib1g-dev
  nlohmann-json3-dev libsimdjson-dev
  libcli11-dev libspdlog-dev libfmt-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-onnx python3-numpy python3-yaml libonnx-testdata
  clang libclang-rt-14-dev chromium
  patchelf mmdebstrap lld
)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
scripts/fetch_ort.sh >/dev/null
scripts/fetch_chartjs.sh >/dev/null
scripts/fetch_k8s_schemas.sh >/dev/null
