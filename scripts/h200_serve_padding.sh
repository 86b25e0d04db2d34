#!/usr/bin/env bash
# Run l5 of docs/BENCHMARKS.md (2026-12-04, evening), from the repository root with .gpu-carry sent
# along: the build that no longer pads a batch because the GPU is busy. The same configs as run l4
# (ResNet-50 [128] with NHWC, workers sharing or owning sessions; the config Triton's documentation
# suggests; BERT-base [16, 32] x 2 instances) and the hand-found ResNet-50 config ([32], 2 instances,
# CUDA graphs, NHWC). perf over binary HTTP. LOGDIR: $1.
set -u
L=${1:-/tmp/l5}; mkdir -p "$L"
source scripts/h200_serve_lib.sh
NHWC='optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } }] } }'
for ws in shared own; do
  serve_run r128_$ws $M/resnet50.onnx "max_batch_size: 128
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [128] }
parameters { key: \"worker_sessions\" value: { string_value: \"$ws\" } }
$NHWC" --concurrency 1,2,8,64
done
serve_run r32 $M/resnet50.onnx "max_batch_size: 32
dynamic_batching { }" --concurrency 1,8,64
serve_run hand $M/resnet50.onnx 'max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] }
optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }' --concurrency 1,64
serve_run bert $M/bert.onnx "max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }" --concurrency 64 \
    --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 --int-range input_ids:0:30000
step done
