#!/usr/bin/env bash
# The GPU runs behind docs/doctor-h200.md, the H200 rows of docs/BENCHMARKS.md
# and docs/serve-h200.md. Run on the GPU test machine from the repository root,
# after `source .gpu-carry/stage.sh` (see /work/shared/gpu/README.md), with
# ortgpu_bare_run_loop in the carry (`cmake --build build --target benchmarks`):
#
#   scripts/h200_proof.sh OUTDIR [doctor] [health] [bench] [overhead] [serve]   (default: all five)
#
# `health` is issue 13's run (docs/doctor-h200.md, "GPU health and the
# host-device path"): doctor's layer 2b, the environment and TensorRT
# checks, the wall time without --model, the --html page and the JSON.
#
# Each part writes a text log (and JSON/HTML where there is one) into OUTDIR.
set -u
out=${1:?usage: h200_proof.sh OUTDIR [doctor] [health] [bench] [overhead] [serve]}; shift
parts=${*:-doctor health bench overhead serve}
mkdir -p "$out"
models=/tmp/models
export TIMEFORMAT='wall %R s'
python3 .gpu-carry/export_models.py "$models" > "$out/export.log" 2>&1
R=$models/resnet50.onnx
B=$models/bert.onnx
# A model whose compute the CUDA EP cannot take: Det has no CUDA kernel, so
# it falls back to the CPU. doctor must fail its placement, and serve
# --require-gpu must keep it UNAVAILABLE.
D=$models/det_fallback.onnx
python3 - "$D" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
g = helper.make_graph(
    [helper.make_node("MatMul", ["x", "x"], ["xx"]), helper.make_node("Det", ["xx"], ["det"])], "det_fallback",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 3])],
    [helper.make_tensor_value_info("det", TensorProto.FLOAT, ["batch"])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
BERT_SHAPES="--shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128"
STAGED_LD=$LD_LIBRARY_PATH
OWN_LD=/tmp/ortgpu-gpu/lib

# http METHOD PATH [PORT]: the body of a request to the local server (no curl needed).
http() {
  python3 -c 'import sys, urllib.request as u; r = u.Request("http://127.0.0.1:%s%s" % (sys.argv[3], sys.argv[2]), method=sys.argv[1], data=b"" if sys.argv[1] == "POST" else None); print(u.urlopen(r).read().decode())' "$1" "$2" "${3:-8000}"
}

doctor_runs() {
  echo "\$ export LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "\$ ortgpu --version"; ortgpu --version
  for i in 1 2 3; do echo "\$ time ortgpu doctor --require gpu  (run $i, summary line)"; { time ortgpu doctor --require gpu | tail -1; } 2>&1; done
  echo "\$ ortgpu doctor --require gpu"; ortgpu doctor --require gpu; echo "exit code $?"
  echo "\$ ortgpu doctor --require gpu --model $R --model $B $BERT_SHAPES"
  ortgpu doctor --require gpu --model "$R" --model "$B" $BERT_SHAPES; echo "exit code $?"
}

if [[ " $parts " == *" doctor "* ]]; then
  LD_LIBRARY_PATH=$STAGED_LD doctor_runs > "$out/doctor_staged_ld.txt" 2>&1
  LD_LIBRARY_PATH=$OWN_LD doctor_runs > "$out/doctor_own_lib_only.txt" 2>&1
  LD_LIBRARY_PATH=$OWN_LD ortgpu doctor --require gpu --json --model "$R" --model "$B" $BERT_SHAPES > "$out/doctor.json"
  { echo "\$ ortgpu doctor --require gpu --model $D"; LD_LIBRARY_PATH=$OWN_LD ortgpu doctor --require gpu --model "$D"; echo "exit code $?"; } > "$out/doctor_fallback.txt" 2>&1
fi

if [[ " $parts " == *" health "* ]]; then
  export LD_LIBRARY_PATH=$OWN_LD
  {
    echo "\$ ortgpu --version"; ortgpu --version
    for i in 1 2 3; do echo "\$ time ortgpu doctor --require gpu  (run $i, summary line)"; { time ortgpu doctor --require gpu | tail -1; } 2>&1; done
    echo "\$ time ortgpu doctor --require gpu --no-copy-test  (summary line)"; { time ortgpu doctor --require gpu --no-copy-test | tail -1; } 2>&1
    echo "\$ ortgpu doctor --require gpu --html $out/doctor.html"
    ortgpu doctor --require gpu --color never --html "$out/doctor.html"; echo "exit code $?"
    echo "\$ ortgpu doctor --require gpu --model $R --model $B $BERT_SHAPES --html $out/doctor_models.html"
    ortgpu doctor --require gpu --color never --model "$R" --model "$B" $BERT_SHAPES --html "$out/doctor_models.html"; echo "exit code $?"
    # The environment traps, one at a time (each must show its finding).
    echo "\$ CUDA_MODULE_LOADING=EAGER NVIDIA_TF32_OVERRIDE=0 ortgpu doctor  (host.* lines)"
    CUDA_MODULE_LOADING=EAGER NVIDIA_TF32_OVERRIDE=0 ortgpu doctor --color never | grep -A3 -e host.cuda_module_loading -e host.tf32
    echo "\$ LD_PRELOAD=<the venv's libcudart.so.13> ortgpu doctor  (host.ld_preload)"
    pre=$(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13 2>/dev/null | head -1)
    [ -n "$pre" ] && LD_PRELOAD=$pre ortgpu doctor --color never | grep -A4 host.ld_preload
    # What NVIDIA's own tool says, to compare with layer 2b.
    command -v nvidia-smi >/dev/null && { echo "\$ nvidia-smi -q -d PERFORMANCE,ECC,PAGE_RETIREMENT,ROW_REMAPPER,COMPUTE,CLOCK"; nvidia-smi -q -d PERFORMANCE,ECC,PAGE_RETIREMENT,ROW_REMAPPER,COMPUTE,CLOCK; nvidia-smi topo -m; }
  } > "$out/doctor_health.txt" 2>&1
  ortgpu doctor --require gpu --json --model "$R" > "$out/doctor_health.json"
fi

if [[ " $parts " == *" bench "* ]]; then
  export LD_LIBRARY_PATH=$OWN_LD
  {
    echo "\$ ortgpu bench $R --provider cuda --batch 32 --sweep --iterations 200 --json ..."
    ortgpu bench "$R" --provider cuda --batch 32 --sweep --iterations 200 --no-progress --json \
      --html "$out/resnet50_sweep.html" --config-out "$out/resnet50_config.pbtxt" > "$out/resnet50_sweep.json"
    echo "exit code $?"
    # CUDA graphs are left out for BERT: its shape nodes stay on the CPU, which graph capture refuses.
    echo "\$ ortgpu bench $B --provider cuda --batch 32 --shape seq:128 --int-range input_ids:0:30000 --concurrency 1,2 --concurrency-mode per-worker --sweep --sweep-axes 'io=host|bound|resident|served' --iterations 200 --json"
    ortgpu bench "$B" --provider cuda --batch 32 --shape seq:128 --int-range input_ids:0:30000 \
      --concurrency 1,2 --concurrency-mode per-worker --sweep --sweep-axes 'io=host|bound|resident|served' \
      --iterations 200 --no-progress --json --html "$out/bert_sweep.html" \
      --config-out "$out/bert_config.pbtxt" > "$out/bert_sweep.json"
    echo "exit code $?"
    echo "\$ ortgpu bench $R --provider cpu --batch 1,32 --iterations 20"
    ortgpu bench "$R" --provider cpu --batch 1,32 --iterations 20 --warmup 2 --no-progress; echo "exit code $?"
    echo "\$ ortgpu bench $B --provider cpu --batch 1,32 --shape seq:128 --int-range input_ids:0:30000 --iterations 10"
    ortgpu bench "$B" --provider cpu --batch 1,32 --shape seq:128 --int-range input_ids:0:30000 --iterations 10 --warmup 1 --no-progress; echo "exit code $?"
    echo "\$ ortgpu bench $R --provider cuda --batch 32 --io bound --cuda-option use_tf32=0 --iterations 50  (accuracy without TF32)"
    ortgpu bench "$R" --provider cuda --batch 32 --io bound --cuda-option use_tf32=0 --iterations 50 --no-progress; echo "exit code $?"
    echo "\$ ortgpu bench $R --provider cuda --batch 1,8,32 --concurrency 1,2 --io bound --cuda-option prefer_nhwc=1 --iterations 200"
    ortgpu bench "$R" --provider cuda --batch 1,8,32 --concurrency 1,2 --io bound --cuda-option prefer_nhwc=1 \
      --iterations 200 --no-progress --html "$out/resnet50_batches.html"; echo "exit code $?"
  } > "$out/bench.txt" 2>&1
fi

if [[ " $parts " == *" overhead "* ]]; then
  # bench's own overhead: ortgpu bench and a bare BoundRunner::Run loop
  # (benchmarks/bare_run_loop.cc), alternated, both pinned to one core so the
  # scheduler moves neither; the ratio of p50s per pair.
  export LD_LIBRARY_PATH=$OWN_LD
  pin=""; command -v taskset >/dev/null && pin="taskset -c 3"
  {
    echo "== ResNet-50 batch 1, outputs bound to the device, 2000 runs each, 10 pairs, pinned: ${pin:-no}"
    for i in $(seq 1 10); do
      b=$($pin ortgpu bench "$R" --provider cuda --batch 1 --io bound --iterations 2000 --no-check --no-progress --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["latency_ms"]["p50"])')
      r=$($pin ortgpu_bare_run_loop "$R" cuda bound 1 2000 | awk '{print $4}')
      python3 -c "print('pair $i: bench p50 %.4f ms, bare loop p50 %.4f ms, ratio %.3f' % ($b, $r, $b / $r))"
    done
  } > "$out/overhead.txt" 2>&1
fi

if [[ " $parts " == *" serve "* ]]; then
  export LD_LIBRARY_PATH=$OWN_LD
  repo=/tmp/repo
  mkdir -p $repo/resnet50/1 $repo/bert/1 $repo/det_fallback/1
  ln -sf "$D" $repo/det_fallback/1/model.onnx
  ln -sf "$R" $repo/resnet50/1/model.onnx
  ln -sf "$B" $repo/bert/1/model.onnx
  cat > $repo/resnet50/config.pbtxt <<'CFG'
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [ { name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "output" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]
dynamic_batching { preferred_batch_size: [ 8, 16, 32 ] max_queue_delay_microseconds: 2000 }
optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda" parameters { key: "prefer_nhwc" value: "1" } } ] } }
CFG
  cat > $repo/bert/config.pbtxt <<'CFG'
name: "bert"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [
  { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "token_type_ids" data_type: TYPE_INT64 dims: [ -1 ] }
]
output [ { name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, 768 ] } ]
instance_group [ { count: 2 kind: KIND_GPU } ]
dynamic_batching { max_queue_delay_microseconds: 1000 }
CFG
  {
    echo "\$ ortgpu serve --model-repository $repo --require-gpu"
    ortgpu serve --model-repository $repo --require-gpu --http-port 8000 --metrics-port 8002 > "$out/serve_stdout.txt" 2> "$out/serve_stderr.txt" &
    pid=$!
    # The start-up summary is printed once every model was tried.
    for _ in $(seq 1 240); do grep -q '^HTTP: ' "$out/serve_stdout.txt" 2>/dev/null && break; sleep 0.5; done
    echo "--- start-up summary (stdout)"; cat "$out/serve_stdout.txt"
    python3 - <<'PY'
import json, struct, threading, urllib.request
import numpy as np
def post(path, body, headers=None):
    req = urllib.request.Request("http://127.0.0.1:8000" + path, data=body, headers=headers or {}, method="POST")
    with urllib.request.urlopen(req) as r:
        return r.status, dict(r.headers), r.read()
print("--- BERT, JSON request (input_ids etc. 1x8)")
ids = [101, 7592, 1010, 2088, 999, 102, 0, 0]
body = {"inputs": [
    {"name": "input_ids", "datatype": "INT64", "shape": [1, 8], "data": ids},
    {"name": "attention_mask", "datatype": "INT64", "shape": [1, 8], "data": [1]*6 + [0]*2},
    {"name": "token_type_ids", "datatype": "INT64", "shape": [1, 8], "data": [0]*8}]}
st, h, data = post("/v2/models/bert/infer", json.dumps(body).encode())
r = json.loads(data)
o = r["outputs"][0]
print(st, r["model_name"], r["model_version"], o["name"], o["datatype"], o["shape"], "first values", [round(v, 4) for v in o["data"][:4]])
print("--- ResNet-50, binary tensor request (1x3x224x224 FP32, 602112 bytes)")
x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
hdr = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224], "parameters": {"binary_data_size": x.nbytes}}],
                  "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
st, h, data = post("/v2/models/resnet50/infer", hdr + x.tobytes(), {"Inference-Header-Content-Length": str(len(hdr)), "Content-Type": "application/octet-stream"})
n = int(h["Inference-Header-Content-Length"])
meta = json.loads(data[:n]); out = np.frombuffer(data[n:], dtype=np.float32)
print(st, meta["outputs"][0]["shape"], meta["outputs"][0]["parameters"], "argmax", int(out.argmax()), "bytes", len(data) - n)
print("--- 64 concurrent ResNet-50 requests (dynamic batching)")
errors = []
def one():
    try:
        s, _, _ = post("/v2/models/resnet50/infer", hdr + x.tobytes(), {"Inference-Header-Content-Length": str(len(hdr))})
        if s != 200: errors.append(s)
    except Exception as e:
        errors.append(str(e))
ts = [threading.Thread(target=one) for _ in range(64)]
[t.start() for t in ts]; [t.join() for t in ts]
print("failed:", len(errors), errors[:3])
with urllib.request.urlopen("http://127.0.0.1:8000/v2/models/resnet50/stats") as r:
    s = json.load(r)["model_stats"][0]
print("resnet50 stats: inference_count", s["inference_count"], "execution_count", s["execution_count"],
      "batch sizes", [(b["batch_size"], b["compute_infer"]["count"]) for b in s.get("batch_stats", [])])
PY
    echo "--- /v2/repository/index"; http POST /v2/repository/index
    echo "--- /v2/health/ready (det_fallback is UNAVAILABLE, so the server is not ready)"
    python3 -c 'import urllib.request as u, urllib.error as e
try: print(u.urlopen("http://127.0.0.1:8000/v2/health/ready").status)
except e.HTTPError as x: print(x.code)'

    echo "--- /metrics (GPU and inference lines)"
    http GET /metrics 8002 | grep -E '^nv_(gpu|inference_(request_success|count|exec_count|request_duration_us|queue_duration_us|compute_infer_duration_us))' | head -40
    echo "--- SIGTERM"
    kill -TERM $pid; wait $pid; echo "serve exit code $?"
    echo "--- stderr (last lines)"; tail -20 "$out/serve_stderr.txt"
  } > "$out/serve.txt" 2>&1
fi
echo "h200_proof: done ($parts) -> $out"
