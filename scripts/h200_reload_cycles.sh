#!/usr/bin/env bash
# Model load and unload cycles under load on the GPU test machine, from the
# repository root after `source .gpu-carry/stage.sh`: one `ortgpu serve
# --model-control explicit` with ResNet-50 in the best served config ([32], 2
# GPU instances, NHWC, CUDA graphs); each cycle loads it, sends it 2,000
# requests from 32 connections (`ortgpu perf`), unloads it, and records the
# GPU's memory in use, the server's resident size and its thread count. Then
# SIGTERM, and the exit status. Every instance worker of a load copies on CUDA
# streams of its own (src/ort/thread_streams.h), which its unload must free.
#
#   scripts/h200_reload_cycles.sh OUTDIR [CYCLES] [ORTGPU...]
#
# With several ortgpu binaries, each runs the same cycles in turn.
set -u
out=${1:?usage: h200_reload_cycles.sh OUTDIR [CYCLES] [ORTGPU...]}
cycles=${2:-10}
shift $(( $# >= 2 ? 2 : 1 ))
bins=("$@")
[ ${#bins[@]} = 0 ] && bins=("$(command -v ortgpu)")
mkdir -p "$out"
models=/tmp/models
[ -f $models/resnet50.onnx ] || python3 .gpu-carry/export_models.py "$models" resnet50 > "$out/export.log" 2>&1
repo=/tmp/repo-reload
rm -rf $repo; mkdir -p $repo/resnet50/1; ln -sf $models/resnet50.onnx $repo/resnet50/1/model.onnx
cat > $repo/resnet50/config.pbtxt <<'CFG'
max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }
CFG
post() { python3 -c 'import sys, urllib.request as u; r = u.urlopen(u.Request(sys.argv[1], data=b"{}", method="POST")); print(r.status)' "$1" 2>&1 | tail -1; }
gpu_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }

for bin in "${bins[@]}"; do
  tag=$(basename "$(dirname "$(realpath "$bin")")")-$(basename "$bin")
  {
    echo "##### $bin"
    echo "GPU memory before the server: $(gpu_mib) MiB"
    "$bin" serve --model-repository $repo --model-control explicit --http-port 8000 --metrics-port 8002 > "$out/serve_reload_$tag.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/live")' 2>/dev/null && break; sleep 0.2; done
    echo "cycle  load  perf                         unload  GPU MiB  RSS MiB  threads"
    for c in $(seq "$cycles"); do
      load=$(post http://127.0.0.1:8000/v2/repository/models/resnet50/load)
      line=$("$bin" perf --url http://127.0.0.1:8000 --model resnet50 --concurrency 32 --request-count 2000 --threads 4 --no-progress 2>&1 | grep -E "^ +32 " | awk '{print $2 " infer/s, " $8 " errors"}')
      unload=$(post http://127.0.0.1:8000/v2/repository/models/resnet50/unload)
      sleep 1   # the unloaded version's workers finish and exit
      rss=$(awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status)
      printf '%5d  %4s  %-27s  %6s  %7s  %7s  %7s\n' "$c" "$load" "$line" "$unload" "$(gpu_mib)" "$rss" "$(ls /proc/$pid/task | wc -l)"
    done
    kill -TERM $pid; wait $pid; echo "exit $?"
    grep -ciE "error|fail" "$out/serve_reload_$tag.log" | sed 's/^/log lines with error or fail: /'
  } >> "$out/reload.txt" 2>&1
done
