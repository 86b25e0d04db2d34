#!/usr/bin/env bash
# The server's CPU time and page faults per request with ortgpu's host
# allocator settings (src/sys/host_allocator.h) against glibc's defaults, on
# this machine's CPU: a ResNet-50-shaped model that does almost nothing
# (scripts/make_null_model.py; 602 KB requests), a CPU instance that batches,
# `ortgpu perf` with 8 connections over HTTP and gRPC, three rounds
# alternating. "glibc" runs the same build with GLIBC_TUNABLES naming a malloc
# tunable that changes nothing (glibc.malloc.perturb=0), which ortgpu leaves as
# it is.
#
#   scripts/host_allocator_bench.sh [build/ortgpu] [REQUESTS]   (needs python3-onnx)
set -euo pipefail
bin=$(realpath "${1:-build/ortgpu}")
n=${2:-4000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ortgpu-alloc.XXXX)
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/repo/null/1"
/usr/bin/python3 "$here/scripts/make_null_model.py" "$work/repo/null/1/model.onnx"
printf 'max_batch_size: 32\ndynamic_batching { max_queue_delay_microseconds: 500 }\n' > "$work/repo/null/config.pbtxt"
port=$((20000 + RANDOM % 20000))
tick_us=$((1000000 / $(getconf CLK_TCK)))
perf() {
  "$bin" perf -i "$1" --url "http://127.0.0.1:$port" --grpc-url "127.0.0.1:$((port + 1))" --model null \
    --concurrency 8 --request-count "$2" --no-progress >/dev/null 2>&1
}
# cpu_and_faults: the server's user+system ticks and minor faults so far
cpu_and_faults() { awk '{print $14 + $15, $10}' "/proc/$pid/stat"; }
echo "server CPU time and minor page faults per request, 602 KB requests, 8 connections, $(nproc) cores, $(date -u +%F)"
for round in 1 2 3; do
  for mode in ortgpu glibc; do
    env_=()
    [ $mode = glibc ] && env_=(GLIBC_TUNABLES=glibc.malloc.perturb=0)
    env ${env_[@]+"${env_[@]}"} "$bin" serve --model-repository "$work/repo" --cpu --http-port $port \
      --grpc-port $((port + 1)) --metrics-port -1 >"$work/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 150); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.2; done
    for proto in http grpc; do
      perf $proto 300   # warm-up
      read -r t0 f0 < <(cpu_and_faults)
      perf $proto "$n"
      read -r t1 f1 < <(cpu_and_faults)
      printf 'round %d  %-6s  %-4s  %5d us CPU  %5.1f faults per request\n' $round $mode $proto \
        $(((t1 - t0) * tick_us / n)) "$(echo "($f1 - $f0) / $n" | bc -l)"
    done
    kill -TERM $pid; wait $pid 2>/dev/null || true
  done
done
