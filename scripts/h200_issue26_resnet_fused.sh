#!/usr/bin/env bash
# Run l3 of docs/BENCHMARKS.md (2026-12-04, evening), from the repository root with .gpu-carry sent
# along: ResNet-50 float16 with cuDNN's conv+bias fusion (fuse_conv_bias=1) and NHWC as bench
# --precision runs it, CUDA graphs on top, served over HTTP binary at 64 connections against in
# process, PyTorch eager and torch.compile in the same run; and a served tune candidate that measured
# badly (workers=2, [128]) probed by hand. LOGDIR: $1.
set -u
L=${1:-/tmp/l3}; mkdir -p "$L"
source .gpu-carry/stage.sh
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:$LD_LIBRARY_PATH
M=/tmp/models; mkdir -p $M
[ -f $M/resnet50.onnx ] || python3 .gpu-carry/export_models.py $M bert resnet50 mlp > "$L/export.txt" 2>&1
R=$M/resnet50.onnx
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
F="--cuda-option prefer_nhwc=1 --cuda-option fuse_conv_bias=1"
step bench-precision
timeout 120 ortgpu bench $R --provider cuda --precision tf32,fp16 --io bound $F --batch 32,128 --iterations 100 > "$L/bench_resnet.txt" 2>&1; echo "rc=$?" >> "$L/bench_resnet.txt"
step bench-tf32-plain
timeout 60 ortgpu bench $R --provider cuda --io bound --cuda-option prefer_nhwc=1 --batch 32,128 --iterations 100 --no-check >> "$L/bench_resnet.txt" 2>&1; echo "rc=$?" >> "$L/bench_resnet.txt"
[ -f $M/r16.onnx ] || ortgpu convert $R --to fp16 -o $M/r16.onnx --provider cuda > "$L/convert.txt" 2>&1
step bench-graph
timeout 60 ortgpu bench $M/r16.onnx --provider cuda --io cuda-graph $F --batch 32,128 --iterations 100 --no-check >> "$L/bench_resnet.txt" 2>&1; echo "rc=$?" >> "$L/bench_resnet.txt"
timeout 60 ortgpu bench $M/r16.onnx --provider cuda --io served-graph $F --batch 32 --iterations 100 --no-check >> "$L/bench_resnet.txt" 2>&1; echo "rc=$?" >> "$L/bench_resnet.txt"
serve_run() { # name config-body perf-args...
  local name=$1 cfg=$2; shift 2
  step "serve $name"
  local dir=/tmp/repo_$name; rm -rf $dir; mkdir -p $dir/resnet50/1; ln -sf $R $dir/resnet50/1/model.onnx
  printf '%s\n' "$cfg" > $dir/resnet50/config.pbtxt
  ortgpu serve --model-repository $dir --http-port 8000 --grpc-port 8001 --metrics-port 8002 > "$L/serve_$name.log" 2>&1 & local pid=$!
  for _ in $(seq 1 600); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
  timeout 150 ortgpu perf --url http://127.0.0.1:8000 --model resnet50 --threads 4 "$@" > "$L/perf_$name.txt" 2>&1; echo "rc=$?" >> "$L/perf_$name.txt"
  kill $pid; wait $pid
}
EP='optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "fuse_conv_bias" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }'
serve_run fp16 "max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }
parameters { key: \"precision\" value: { string_value: \"fp16\" } }
$EP" --concurrency 64 --measurement-interval 3000 --max-trials 4 --compare-in-process $M/r16.onnx
serve_run w2 'max_batch_size: 128
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [128] }
parameters { key: "workers_per_instance" value: { string_value: "2" } }
optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } }] } }' --concurrency 1,2,4,8,64 --measurement-interval 1500 --max-trials 3
step torch
timeout 200 python3 scripts/torch_fp16_baseline.py resnet50 compile > "$L/torch.txt" 2>&1
step done
