#!/usr/bin/env bash
# Issue 30 item 6 on the one-GPU test machine, from the repository root with .gpu-carry sent along
# (docs/SERVING.md, "Several GPUs"): everything runs with `gpus: [0]` and with
# CUDA_VISIBLE_DEVICES=0, a config naming GPU 1 is UNAVAILABLE with a clear reason, and the figures
# of docs/BENCHMARKS.md that these paths touch are measured again beside it. LOGDIR: $1.
#
#   doctor.txt       doctor --device all --require gpu (ResNet-50), then --device 0 under
#                    CUDA_VISIBLE_DEVICES=0, and --device 1 (no such GPU: exit 2 and why)
#   bench.txt        bench --device all: ResNet-50 batch 32, served-graph I/O, NHWC
#   serve_*.log      the start-up summaries; gpu1.txt the repository index and the ready probes
#   perf_*.txt       ResNet-50's hand config ([32], 2 instances, CUDA graphs, NHWC) at 1 and 64
#                    connections with gpus: [0], with CUDA_VISIBLE_DEVICES=0 and no gpus, and the
#                    tiny MLP at 1 connection with default flags
set -u
L=${1:-/tmp/i30}; mkdir -p "$L"
source scripts/h200_serve_lib.sh
command -v ortgpu > /dev/null || { echo "ortgpu is not on PATH: send .gpu-carry along (carry)" >&2; exit 3; }
[ -f $M/mlp.onnx ] || python3 .gpu-carry/export_models.py $M mlp >> "$L/export.txt" 2>&1
R=$M/resnet50.onnx

step doctor
{ echo "\$ ortgpu doctor --device all --require gpu --model resnet50.onnx"
  timeout 120 ortgpu doctor --device all --require gpu --model $R; echo "rc=$?"
  echo "\$ CUDA_VISIBLE_DEVICES=0 ortgpu doctor --device 0 --require gpu --model resnet50.onnx --json (health lines)"
  CUDA_VISIBLE_DEVICES=0 timeout 120 ortgpu doctor --device 0 --require gpu --model $R --json > "$L/doctor_cvd0.json"; echo "rc=$?"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(f.get("id"), f.get("status"), f.get("title","")[:120]) for f in d.get("findings", [])]' "$L/doctor_cvd0.json"
  echo "\$ ortgpu doctor --device 1 --require gpu"
  timeout 60 ortgpu doctor --device 1 --require gpu 2>&1 | tail -5; echo "rc=${PIPESTATUS[0]}"
} > "$L/doctor.txt" 2>&1

step bench
{ echo "\$ ortgpu bench resnet50.onnx --provider cuda --device all --io served-graph --batch 32 --cuda-option prefer_nhwc=1 --duration 5"
  timeout 150 ortgpu bench $R --provider cuda --device all --io served-graph --batch 32 --cuda-option prefer_nhwc=1 \
      --duration 5 --no-progress; echo "rc=$?"
} > "$L/bench.txt" 2>&1

HAND='max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU GPUS }]
dynamic_batching { preferred_batch_size: [32] }
optimization { execution_accelerators { gpu_execution_accelerator: [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }'
serve_run gpus0 $R "${HAND/GPUS/gpus: [0]}" --concurrency 1,64
CUDA_VISIBLE_DEVICES=0 serve_run cvd0 $R "${HAND/GPUS/}" --concurrency 1,64
serve_run mlp $M/mlp.onnx 'max_batch_size: 8
instance_group [{ count: 1 kind: KIND_GPU gpus: [0] }]' --concurrency 1

step gpu1
D=/tmp/repo_gpu1; rm -rf $D; mkdir -p $D/on0/1 $D/on1/1
ln -sf $M/mlp.onnx $D/on0/1/model.onnx; ln -sf $M/mlp.onnx $D/on1/1/model.onnx
printf 'max_batch_size: 8\ninstance_group [{ count: 1 kind: KIND_GPU gpus: [0] }]\n' > $D/on0/config.pbtxt
printf 'max_batch_size: 8\ninstance_group [{ count: 1 kind: KIND_GPU gpus: [1] }]\n' > $D/on1/config.pbtxt
ortgpu serve --model-repository $D --http-port 8000 --metrics-port 8002 > "$L/serve_gpu1.log" 2>&1 & pid=$!
for _ in $(seq 1 300); do grep -q '^HTTP' "$L/serve_gpu1.log" 2>/dev/null && break; sleep 0.2; done
python3 - > "$L/gpu1.txt" 2>&1 <<'PY'
import json, urllib.request, urllib.error
def get(path, data=None):
    try:
        with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8000" + path, data=data)) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
print("index:", get("/v2/repository/index", b"{}"))
for m in ("on0", "on1"):
    print(m, "ready:", get(f"/v2/models/{m}/ready"))
body = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 256], "data": [0.5] * 256}]}).encode()
print("on0 infer:", get("/v2/models/on0/infer", body)[0])
print("on1 infer:", get("/v2/models/on1/infer", body))
print("health ready:", get("/v2/health/ready"))
PY
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$L/gpu1.txt" 2>&1
kill $pid; wait $pid
step done
grep -hE "^rc=|fastest|slowest|items/s" "$L/doctor.txt" "$L/bench.txt" > "$L/summary.txt"
for f in "$L"/perf_*.txt; do echo "== $f"; grep -E "^ +[0-9]+ |GPUs at|rc=" "$f"; done >> "$L/summary.txt"
