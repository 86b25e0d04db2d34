#!/usr/bin/env bash
# Builds the libFuzzer targets under ASan+UBSan with clang and runs them for a
# bounded time each, starting from its seed corpus fuzz/corpus/<name>/
# (fuzz_<name> is the target) and its dictionary (fuzz/*.dict).
# New inputs a fuzzer finds go to build-fuzz/corpus/<name> (the seed corpus
# stays clean); a crash leaves crash-* files in build-fuzz/ and a non-zero exit.
#
#   scripts/fuzz.sh                         # every target, 60 s each
#   scripts/fuzz.sh 600                     # every target, 10 minutes each
#   scripts/fuzz.sh 30 fuzz_http_request    # one target
#
# FUZZ_BUILD_ONLY=1 builds and runs nothing; FUZZ_NO_BUILD=1 runs what is
# built (ctest: the FuzzBuild fixture builds once, the four runs share it).
#
# Targets: fuzz_infer_request (KServe request decoder), fuzz_http_request
# (Beast parsing, routing, access checks, endpoints), fuzz_model_config
# (config.pbtxt), fuzz_bytes_round_trip (BYTES elements through the decoder,
# an ORT Identity session and the encoder, byte for byte).
set -euo pipefail
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_infer_request fuzz_http_request fuzz_model_config fuzz_bytes_round_trip)
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found; run: apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DORTGPU_BUILD_FUZZERS=ON -DORTGPU_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi
[ "${FUZZ_BUILD_ONLY:-0}" != 1 ] || exit 0
cd "$build"
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  dict="$root/fuzz/kserve.dict"
  [ "$name" = http_request ] && dict="$root/fuzz/http.dict"
  [ "$name" = model_config ] && dict="$root/fuzz/model_config.dict"
  [ -x "fuzz/$target" ] || { echo "fuzz.sh: $build/fuzz/$target is not built (run without FUZZ_NO_BUILD)" >&2; exit 1; }
  mkdir -p "corpus/$name"
  echo "fuzz.sh: $target for ${seconds} s"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" \
    "./fuzz/$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
    -dict="$dict" "corpus/$name" "$root/fuzz/corpus/$name"
done
