#!/usr/bin/env bash
# Run u1 of docs/BENCHMARKS.md (2026-12-07), on the GPU test machine from the repository root with
# .gpu-carry sent along; 4.5 minutes on the H100 of run u1 (start it detached with setsid when it
# may run past a call's 10 minutes, and collect it with a second call). Output under LOGDIR:
#   shared.*     issue 26: ResNet-50 fp16, NHWC, fuse_conv_bias, no CUDA graphs, [16] padded, 1
#                instance, served with 1 worker, 2 workers sharing the sessions (serve's default) and
#                2 workers with sessions of their own (run q2's anomaly: 640 then 0 items/s shared)
#   i27/         issue 27: PARTS="three growth" scripts/h200_issue27.sh (the three-model total and
#                the growth under load against the plan that counts a run per worker)
#   sdpa.txt     issue 26: BERT-base fp16 (ortgpu convert, fused) at batch 32 and 128 with each of
#                ORT's attention kernels (the CUDA option sdpa_kernel), the default one named by
#                ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO
#   serve/       issue 29: scripts/h200_serve.sh OUT grpc (the MLP over HTTP and gRPC at 1
#                connection, ResNet-50 at 64 connections against in process) on this build
#
#   bash scripts/h200_u1.sh LOGDIR
set -u
L=${1:?usage: scripts/h200_u1.sh LOGDIR}
mkdir -p "$L"
source .gpu-carry/stage.sh
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:${LD_LIBRARY_PATH:-}
M=/tmp/models; mkdir -p $M
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
step start
nvidia-smi -L > "$L/gpu.txt" 2>&1; { command -v nsys ncu || echo "no nsys/ncu"; } >> "$L/gpu.txt"
[ -f $M/resnet50.onnx ] && [ -f $M/bert.onnx ] && [ -f $M/mlp.onnx ] ||
  timeout 240 python3 .gpu-carry/export_models.py $M resnet50 bert mlp > "$L/export.txt" 2>&1
R=$M/resnet50.onnx B=$M/bert.onnx

# 1. Fused convolutions on sessions two workers share.
shared() {  # NAME WORKERS SESSIONS
  local d=/tmp/repo_u1_$1
  rm -rf $d; mkdir -p $d/resnet50/1; ln -sf $R $d/resnet50/1/model.onnx
  cat > $d/resnet50/config.pbtxt <<CFG
max_batch_size: 16
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16] }
parameters { key: "precision" value: { string_value: "fp16" } }
parameters { key: "adaptive_padding" value: { string_value: "false" } }
parameters { key: "workers_per_instance" value: { string_value: "$2" } }
parameters { key: "worker_sessions" value: { string_value: "$3" } }
optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "fuse_conv_bias" value: "1" } }] } }
CFG
  step "shared $1"
  local t0=$(date +%s%N)
  ortgpu serve --model-repository $d --http-port 8000 --grpc-port -1 --metrics-port 8002 --model-cache-dir /tmp/mc_u1 > "$L/shared_$1.log" 2>&1 & local pid=$!
  for _ in $(seq 1 900); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
  echo "ready after $(( ($(date +%s%N) - t0) / 1000000 )) ms" > "$L/shared_$1.txt"
  timeout 100 ortgpu perf --url http://127.0.0.1:8000 --model resnet50 --threads 4 --concurrency 4,16,64 \
    --measurement-interval 1500 --max-trials 3 --no-progress >> "$L/shared_$1.txt" 2>&1; echo "rc=$?" >> "$L/shared_$1.txt"
  python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8000/v2/models/resnet50/stats").read().decode()[:3000])' >> "$L/shared_$1.txt" 2>&1
  kill $pid; wait $pid
}
shared w1 1 shared
shared w2shared 2 shared
shared w2own 2 own

# 2. Issue 27: three models together and the growth under load, against the plan.
step i27
PARTS="three growth" timeout 560 bash scripts/h200_issue27.sh "$L/i27" > "$L/i27.out" 2>&1

# 3. BERT fp16: ORT's attention kernels.
step sdpa
BS="--shape seq:128 --int-range input_ids:0:30000"
[ -f $M/bert_fp16.onnx ] || timeout 120 ortgpu convert $B --to fp16 -o $M/bert_fp16.onnx --provider cuda $BS --batch 8 > "$L/sdpa_convert.txt" 2>&1
{
  echo "=== default, with ORT's attention kernel debug info"
  ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO=1 timeout 60 ortgpu bench $M/bert_fp16.onnx --provider cuda --io bound --batch 128 $BS --iterations 5 --warmup 1 --no-check --no-progress 2>&1 | grep -iE "attention|kernel|flash|efficient|unfused|cudnn" | sort | uniq -c | head -20
  for k in 0 2 4 24 16; do
    echo "=== sdpa_kernel=$k"
    timeout 60 ortgpu bench $M/bert_fp16.onnx --provider cuda --io bound --batch 32,128 $BS --iterations 100 --no-check --no-progress --cuda-option sdpa_kernel=$k 2>&1 | tail -4
  done
} > "$L/sdpa.txt" 2>&1

# 4. Issue 29: the serve figures on this build.
step serve
GRPC_RESNET=1 timeout 400 bash scripts/h200_serve.sh "$L/serve" grpc > "$L/serve.out" 2>&1
step done
