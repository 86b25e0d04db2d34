#!/usr/bin/env bash
# Issue 30 item 6, "no figure gets worse": the served ResNet-50 hand config ([32], 2 instances,
# CUDA graphs, NHWC; 1 and 64 connections over binary HTTP) with this build against the build
# before several-GPU serving (327fd24: its binary bundled as `ortgpu-old` by `make-carry --bundle
# build/ortgpu OLD/ortgpu-old`, or carried xz-compressed in .oldbin/ortgpu-old.xz),
# alternating, on the same machine in one call; this build also with `gpus: [0]`. LOGDIR: $1;
# PASSES (default 2).
set -u
L=${1:-/tmp/ab30}; mkdir -p "$L"
source scripts/h200_serve_lib.sh
command -v ortgpu > /dev/null || { echo "ortgpu is not on PATH: send .gpu-carry along (carry)" >&2; exit 3; }
if [ -f .oldbin/ortgpu-old.xz ]; then
  xz -dc .oldbin/ortgpu-old.xz > /tmp/ortgpu-gpu/bin/ortgpu-old && chmod +x /tmp/ortgpu-gpu/bin/ortgpu-old
fi
[ -x /tmp/ortgpu-gpu/bin/ortgpu-old ] || { echo "no old build: bundle it as ortgpu-old or carry .oldbin" >&2; exit 3; }
cp /tmp/ortgpu-gpu/bin/ortgpu /tmp/ortgpu-gpu/bin/ortgpu-new
HAND='max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU GPUS }]
dynamic_batching { preferred_batch_size: [32] }
optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }'
{ timeout 60 ortgpu bench $M/resnet50.onnx --provider cuda --io served-graph --batch 32 --cuda-option prefer_nhwc=1 --duration 5 --no-progress; } > "$L/bench.txt" 2>&1
for pass in $(seq 1 ${PASSES:-2}); do
  cp /tmp/ortgpu-gpu/bin/ortgpu-old /tmp/ortgpu-gpu/bin/ortgpu
  serve_run old_$pass $M/resnet50.onnx "${HAND/GPUS/}" --concurrency 1,64
  cp /tmp/ortgpu-gpu/bin/ortgpu-new /tmp/ortgpu-gpu/bin/ortgpu
  serve_run new_$pass $M/resnet50.onnx "${HAND/GPUS/}" --concurrency 1,64
  serve_run new_gpus0_$pass $M/resnet50.onnx "${HAND/GPUS/gpus: [0]}" --concurrency 1,64
done
for f in "$L"/perf_*.txt; do echo "== $(basename $f)"; grep -E "^ +(1|64) " "$f"; done > "$L/summary.txt"
grep items/s -A1 "$L/bench.txt" | tail -1 >> "$L/summary.txt"
