#!/usr/bin/env bash
# Run s1 of docs/BENCHMARKS.md (2026-12-07): issue 29's lone request run inline on a GPU instance.
# On the GPU test machine from the repository root with .gpu-carry sent along (ortgpu and wrk in
# the bundle); about 7 minutes. Output under LOGDIR:
#   inproc_*.txt  the tiny MLP in process, batch 1 (before and after the served passes)
#   mlp_P_V.txt   pass P (1-3) of variant V: `default` (serve with no flag) or `handover`
#                 (`--inline-max-us 0`, every request handed to the instance's worker): ortgpu perf
#                 over HTTP and over gRPC at 1 connection, wrk at 1 connection, the outputs of one
#                 fixed request (the two variants must agree), GPU memory after the load, and the
#                 server's CPU over 10 idle seconds after it
#   resnet/       scripts/h200_serve.sh grpc with GRPC_MLP=0: ResNet-50 at 64 connections (the hand
#                 config, CUDA graphs) over HTTP and gRPC against bench --io cuda-graph
#
#   bash scripts/h200_s1.sh LOGDIR
#   source scripts/h200_s1.sh --functions LOGDIR   (scripts/h200_s2.sh: the set-up and functions only)
set -u
functions_only=0
if [ "${1:-}" = --functions ]; then functions_only=1; shift; fi
L=${1:?usage: scripts/h200_s1.sh LOGDIR}
mkdir -p "$L"
source .gpu-carry/stage.sh
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:${LD_LIBRARY_PATH:-}
M=/tmp/models; mkdir -p $M
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
step start
nvidia-smi -L > "$L/gpu.txt" 2>&1
[ -f $M/resnet50.onnx ] && [ -f $M/mlp.onnx ] ||
  timeout 240 python3 .gpu-carry/export_models.py $M resnet50 mlp > "$L/export.txt" 2>&1
MLP=$M/mlp.onnx
len=$(python3 scripts/make_binary_request.py /tmp/mlp_b1.bin input:FP32:1x256 --output output 2>>"$L/export.txt")
python3 - "$MLP" >> "$L/export.txt" 2>&1 <<'PY'
import onnx, sys
m = onnx.load(sys.argv[1])
for v in list(m.graph.input) + list(m.graph.output):
    print(v.name, [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim])
PY

inproc() {
  step "in process $1"
  ortgpu bench $MLP --provider cuda --batch 1 --duration 4 --no-check --no-progress > "$L/inproc_$1.txt" 2>&1
}
D=/tmp/repo_s1; rm -rf $D; mkdir -p $D/mlp/1; ln -sf $MLP $D/mlp/1/model.onnx
printf 'max_batch_size: 8\ninstance_group [{ count: 1 kind: KIND_GPU }]\n' > $D/mlp/config.pbtxt
cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
served() {  # PASS VARIANT FLAGS...
  local f="$L/mlp_$1_$2.txt"; shift 2
  step "served $f $*"
  ortgpu serve --model-repository $D --http-port 8000 --grpc-port 8001 --metrics-port 8002 "$@" > "${f%.txt}.log" 2>&1 & local pid=$!
  for _ in $(seq 1 300); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
  {
    echo "serve flags: $*"
    python3 - <<'PY'
import json, urllib.request as u
body = json.dumps({"inputs": [{"name": "input", "shape": [1, 256], "datatype": "FP32",
                               "data": [((i * 37) % 19 - 9) / 7.0 for i in range(256)]}]}).encode()
for _ in range(3):
    r = json.load(u.urlopen(u.Request("http://127.0.0.1:8000/v2/models/mlp/infer", data=body)))
print("outputs:", [round(x, 6) for x in r["outputs"][0]["data"]])
PY
    for proto in http grpc; do
      echo "--- ortgpu perf -i $proto --concurrency 1"
      timeout 90 ortgpu perf -i $proto --url http://127.0.0.1:8000 --grpc-url 127.0.0.1:8001 --model mlp --concurrency 1 \
        --threads 1 --measurement-interval 3000 --max-trials 6 --no-progress; echo "exit $?"
    done
    echo "--- wrk -t1 -c1 -d8s"
    BODY_FILE=/tmp/mlp_b1.bin JSON_LEN=$len timeout 30 wrk -t1 -c1 -d8s --latency -s benchmarks/wrk_binary_infer.lua \
      http://127.0.0.1:8000/v2/models/mlp/infer | grep -E "50%|75%|90%|99%|Requests/sec|Non-2xx|Socket"
    echo "--- GPU memory after the load"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
    echo "--- threads: $(ls /proc/$pid/task | wc -l)"
    local t0=$(cpu_ticks $pid); sleep ${IDLE_S:-10}; local t1=$(cpu_ticks $pid)
    echo "idle CPU over ${IDLE_S:-10} s: $(( t1 - t0 )) ticks of 1/$(getconf CLK_TCK) s = $(awk -v d=$(( t1 - t0 )) -v hz=$(getconf CLK_TCK) -v s=${IDLE_S:-10} 'BEGIN{printf "%.2f", 100 * d / hz / s}')% of a core"
    python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8000/v2/models/mlp/stats").read().decode()[:1500])'
  } > "$f" 2>&1
  kill $pid; wait $pid
}

[ $functions_only = 1 ] && return 0
inproc before
for pass in 1 2 3; do
  served $pass default
  served $pass handover --inline-max-us 0
done
inproc after

step resnet
GRPC_MLP=0 DURATION=10 timeout 300 bash scripts/h200_serve.sh "$L/resnet" grpc > "$L/resnet.out" 2>&1
step end
