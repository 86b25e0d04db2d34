#!/usr/bin/env bash
# Builds the libFuzzer targets under ASan+UBSan with clang and runs the KServe
# request decoder fuzzer for a bounded time, starting from fuzz/corpus/.
# New inputs it finds go to build-fuzz/corpus (the seed corpus stays clean);
# a crash leaves crash-* files in build-fuzz/ and a non-zero exit.
#
#   scripts/fuzz.sh            # 60 s
#   scripts/fuzz.sh 600        # 10 minutes
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found; run: apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DORTGPU_BUILD_FUZZERS=ON -DORTGPU_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz_infer_request
mkdir -p "$build/corpus"
cd "$build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./fuzz/fuzz_infer_request -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -dict="$root/fuzz/kserve.dict" "$build/corpus" "$root/fuzz/corpus"
