#!/usr/bin/env bash
# Issue 27 on the H200 test machine (docs/MEMORY.md; its figures go to docs/BENCHMARKS.md, "GPU
# memory plan"): from the repository root, with .gpu-carry sent along (make-carry --bundle
# build/ortgpu). Under 9 minutes; every step has its own timeout and the later steps are skipped
# when the clock runs short. Output under LOGDIR:
#   bench_{resnet,bert}[_x2].txt/.html  `ortgpu bench --memory` at batch 1,8,32,64: measured peak,
#                                      predicted, error, the fit (fp32 and fp16; _x2: two sessions,
#                                      --concurrency-mode per-worker, as two instances)
#   serve{1,2}.*                       ResNet-50 and BERT served with 1, then 2 instances: the
#                                      summary's memory lines, the plan's prediction (serve2 plans
#                                      from serve1's profiles), stats memory_usage, the gauges,
#                                      nvidia-smi, and an unload's give-back
#   refuse.*                           --gpu-memory-margin leaving ~12 GiB (88 on the H200): BERT with 16 and 4 instances asked
#                                      for beside a ResNet-50 under perf (refused before they
#                                      allocate), then 1 instance (fits); perf must see 0 errors
#   growth_w{1,2}_*                    ResNet-50 and the MLP with 1, then 2 workers per instance:
#                                      NVML after READY and after load (the memory load adds)
#   three.*                            ResNet-50, BERT and the MLP served together: each alone under
#                                      perf, then all three under one multi-model perf; goodput
#                                      within 50 ms, the memory the plan predicted (from the
#                                      profiles a first start recorded) against NVML
#   steps.txt                          what ran when
#
#   scripts/h200_issue27.sh /tmp/i27
#   PARTS="three" scripts/h200_issue27.sh /tmp/i27    only the parts named (bench serve refuse three growth)
set -u
L=${1:?usage: scripts/h200_issue27.sh LOGDIR}
mkdir -p "$L"
source .gpu-carry/stage.sh
T0=$(date +%s)
M=/tmp/models MC=/tmp/mc27
mkdir -p $M
rm -rf $MC  # the profiles of this run only: serve1 measures, serve2 predicts from it
step() { echo "== $(date -u +%T) +$(( $(date +%s) - T0 ))s $*" | tee -a "$L/steps.txt"; }
want() { [[ " ${PARTS:-bench serve refuse three growth} " == *" $1 "* ]]; }
left() { echo $(( 530 - ($(date +%s) - T0) )); }  # seconds before the 9-minute mark, less a margin
smi() { nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader >> "$1" 2>&1; }
http() {  # METHOD URL [BODY]: prints the status line and body
  python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else (b"" if method == "POST" else None)
req = urllib.request.Request(url, data=data, method=method)
try:
    with urllib.request.urlopen(req, timeout=600) as r:
        print(r.status); print(r.read().decode()[:20000])
except urllib.error.HTTPError as e:
    print(e.code); print(e.read().decode()[:20000])
except Exception as e:
    print("ERR", e)
PY
}
wait_ready() {  # PORT SECONDS
  for _ in $(seq 1 $(( $2 * 5 ))); do
    python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$1/v2/health/ready')" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
gauges() { http GET http://127.0.0.1:8002/metrics | grep -E "ortgpu_model_(unload_)?gpu_memory_bytes|nv_gpu_memory_used" >> "$1"; }
config() {  # DIR NAME FILE COUNT MAX_BATCH PREFERRED
  mkdir -p "$1/$2/1"; ln -sf "$3" "$1/$2/1/model.onnx"
  cat > "$1/$2/config.pbtxt" <<CFG
max_batch_size: $5
instance_group [{ count: $4 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [$6] max_queue_delay_microseconds: 1000 }
CFG
}
repo() {  # DIR NAME:FILE:COUNT:MAX_BATCH:PREFERRED ...: a fresh repository of those models
  local d=$1 spec name file count mb pref; shift; rm -rf "$d"
  for spec in "$@"; do
    IFS=: read -r name file count mb pref <<< "$spec"
    config "$d" "$name" "$file" "$count" "$mb" "$pref"
  done
}
SERVE="ortgpu serve --http-port 8000 --metrics-port 8002 --grpc-port -1 --model-cache-dir $MC --warmup-shape seq:128"
start_serve() {  # NAME DIR [FLAGS...]: serves DIR in the background (pid in $pid), logs NAME.out/.log, waits for ready
  local name=$1 dir=$2; shift 2
  $SERVE --model-repository "$dir" "$@" > "$L/$name.out" 2> "$L/$name.log" &
  pid=$!
  wait_ready 8000 120 || echo "not ready after 120 s" >> "$L/$name.out"
}
BS="--shape seq:128 --int-range input_ids:0:30000"
# perf names each input's request shape (run m2: `--shape seq:128` left BERT's inputs unsized there)
PS="--shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 --int-range input_ids:0:30000"

step export
timeout 240 python3 .gpu-carry/export_models.py $M resnet50 bert mlp > "$L/export.txt" 2>&1
R=$M/resnet50.onnx B=$M/bert.onnx P=$M/mlp.onnx
smi "$L/nvidia_smi_idle.txt"

# 1. bench --memory: measured against predicted at 1, 8, 32, 64; fp32 and fp16; one and two sessions.
if want bench; then
step bench-resnet
timeout 100 ortgpu bench $R --provider cuda --memory --precision fp32,fp16 --io bound --batch 1,8,32,64 \
  --iterations 20 --warmup 3 --no-check --no-progress --html "$L/bench_resnet.html" > "$L/bench_resnet.txt" 2>&1
echo "rc=$?" >> "$L/bench_resnet.txt"
step bench-bert
timeout 130 ortgpu bench $B --provider cuda --memory --precision fp32,fp16 --io bound --batch 1,8,32,64 $BS \
  --iterations 10 --warmup 2 --no-check --no-progress --html "$L/bench_bert.html" > "$L/bench_bert.txt" 2>&1
echo "rc=$?" >> "$L/bench_bert.txt"
for m in resnet bert; do
  [ "$(left)" -gt 380 ] || { step "skip bench-${m}_x2 (time)"; continue; }
  step bench-${m}_x2
  f=$R; extra=""; [ $m = bert ] && { f=$B; extra=$BS; }
  timeout 90 ortgpu bench $f --provider cuda --memory --precision fp32,fp16 --io bound --batch 1,8,32,64 $extra \
    --concurrency 2 --concurrency-mode per-worker --iterations 10 --warmup 2 --no-check --no-progress \
    > "$L/bench_${m}_x2.txt" 2>&1
  echo "rc=$?" >> "$L/bench_${m}_x2.txt"
done
fi

# 2. serve with 1, then 2 instances: the second load is planned from the first one's profiles.
for n in 1 2; do
  want serve || continue
  [ "$(left)" -gt 200 ] || { step "skip serve$n (time)"; continue; }
  step serve$n
  d=/tmp/repo27_$n
  repo $d resnet50:$R:$n:64:64 bert:$B:$n:32:32
  start_serve serve$n $d --model-control explicit --load-model '*'
  for m in resnet50 bert; do http GET http://127.0.0.1:8000/v2/models/$m/stats > "$L/serve${n}_stats_$m.json"; done
  gauges "$L/serve${n}_metrics.txt"; smi "$L/serve${n}_nvidia_smi.txt"
  # Give-back: unload ResNet-50 and read what the GPU holds after.
  http POST http://127.0.0.1:8000/v2/repository/models/resnet50/unload > "$L/serve${n}_unload.txt"
  sleep 1; gauges "$L/serve${n}_unload.txt"; smi "$L/serve${n}_unload.txt"
  kill $pid; wait $pid
  grep -E "memory plan|is READY|arena by batch|unloaded:|UNAVAILABLE" "$L/serve$n.log" > "$L/serve${n}_memory.txt"
done

# 3. A load that would not fit, refused while ResNet-50 serves under perf with no error.
if want refuse && [ "$(left)" -gt 130 ]; then
  step refuse
  d=/tmp/repo27_refuse
  repo $d resnet50:$R:1:64:64 bert16:$B:16:32:32 bert4:$B:4:32:32 bert1:$B:1:32:32
  # The margin leaves about 12 GiB to plan with on any card (88% on the H200's 140 GB; run m2 on an
  # H100 left 9 GiB with 88%, and one BERT instance no longer fit beside ResNet-50).
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
  margin=$(( 100 - 12 * 1024 * 100 / total_mib ))
  [ "$margin" -gt 90 ] && margin=90  # serve takes at most 90% (run m3: 92 on the H200 was refused)
  start_serve refuse $d --model-control explicit --load-model resnet50 --gpu-memory-margin $margin
  timeout 60 ortgpu perf --url http://127.0.0.1:8000 --metrics-url off --model resnet50 --concurrency 8 \
    --measurement-interval 2000 --max-trials 6 --no-progress > "$L/refuse_perf.txt" 2>&1 &
  perf=$!
  sleep 2
  for m in bert16 bert4 bert1; do
    echo "== load $m" >> "$L/refuse_loads.txt"
    http POST http://127.0.0.1:8000/v2/repository/models/$m/load >> "$L/refuse_loads.txt"
    smi "$L/refuse_loads.txt"
  done
  http POST http://127.0.0.1:8000/v2/repository/index >> "$L/refuse_loads.txt"
  wait $perf; echo "perf rc=$? (0: no request failed)" >> "$L/refuse_perf.txt"
  kill $pid; wait $pid
  grep -E "memory plan|is READY|does not fit|UNAVAILABLE|out of memory" "$L/refuse.log" > "$L/refuse_memory.txt"
else
  step "skip refuse (time)"
fi

# 4. Three models on one GPU: each alone, then together under one perf; goodput within 50 ms.
if want three && [ "$(left)" -gt 60 ]; then
  step three
  d=/tmp/repo27_three
  repo $d resnet50:$R:1:64:64 bert:$B:1:32:32 mlp:$P:1:64:64
  # A first start records each model's profile in the cache; the second plans from them (the
  # plan's "needs" lines, with the second worker's activations, against NVML under load).
  start_serve three_profile $d; kill $pid; wait $pid
  start_serve three $d
  smi "$L/three_nvidia_smi.txt"; gauges "$L/three_metrics.txt"
  PERF="ortgpu perf --url http://127.0.0.1:8000 --metrics-url http://127.0.0.1:8002/metrics --measurement-interval 2000 --latency-budget-ms 50 --no-progress $PS"
  for m in resnet50 bert mlp; do
    [ "$(left)" -gt 25 ] || break
    step "three: $m alone"
    timeout 30 $PERF --model $m:1 --concurrency 16 > "$L/three_alone_$m.txt" 2>&1; echo "rc=$?" >> "$L/three_alone_$m.txt"
  done
  if [ "$(left)" -gt 15 ]; then
    step "three: together"
    timeout 30 $PERF --model resnet50:1,bert:1,mlp:1 --concurrency 48 > "$L/three_together.txt" 2>&1
    echo "rc=$?" >> "$L/three_together.txt"
  fi
  smi "$L/three_nvidia_smi.txt"
  for m in resnet50 bert mlp; do http GET http://127.0.0.1:8000/v2/models/$m/stats > "$L/three_stats_$m.json"; done
  kill $pid; wait $pid
  grep -E "memory plan|is READY|arena by batch" "$L/three.log" > "$L/three_memory.txt"
else
  step "skip three (time)"
fi
# 5. Growth under load (why run m3's three-model total was 14% under): ResNet-50 (1 instance, [64])
# and the MLP served with 1, then 2 workers per instance sharing the sessions; NVML after READY,
# after perf at 32 connections per model, and each model's stats memory_usage.
if want growth && [ "$(left)" -gt 50 ]; then
  for w in 1 2; do
    step "growth: $w worker(s)"
    d=/tmp/repo27_growth
    repo $d resnet50:$R:1:64:64 mlp:$P:1:64:64
    for m in resnet50 mlp; do printf 'parameters { key: "workers_per_instance" value { string_value: "%s" } }\n' $w >> $d/$m/config.pbtxt; done
    rm -rf $MC
    start_serve growth_w$w $d
    smi "$L/growth_w${w}_smi.txt"
    PERF="ortgpu perf --url http://127.0.0.1:8000 --measurement-interval 2000 --no-progress"
    timeout 25 $PERF --model resnet50:1,mlp:1 --concurrency 64 > "$L/growth_w${w}_perf.txt" 2>&1
    smi "$L/growth_w${w}_smi.txt"
    for m in resnet50 mlp; do http GET http://127.0.0.1:8000/v2/models/$m/stats > "$L/growth_w${w}_stats_$m.json"; done
    kill $pid; wait $pid
    grep -E "is READY|arena by batch|unloaded" "$L/growth_w$w.log" > "$L/growth_w${w}_memory.txt"
  done
else
  step "skip growth (time)"
fi
step done
