#!/usr/bin/env bash
# Run v1's tune winner for ResNet-50 (docs/BENCHMARKS.md, as tune wrote it: fp16, NHWC, fused
# conv+bias, HEURISTIC, [16] padded, 2 ms, 2 instances of serve's 2 workers) served at 64
# connections against the same model in process at the batch the server ran (perf
# --compare-in-process, which converts to the served precision): issue 26's served target. On the
# GPU test machine, from the repository root, with ortgpu on the PATH (.gpu-carry/stage.sh) and
# MODELS/resnet50.onnx exported. Writes LOGDIR/serve.log and LOGDIR/pass_{1,2}.txt.
#
#   bash scripts/h200_fp16_served.sh MODELS LOGDIR
set -u
M=${1:?usage: scripts/h200_fp16_served.sh MODELS LOGDIR}
L=${2:?usage: scripts/h200_fp16_served.sh MODELS LOGDIR}
mkdir -p "$L"
R=/tmp/repo_fp16_served; rm -rf $R; mkdir -p $R/resnet50/1; ln -sf $M/resnet50.onnx $R/resnet50/1/model.onnx
cat > $R/resnet50/config.pbtxt <<'PB'
max_batch_size: 16
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }
instance_group [{ count: 2 kind: KIND_GPU }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda"
  parameters { key: "prefer_nhwc" value: "1" } parameters { key: "fuse_conv_bias" value: "1" }
  parameters { key: "cudnn_conv_algo_search" value: "HEURISTIC" } }] } }
parameters { key: "precision" value { string_value: "fp16" } }
parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
PB
ortgpu serve --model-repository $R --http-port 8000 --grpc-port 8001 --metrics-port 8002 > "$L/serve.log" 2>&1 & pid=$!
for _ in $(seq 1 900); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
for pass in 1 2; do
  timeout 150 ortgpu perf --url http://127.0.0.1:8000 --model resnet50 --threads 4 --concurrency 64 --measurement-interval 3000 \
    --max-trials 4 --no-progress --compare-in-process $M/resnet50.onnx > "$L/pass_$pass.txt" 2>&1
done
kill $pid; wait $pid
