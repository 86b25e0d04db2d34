#!/usr/bin/env bash
# Run l4 of docs/BENCHMARKS.md (2026-12-04, evening), from the repository root with .gpu-carry sent
# along: a GPU instance's two workers sharing the instance's ORT sessions (worker_sessions: shared,
# the behaviour before this build) against sessions of their own (the new default), on ResNet-50
# (tune's [128] candidate with NHWC, and the config Triton's documentation suggests) and BERT-base
# ([16, 32], 2 instances). perf at 1, 2, 8 and 64 connections, binary HTTP. LOGDIR: $1.
set -u
L=${1:-/tmp/l4}; mkdir -p "$L"
source scripts/h200_serve_lib.sh
NHWC='optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } }] } }'
for ws in shared own; do
  serve_run r128_$ws $M/resnet50.onnx "max_batch_size: 128
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [128] }
parameters { key: \"worker_sessions\" value: { string_value: \"$ws\" } }
$NHWC" --concurrency 1,2,8,64
  serve_run r32_$ws $M/resnet50.onnx "max_batch_size: 32
dynamic_batching { }
parameters { key: \"worker_sessions\" value: { string_value: \"$ws\" } }" --concurrency 1,8,64
done
for ws in shared own; do
  serve_run bert_$ws $M/bert.onnx "max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }
parameters { key: \"worker_sessions\" value: { string_value: \"$ws\" } }" --concurrency 64 \
    --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 --int-range input_ids:0:30000
done
step done
