#!/usr/bin/env bash
# Issue 11's GPU proofs, on the GPU test machine from the repository root, after
# `source .gpu-carry/stage.sh` (see /work/shared/gpu/README.md), with `ortgpu`
# (and its perf command) in the carried bundle:
#
#   scripts/h200_soak_oom.sh OUTDIR [oom] [soak]        (default: both)
#
# oom   GPU out of memory, at load and during a run. One server, three copies of
#       ResNet-50: `resnet50` (normal), `oom_at_load` (gpu_mem_limit 256 MiB,
#       max_batch_size 128: its warm-up cannot fit) and `oom_at_run`
#       (gpu_mem_limit 1 GiB, no batching, warmed at batch 1, then sent one
#       request of 256 images). Expected: oom_at_load UNAVAILABLE with an
#       out-of-memory reason and readiness false; the batch-256 request
#       answered 503 (ResourceExhausted); oom_at_run and resnet50 keep
#       answering batch-1 requests. Everything is checked and printed as
#       PASS/FAIL lines in OUTDIR/oom.txt.
# soak  10 minutes of ResNet-50 at saturation through `ortgpu perf` (64
#       connections, batch-1 binary requests; the best served config of
#       docs/BENCHMARKS.md: dynamic batching [32], two instances, CUDA graphs,
#       so batches take turns on the GPU): ten 60 s steps, so the perf HTML report (OUTDIR/soak.html)
#       draws throughput, latency and GPU memory across the ten minutes. Host
#       RSS of the server and GPU memory are sampled every 5 s into
#       OUTDIR/soak_memory.csv; OUTDIR/soak.txt ends with errors (must be 0)
#       and RSS / GPU memory after warm-up (minute 1) against the end and the
#       maximum (flat: within a few percent).
#
# SOAK_MINUTES (10) and SOAK_CONCURRENCY (64) override the soak's length and load.
set -u
out=${1:?usage: h200_soak_oom.sh OUTDIR [oom] [soak]}; shift
parts=${*:-oom soak}
mkdir -p "$out"
models=/tmp/models
[ -f $models/resnet50.onnx ] || python3 .gpu-carry/export_models.py "$models" > "$out/export.log" 2>&1
R=$models/resnet50.onnx
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib
HTTP=http://127.0.0.1:8000

get() { python3 -c 'import sys, urllib.request as u
try:
  r = u.urlopen(sys.argv[1]); print(r.status, r.read().decode()[:400])
except Exception as e: print(getattr(e, "code", "ERR"), (e.read().decode()[:400] if hasattr(e, "read") else str(e)))' "$1"; }
# post_bin URL BODY JSON_LEN: prints "STATUS BODY-PREFIX"
post_bin() { python3 - "$@" <<'PY'
import sys, urllib.request as u
url, body, jlen = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
req = u.Request(url, data=body, headers={"Inference-Header-Content-Length": jlen, "Content-Type": "application/octet-stream"})
try:
    r = u.urlopen(req, timeout=300); print(r.status, r.read()[:200])
except Exception as e:
    print(getattr(e, "code", "ERR"), (e.read().decode()[:400] if hasattr(e, "read") else str(e)))
PY
}
start_server() {  # REPO LOG [FLAGS...]
  local repo=$1 log=$2; shift 2
  ortgpu serve --model-repository "$repo" --http-port 8000 --metrics-port 8002 "$@" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 900); do
    grep -q "^HTTP: http" "$log" 2>/dev/null && return 0
    kill -0 $pid 2>/dev/null || { echo "serve died:"; tail -20 "$log"; return 1; }
    sleep 0.2
  done
  echo "serve never finished loading"; tail -20 "$log"; return 1
}
stop_server() { kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; echo "serve exit $?"; }
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fi; }
model_dir() {  # REPO NAME CONFIG
  mkdir -p "$1/$2/1"; ln -sf "$R" "$1/$2/1/model.onnx"; printf '%s\n' "$3" > "$1/$2/config.pbtxt"
}
io='input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]'
cuda_params() {  # KEY VALUE ...: an optimization block with CUDA EP options
  local p=""
  while [ $# -gt 1 ]; do p="$p parameters { key: \"$1\" value: \"$2\" }"; shift 2; done
  echo "optimization { execution_accelerators { gpu_execution_accelerator [{ name: \"cuda\" $p }] } }"
}

if [[ " $parts " == *" oom "* ]]; then
  {
    repo=/tmp/repo-oom; rm -rf $repo; mkdir -p $repo
    model_dir $repo resnet50 "max_batch_size: 32
$io
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }
$(cuda_params prefer_nhwc 1)"
    model_dir $repo oom_at_load "max_batch_size: 128
$io
instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [128] }
$(cuda_params gpu_mem_limit 268435456 arena_extend_strategy kSameAsRequested)"
    model_dir $repo oom_at_run "max_batch_size: 0
input [{ name: \"input\" data_type: TYPE_FP32 dims: [-1, 3, 224, 224] }]
output [{ name: \"output\" data_type: TYPE_FP32 dims: [-1, 1000] }]
instance_group [{ count: 1 kind: KIND_GPU }]
$(cuda_params gpu_mem_limit 1073741824 arena_extend_strategy kSameAsRequested)"
    len1=$(python3 scripts/make_binary_request.py /tmp/oom_b1.bin input:FP32:1x3x224x224 --output output)
    len256=$(python3 scripts/make_binary_request.py /tmp/oom_b256.bin input:FP32:256x3x224x224 --output output)
    start_server $repo "$out/serve_oom.log" --max-body-bytes 268435456 || exit 1
    sed -n '/^MODEL/,/^metrics/p' "$out/serve_oom.log"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/GPU memory after load: /'
    echo "--- repository index"; python3 -c 'import urllib.request as u, json
for e in json.load(u.urlopen(u.Request("http://127.0.0.1:8000/v2/repository/index", data=b"{}"))): print(e)'
    python3 -c 'import urllib.request as u; print(u.urlopen(u.Request("http://127.0.0.1:8000/v2/repository/index", data=b"{}")).read().decode())' > "$out/oom_index.json"
    check "oom_at_load is UNAVAILABLE with an out-of-memory reason" \
      "python3 -c 'import json,sys; e=[m for m in json.load(open(sys.argv[1])) if m[\"name\"]==\"oom_at_load\"][0]; r=e[\"reason\"].lower(); sys.exit(not (e[\"state\"]==\"UNAVAILABLE\" and (\"memory\" in r or \"allocate\" in r)))' '$out/oom_index.json'"
    r=$(get $HTTP/v2/health/ready); echo "health/ready: $r"
    check "readiness is false while a model failed to load" '[[ "$r" == 503* ]]'
    r=$(post_bin $HTTP/v2/models/oom_at_run/infer /tmp/oom_b256.bin "$len256"); echo "oom_at_run batch 256: $r"
    check "a batch that runs out of GPU memory is answered 503" '[[ "$r" == 503* ]]'
    r=$(post_bin $HTTP/v2/models/oom_at_run/infer /tmp/oom_b1.bin "$len1"); echo "oom_at_run batch 1 after: ${r:0:60}"
    check "the model that ran out keeps serving" '[[ "$r" == 200* ]]'
    r=$(post_bin $HTTP/v2/models/resnet50/infer /tmp/oom_b1.bin "$len1"); echo "resnet50 batch 1: ${r:0:60}"
    check "the other models keep serving" '[[ "$r" == 200* ]]'
    r=$(get $HTTP/v2/models/oom_at_run/ready); echo "oom_at_run ready: $r"
    check "oom_at_run stays READY" '[[ "$r" == 200* ]]'
    nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/GPU memory after the OOM: /'
    grep -iE "memory|allocate" "$out/serve_oom.log" | head -10
    stop_server
  } > "$out/oom.txt" 2>&1
  grep -E "^(PASS|FAIL)" "$out/oom.txt"
fi

if [[ " $parts " == *" soak "* ]]; then
  {
    minutes=${SOAK_MINUTES:-10}
    conc=${SOAK_CONCURRENCY:-64}
    repo=/tmp/repo-soak; rm -rf $repo; mkdir -p $repo
    model_dir $repo resnet50 "max_batch_size: 32
$io
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }
$(cuda_params prefer_nhwc 1 enable_cuda_graph 1)"
    start_server $repo "$out/serve_soak.log" || exit 1
    sed -n '/^MODEL/,/^metrics/p' "$out/serve_soak.log"
    echo "t_s,rss_kib,gpu_mib" > "$out/soak_memory.csv"
    ( t0=$(date +%s)
      while kill -0 $pid 2>/dev/null; do
        rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
        gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
        echo "$(( $(date +%s) - t0 )),$rss,$gpu" >> "$out/soak_memory.csv"
        sleep 5
      done ) &
    sampler=$!
    steps=$(python3 -c "print(','.join(['$conc'] * $minutes))")
    echo "\$ ortgpu perf --model resnet50 --concurrency $steps --measurement-interval 20000 --max-trials 3 --threads 4"
    ortgpu perf --url $HTTP --model resnet50 --concurrency "$steps" --measurement-interval 20000 --max-trials 3 \
      --threads 4 --no-progress --html "$out/soak.html" --json > "$out/soak.json" 2> "$out/soak_perf.err"
    echo "perf exit $?"
    kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
    python3 - "$out/soak.json" "$out/soak_memory.csv" <<'PY'
import csv, json, sys
d = json.load(open(sys.argv[1]))
errors = 0
for i, s in enumerate(d.get("steps", [])):
    e = s.get("errors") or {}
    n = sum(v for v in e.values() if isinstance(v, (int, float))) if isinstance(e, dict) else (e or 0)
    errors += n
    print(f"minute {i + 1}: throughput {s.get('throughput')} latency_ms {s.get('latency_ms')} errors {e}")
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["rss_kib"] and r["gpu_mib"]]
warm = [r for r in rows if int(r["t_s"]) >= 60] or rows
rss = [int(r["rss_kib"]) / 1024 for r in warm]
gpu = [int(r["gpu_mib"]) for r in warm]
print(f"errors: {errors}")
if rss:
    print(f"host RSS MiB after warm-up {rss[0]:.0f}, at the end {rss[-1]:.0f}, max {max(rss):.0f} "
          f"({(max(rss) - rss[0]) / rss[0] * 100:+.1f}% over the first sample after warm-up)")
    print(f"GPU memory MiB after warm-up {gpu[0]}, at the end {gpu[-1]}, max {max(gpu)}")
PY
    stop_server
  } > "$out/soak.txt" 2>&1
  tail -4 "$out/soak.txt"
fi
