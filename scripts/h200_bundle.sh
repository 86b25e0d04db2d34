#!/usr/bin/env bash
# The bundle's GPU acceptance (issue 12) on the H200 test machine, from the
# repository root: the unpacked `make package` bundle alone, under `env -i`
# (no LD_LIBRARY_PATH, no PATH), must pass `ortgpu doctor --require gpu` and
# serve ResNet-50 on the GPU. Everything is logged under OUT.
#
#   scripts/h200_bundle.sh --carry          # here, after make package and ../shared/gpu/make-carry
#   scripts/h200_bundle.sh OUT [BUNDLE]     # there, with .gpu-carry sent along
#
# --carry packs build/ortgpu-*-linux-x86_64 less its CUDA EP (230 MB, too big
# to travel) as .gpu-carry/ortgpu-bundle.tar.xz (about 20 MB) and drops what
# this run does not need from .gpu-carry (ort-host.so.1.xz, bundle.tar.xz);
# .gpu-carry/ort-cuda-sm90.so.xz (38 MB) stands in for the EP there.
# BUNDLE: the unpacked bundle folder (bin/, lib/); default the one folder
# /tmp/ortgpu-bundle/ortgpu-*-linux-x86_64, unpacked from
# .gpu-carry/ortgpu-bundle.tar.xz when it is not there. A bundle without
# lib/libonnxruntime_providers_cuda.so gets the sm_90 copy of
# .gpu-carry/ort-cuda-sm90.so.xz.
# ResNet-50 comes from .gpu-carry/export_models.py into /tmp/models, as in
# scripts/h200_serve.sh. perf_budget.txt is the per-GPU figure docs/DEPLOY.md
# sizes replicas with. Exit 0 when every step passed; OUT/summary.txt says which did.
set -u
if [ "${1:-}" = "--carry" ]; then
  set -e
  staged=$(ls -d build/ortgpu-*-linux-x86_64 | head -1)
  [ -f .gpu-carry/ort-cuda-sm90.so.xz ] || { echo "run ../shared/gpu/make-carry first (it makes .gpu-carry/ort-cuda-sm90.so.xz)"; exit 1; }
  tar -C build -cJf .gpu-carry/ortgpu-bundle.tar.xz --exclude=libonnxruntime_providers_cuda.so "$(basename "$staged")"
  rm -f .gpu-carry/ort-host.so.1.xz .gpu-carry/bundle.tar.xz
  du -sh .gpu-carry; exit 0
fi
out=${1:?usage: h200_bundle.sh OUT [BUNDLE] | h200_bundle.sh --carry}
if [ -z "${2:-}" ] && ! ls -d /tmp/ortgpu-bundle/ortgpu-*-linux-x86_64 >/dev/null 2>&1 && [ -f .gpu-carry/ortgpu-bundle.tar.xz ]; then
  mkdir -p /tmp/ortgpu-bundle && tar -xJf .gpu-carry/ortgpu-bundle.tar.xz -C /tmp/ortgpu-bundle
fi
bundle=${2:-$(ls -d /tmp/ortgpu-bundle/ortgpu-*-linux-x86_64 2>/dev/null | head -1)}
mkdir -p "$out"
summary=$out/summary.txt; : >"$summary"
failed=0
step() {  # step NAME EXIT_CODE: one line of the summary
  if [ "$2" -eq 0 ]; then echo "PASS $1" | tee -a "$summary"; else echo "FAIL $1 (exit $2)" | tee -a "$summary"; failed=1; fi
}
[ -x "$bundle/bin/ortgpu" ] || { echo "no bundle: $bundle/bin/ortgpu missing; unpack ortgpu-*-linux-x86_64.tar.gz under /tmp/ortgpu-bundle or pass BUNDLE" | tee -a "$summary"; exit 1; }
ep=$bundle/lib/libonnxruntime_providers_cuda.so
if [ ! -f "$ep" ] && [ -f .gpu-carry/ort-cuda-sm90.so.xz ]; then
  xz -dc .gpu-carry/ort-cuda-sm90.so.xz >"$ep"
  echo "note: lib/libonnxruntime_providers_cuda.so taken from .gpu-carry (sm_90 code only)" | tee -a "$summary"
fi
ortgpu=(env -i "$bundle/bin/ortgpu")

models=/tmp/models
[ -f $models/resnet50.onnx ] || python3 .gpu-carry/export_models.py "$models" >"$out/export.log" 2>&1
R=$models/resnet50.onnx

"${ortgpu[@]}" --version >"$out/version.txt" 2>&1; step "ortgpu --version: $(head -1 "$out/version.txt")" $?
readelf -d "$bundle/bin/ortgpu" | grep -E "RUNPATH|RPATH" >"$out/runpath.txt"
"${ortgpu[@]}" doctor --require gpu --json >"$out/doctor.json" 2>"$out/doctor.err"; step "doctor --require gpu --json" $?
"${ortgpu[@]}" doctor --require gpu --model "$R" >"$out/doctor_resnet50.txt" 2>&1; step "doctor --require gpu --model resnet50.onnx" $?
python3 - "$out/doctor.json" >"$out/doctor_summary.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["findings"]:
    print(f"{f['status']:5} {f['id']:28} {f['seen'][:150]}")
PY

# A one-model repository: ResNet-50 on the GPU in the recommended config of
# docs/BENCHMARKS.md ("H200: GPU turns"): dynamic batching [32], 2 instances,
# NHWC and CUDA graphs (so batches take turns on the GPU).
repo=/tmp/repo-bundle
rm -rf "$repo"; mkdir -p "$repo/resnet50/1"; ln -sf "$R" "$repo/resnet50/1/model.onnx"
cat >"$repo/resnet50/config.pbtxt" <<'EOF'
max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }
EOF
"${ortgpu[@]}" serve --model-repository "$repo" --require-gpu --http-port 8000 --grpc-port 8001 --metrics-port 8002 \
  >"$out/serve.log" 2>&1 &
pid=$!
ready=1
for _ in $(seq 1 600); do
  python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && { ready=0; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 0.2
done
step "serve --require-gpu: resnet50 READY on the GPU" $ready
if [ $ready -eq 0 ]; then
  python3 scripts/infer_digest.py http://127.0.0.1:8000 resnet50 input 1x3x224x224 output 48 >"$out/digest.json" 2>&1
  step "48 concurrent ResNet-50 inferences (scripts/infer_digest.py)" $?
  "${ortgpu[@]}" perf --url http://127.0.0.1:8000 --model resnet50 --concurrency 16 --threads 2 \
    --measurement-interval 3000 --max-trials 4 --no-progress --json >"$out/perf.json" 2>"$out/perf.err"
  step "ortgpu perf --concurrency 16 (from the bundle)" $?
  # The sizing figure of docs/DEPLOY.md: requests/s of one GPU within a 50 ms p99.
  "${ortgpu[@]}" perf --url http://127.0.0.1:8000 --model resnet50 --latency-budget-ms 50 --concurrency 8 \
    --max-concurrency 256 --threads 4 --measurement-interval 3000 --max-trials 4 --no-progress \
    >"$out/perf_budget.txt" 2>&1
  step "ortgpu perf --latency-budget-ms 50 (the per-GPU sizing figure)" $?
  python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8002/metrics").read().decode())' >"$out/metrics.txt" 2>&1
  grep -qE '^nv_inference_queue_duration_us\{model="resnet50"' "$out/metrics.txt" &&
    grep -qE '^nv_inference_request_success\{model="resnet50"' "$out/metrics.txt"
  step "/metrics has the autoscaling series (nv_inference_queue_duration_us, nv_inference_request_success)" $?
  grep -E '^nv_(inference_queue_duration_us|inference_request_success|gpu_utilization|gpu_memory_used_bytes)' \
    "$out/metrics.txt" >"$out/metrics_autoscaling.txt"
fi
kill -TERM $pid 2>/dev/null; wait $pid; step "serve drains and exits 0 on SIGTERM" $?
grep -E "READY|GPU|instance" "$out/serve.log" | head -8 >>"$summary"
exit $failed
