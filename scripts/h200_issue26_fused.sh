#!/usr/bin/env bash
# Run k2 of docs/BENCHMARKS.md (2026-12-04) on the H200 test machine, from the repository root with
# .gpu-carry sent along: float16 with ortgpu's own fusions (convert's --fuse auto: MultiHeadAttention
# and SkipLayerNormalization on --provider cuda) against TF32 and PyTorch eager fp16 in the same
# run, then float16 served with the model's float32 interface (ResNet-50 on the best served
# config, BERT on a [32] config) through `ortgpu perf --compare-in-process`. Output under LOGDIR.
set -u
L=${1:-/tmp/k2}; mkdir -p "$L"
source .gpu-carry/stage.sh
export PYTHONUNBUFFERED=1
M=/tmp/models; mkdir -p $M
date -u
python3 .gpu-carry/export_models.py $M bert resnet50 > "$L/export.txt" 2>&1
B=$M/bert.onnx R=$M/resnet50.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
step convert
{ /usr/bin/time -f "wall %e s" ortgpu convert $B --to fp16 -o $M/bert_fp16.onnx --provider cuda $BS --batch 8; echo "rc=$?"; } > "$L/c_bert.txt" 2>&1
{ /usr/bin/time -f "wall %e s" ortgpu convert $R --to fp16 -o $M/resnet50_fp16.onnx --provider cuda --batch 32; echo "rc=$?"; } > "$L/c_resnet.txt" 2>&1
step bench
{ for f in bert bert_fp16; do timeout 150 ortgpu bench $M/$f.onnx --provider cuda --io bound --batch 32,128 $BS --iterations 100 --no-check; done
  for f in resnet50 resnet50_fp16; do timeout 150 ortgpu bench $M/$f.onnx --provider cuda --io bound --cuda-option prefer_nhwc=1 --batch 32,128 --iterations 200 --no-check; done
} > "$L/bench.txt" 2>&1
step torch
timeout 200 python3 scripts/torch_fp16_baseline.py > "$L/torch.txt" 2>&1
step serve
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:$LD_LIBRARY_PATH
serve_one() {  # NAME MODEL CONFIG PERF-ARGS...
  local name=$1 model=$2 cfg=$3; shift 3
  local dir=/tmp/repo-$name; rm -rf $dir; mkdir -p $dir/$name/1; ln -sf $model $dir/$name/1/model.onnx; printf '%s\n' "$cfg" > $dir/$name/config.pbtxt
  ortgpu serve --model-repository $dir --http-port 8000 --metrics-port 8002 > "$L/serve_$name.log" 2>&1 & local pid=$!
  for _ in $(seq 1 600); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
  timeout 150 ortgpu perf --url http://127.0.0.1:8000 --model $name --threads 4 --measurement-interval 3000 --max-trials 6 \
    --compare-in-process $model "$@" > "$L/perf_$name.txt" 2>&1
  kill $pid; wait $pid
}
RCFG='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }'
serve_one resnet50_fp16 $M/resnet50_fp16.onnx "$RCFG" --concurrency 64
BCFG='max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }'
serve_one bert_fp16 $M/bert_fp16.onnx "$BCFG" --concurrency 64 --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 --int-range input_ids:0:30000
step done
date -u
