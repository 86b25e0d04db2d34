#!/usr/bin/env bash
# The serving measurements of docs/BENCHMARKS.md ("ortgpu serve: the data
# path"), on the GPU test machine, from the repository root, after
# `source .gpu-carry/stage.sh` (see /work/shared/gpu/README.md). wrk and, when
# built, `ortgpu perf` must be in the carried bundle, and the benchmark
# programs (`cmake --build build --target benchmarks`, not built by default).
#
#   scripts/h200_serve.sh OUTDIR [shapes] [ceiling] [resnet] [bert] [mlp] [perfwrk] [grpc] [weights] [cudashm] [padding]   (default: all)
#
# ceiling what loopback HTTP alone gives for ResNet-50's 602 KB binary
#         request: wrk against the bare Beast server (no model, no decode)
# shapes  ortgpu_shape_switch on ResNet-50: what a change of batch size costs
# resnet  in-process bench (batch 32) beside served ResNet-50 (64 connections,
#         batch-1 binary requests) with dynamic batching and without
# bert    the same for BERT-base, sequence 128
# mlp     the tiny MLP, 1 connection: served p50 against in-process p50, with
#         and without --busy-poll-us
# perfwrk scripts/perf_vs_wrk.sh: ortgpu perf against wrk on a bare server
# grpc    the tiny MLP (1 connection) and ResNet-50 (64 connections, batch-1
#         requests, the best served config: [32], 2 instances, CUDA graphs)
#         through `ortgpu perf`, over HTTP and over gRPC (-i grpc) against the
#         same server, beside bench --io cuda-graph (GRPC_RESNET=0: the MLP only,
#         GRPC_MLP=0: ResNet-50 only);
#         MLP_SERVE_FLAGS and MLP_PERF_FLAGS: ';'-separated variants of serve's
#         and perf's flags for the MLP (perf's: each against each server start),
#         RESNET_PERF_THREADS: perf --threads values for ResNet-50 (4); after
#         each perf step, the server's minor page faults per inference and
#         its resident size ("server: ...")
# weights GPU memory after load with 1, 2 and 4 instances, config parameter
#         share_weights on against off, for ResNet-50 (the b32-2inst-graph
#         config, and a plain one without prefer_nhwc or graphs) and BERT:
#         one server start each, which answers scripts/infer_digest.py once
#         (on's outputs compared with off's) and stops; into weights.txt.
#         WEIGHTS_MODELS (resnet-graph resnet-plain resnet-same bert; resnet-same
#         is plain with arena_extend_strategy=kSameAsRequested),
#         WEIGHTS_INSTANCES (1 2 4) and WEIGHTS_SHARES (off on; auto too)
#         narrow it
# padding ResNet-50 on the best served config with adaptive_padding false
#         against true (issue 25): 1 client's p50 and 64 connections'
#         throughput, batch_stats, the summary's padding line
# cudashm ResNet-50 through CUDA shared memory (issue 10) on the best served
#         config (b32-2inst-graph): scripts/cuda_shm_client.py (outputs
#         against binary HTTP, latency of each), then, when `ortgpu perf`
#         has --shared-memory, perf with `--shared-memory cuda` and without
#         (64 connections), each as a ratio of bench --io cuda-graph (batch 32)
set -u
out=${1:?usage: h200_serve.sh OUTDIR [shapes] [resnet] [bert] [mlp]}; shift
parts=${*:-shapes ceiling resnet bert mlp perfwrk grpc weights cudashm padding}
mkdir -p "$out"
models=/tmp/models
[ -f $models/resnet50.onnx ] || python3 .gpu-carry/export_models.py "$models" > "$out/export.log" 2>&1
R=$models/resnet50.onnx B=$models/bert.onnx M=$models/mlp.onnx
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib
LUA=benchmarks/wrk_binary_infer.lua
DURATION=${DURATION:-15}
have_perf() { ortgpu perf --help >/dev/null 2>&1; }
# The best served ResNet-50 config (the resnet part's b32-2inst-graph): [32],
# 2 instances, CUDA graphs.
BEST_RESNET_CONFIG='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }'

# serve_repo NAME MODEL CONFIG_TEXT: a one-model repository in /tmp/repo-NAME
serve_repo() {
  local dir=/tmp/repo-$1
  rm -rf "$dir"; mkdir -p "$dir/$1/1"; ln -sf "$2" "$dir/$1/1/model.onnx"; printf '%s\n' "$3" > "$dir/$1/config.pbtxt"
  echo "$dir"
}
# start_server REPO LOG: starts ortgpu serve on 8000/8002, waits until ready
start_server() {
  ortgpu serve --model-repository "$1" --http-port 8000 --metrics-port 8002 ${SERVE_FLAGS:-} > "$2" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && return 0
    kill -0 $pid 2>/dev/null || { echo "serve died:"; tail -20 "$2"; return 1; }
    sleep 0.2
  done
  echo "serve never became ready"; tail -20 "$2"; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; return 1
}
stop_server() { kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; }
stats() { python3 -c 'import sys, urllib.request as u; print(u.urlopen("http://127.0.0.1:8000/v2/models/%s/stats" % sys.argv[1]).read().decode())' "$1"; }
# load NAME MODEL BODY JSON_LEN CONNECTIONS [PERF FLAGS...]: ortgpu perf (the
# figure recorded), then wrk for the same load as a cross-check
load() {
  local name=$1 model=$2 body=$3 len=$4 conns=$5; shift 5
  echo "--- $name: ortgpu perf --concurrency $conns $*"
  ortgpu perf --url http://127.0.0.1:8000 --model "$model" --concurrency "$conns" --threads 2 --measurement-interval 3000 \
    --max-trials 6 --no-progress --json "$@" > "$out/perf_$name.json" 2> "$out/perf_$name.err"; echo "exit $?"
  python3 - "$out/perf_$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d.get("steps", []):
    print(json.dumps({k: s.get(k) for k in ("load", "throughput", "latency_ms", "stable", "server", "outside_server_us", "gpu", "errors")})[:1500])
PY
  echo "--- $name: wrk -t4 -c$conns -d${DURATION}s (binary requests of $(stat -c %s "$body") bytes)"
  # The server's busiest threads 3 s into the wrk run (TOP=1).
  [ "${TOP:-0}" = 1 ] && (sleep 3; { top -b -n 1 | head -14; top -H -b -n 1 -p "$pid" | head -22; } > "$out/top_$name.txt") &
  BODY_FILE=$body JSON_LEN=$len wrk -t4 -c"$conns" -d"${DURATION}s" --latency -s $LUA "http://127.0.0.1:8000/v2/models/$model/infer" |
    grep -E "Latency|50%|99%|Requests/sec|Non-2xx|Socket"
  echo "--- batch_stats after the load"; stats "$model" | python3 -c 'import json,sys; m=json.load(sys.stdin)["model_stats"][0]; print([(b["batch_size"], b["compute_infer"]["count"], round(b["compute_input"]["ns"]/max(1,b["compute_input"]["count"])/1e6,2), round(b["compute_infer"]["ns"]/max(1,b["compute_infer"]["count"])/1e6,2)) for b in m["batch_stats"]])'
}

if [[ " $parts " == *" shapes "* ]]; then
  {
    for opts in "prefer_nhwc=1" "prefer_nhwc=0" "prefer_nhwc=1 cudnn_conv_algo_search=HEURISTIC" \
                "prefer_nhwc=1 arena_extend_strategy=kSameAsRequested"; do
      echo "\$ ortgpu_shape_switch $R cuda 1,16,32 $opts"; ortgpu_shape_switch "$R" cuda 1,16,32 $opts
    done
    echo "\$ ortgpu_shape_switch $R cuda 1,2,4,8,12,16,20,24,28,32 prefer_nhwc=1"
    ortgpu_shape_switch "$R" cuda 1,2,4,8,12,16,20,24,28,32 prefer_nhwc=1
  } > "$out/shapes.txt" 2>&1
fi

if [[ " $parts " == *" ceiling "* ]]; then
  {
    len=$(python3 scripts/make_binary_request.py /tmp/resnet_b1.bin input:FP32:1x3x224x224 --output output)
    for threads in 4 8; do
      ortgpu_fixed_response_server 8010 $threads > /dev/null 2>&1 & fpid=$!
      sleep 0.5
      for wt in 4 8; do
        echo "--- bare Beast server, $threads threads; wrk -t$wt -c64 -d${DURATION}s, $(stat -c %s /tmp/resnet_b1.bin)-byte bodies"
        BODY_FILE=/tmp/resnet_b1.bin JSON_LEN=$len wrk -t$wt -c64 -d"${DURATION}s" --latency -s $LUA http://127.0.0.1:8010/v2/models/fixed/infer |
          grep -E "50%|99%|Requests/sec|Transfer"
      done
      kill $fpid; wait $fpid 2>/dev/null
    done
  } > "$out/ceiling.txt" 2>&1
fi

if [[ " $parts " == *" resnet "* ]]; then
  {
    for io in host bound cuda-graph; do
      echo "\$ ortgpu bench $R --provider cuda --batch 32 --io $io --cuda-option prefer_nhwc=1 --duration 4"
      ortgpu bench "$R" --provider cuda --batch 32 --io $io --cuda-option prefer_nhwc=1 --duration 4 --no-check --no-progress | tail -3
    done
    len=$(python3 scripts/make_binary_request.py /tmp/resnet_b1.bin input:FP32:1x3x224x224 --output output)
    base='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } }] } }'
    graph_base='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "prefer_nhwc" value: "1" } parameters { key: "enable_cuda_graph" value: "1" } }] } }'
    nonhwc_graph_base='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "enable_cuda_graph" value: "1" } }] } }'
    # A variant ending in -graph is the same config with enable_cuda_graph=1;
    # mem-N only loads N instances ([16]) and records GPU memory; null-VARIANT
    # is VARIANT with the ResNet-shaped model that does nothing
    # (scripts/make_null_model.py): the data path's ceiling.
    [ -f $models/null.onnx ] || python3 scripts/make_null_model.py $models/null.onnx
    for variant in ${RESNET_VARIANTS:-b16-32-1inst b16-32-2inst b16-3inst b32-2inst nobatching}; do
      config_base=$base model_file=$R null=0 turns='' turn_tag=''
      # -turns / -noturns: config parameter gpu_turns on / off (default auto).
      if [[ $variant == *-noturns ]]; then turns=off; variant=${variant%-noturns}; turn_tag=-noturns;
      elif [[ $variant == *-turns ]]; then turns=on; variant=${variant%-turns}; turn_tag=-turns; fi
      if [[ $variant == null-* ]]; then model_file=$models/null.onnx null=1; variant=${variant#null-}; fi
      if [[ $variant == *-graph ]]; then config_base=$graph_base; variant=${variant%-graph}; tag=$variant-graph; else tag=$variant; fi
      [ $null = 1 ] && tag=null-$tag
      tag=$tag$turn_tag
      [ -n "$turns" ] && config_base="$config_base
parameters { key: \"gpu_turns\" value { string_value: \"$turns\" } }"
      if [[ $variant == mem-* ]]; then
        n=${variant#mem-}
        repo=$(serve_repo resnet50 "$R" "$config_base
instance_group [{ count: $n kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }")
        start_server $repo "$out/serve_resnet_$tag.log" || continue
        echo "=== ResNet-50 $tag: $(grep -m1 'is READY' "$out/serve_resnet_$tag.log" | sed 's/.*READY/READY/')"
        nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed "s/^/GPU memory with $n instances ($tag): /"
        stop_server
        continue
      fi
      digest_only=0
      case $variant in
        g1w1) config_base=$graph_base; digest_only=1; extra='instance_group [{ count: 1 kind: KIND_GPU }]
parameters { key: "workers_per_instance" value { string_value: "1" } }
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }' ;;
        g1w1-nonhwc) config_base=$nonhwc_graph_base; digest_only=1; extra='instance_group [{ count: 1 kind: KIND_GPU }]
parameters { key: "workers_per_instance" value { string_value: "1" } }
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }' ;;
        plain-nonhwc) config_base=$(echo "$nonhwc_graph_base" | grep -v optimization); digest_only=1; extra='instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }' ;;
        b32-1inst) extra='instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }' ;;
        b16-32-1inst) extra='instance_group [{ count: 1 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }' ;;
        b16-32-2inst) extra='instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }' ;;
        b32-2inst) extra='instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }' ;;
        b32-3inst) extra='instance_group [{ count: 3 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }' ;;
        b16-4inst) extra='instance_group [{ count: 4 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }' ;;
        b16-3inst) extra='instance_group [{ count: 3 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16] max_queue_delay_microseconds: 2000 }' ;;
        nobatching) extra='instance_group [{ count: 1 kind: KIND_GPU }]' ;;
      esac
      repo=$(serve_repo resnet50 "$model_file" "$config_base
$extra")
      echo "=== ResNet-50 $tag"; grep -E "instance|dynamic|graph|gpu_turns" $repo/resnet50/config.pbtxt
      start_server $repo "$out/serve_resnet_$tag.log" || continue
      grep -E "resnet50|WARMUP|warn" "$out/serve_resnet_$tag.log" | head -6
      # The same 48 random images (sent at once, so batched) through every
      # variant: their outputs must agree (scripts/infer_digest.py).
      [ $null = 0 ] && python3 scripts/infer_digest.py http://127.0.0.1:8000 resnet50 input 1x3x224x224 output 48 > "$out/digest_$tag.json" &&
        for d in "$out"/digest_*.json; do [ "$d" = "$out/digest_$tag.json" ] || { echo -n "outputs against $(basename "$d"): "; python3 scripts/infer_digest.py --compare "$d" "$out/digest_$tag.json"; }; done
      nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/GPU memory after load: /'
      if [ "$digest_only" = 1 ]; then stop_server; continue; fi
      if [ "$variant" = b16-32-1inst ]; then
        # Cold start: the first 30 s after READY against the next 15 s.
        echo "--- cold start: wrk -c64 for the first 30 s after READY, then 15 s steady"
        BODY_FILE=/tmp/resnet_b1.bin JSON_LEN=$len wrk -t4 -c64 -d30s --latency -s $LUA http://127.0.0.1:8000/v2/models/resnet50/infer | grep -E "99%|Requests/sec"
        BODY_FILE=/tmp/resnet_b1.bin JSON_LEN=$len wrk -t4 -c64 -d15s --latency -s $LUA http://127.0.0.1:8000/v2/models/resnet50/infer | grep -E "99%|Requests/sec"
      fi
      load "resnet_$tag" resnet50 /tmp/resnet_b1.bin "$len" ${RESNET_CONCURRENCY:-64}
      [ $null = 0 ] && python3 scripts/infer_digest.py http://127.0.0.1:8000 resnet50 input 1x3x224x224 output 48 > "$out/digest_after_$tag.json" &&
        { echo -n "outputs after the load against before: "; python3 scripts/infer_digest.py --compare "$out/digest_$tag.json" "$out/digest_after_$tag.json"; }
      nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
      stop_server
    done
  } > "$out/resnet.txt" 2>&1
fi

if [[ " $parts " == *" bert "* ]]; then
  {
    ortgpu bench "$B" --provider cuda --batch 32 --io bound --concurrency 2 --concurrency-mode per-worker \
      --shape input_ids:32x128 --shape attention_mask:32x128 --shape token_type_ids:32x128 --int-range input_ids:0:30000 \
      --duration 4 --no-check --no-progress | tail -4
    len=$(python3 scripts/make_binary_request.py /tmp/bert_b1.bin input_ids:INT64:1x128 attention_mask:INT64:1x128 token_type_ids:INT64:1x128)
    # BERT_VARIANTS: plain (the issue's config), graph (enable_cuda_graph=1)
    # and turns (gpu_turns on).
    for variant in ${BERT_VARIANTS:-plain}; do
      graph_opt=''
      [ "$variant" = turns ] && graph_opt='parameters { key: "gpu_turns" value { string_value: "on" } }'
      [ "$variant" = graph ] && graph_opt='optimization { execution_accelerators { gpu_execution_accelerator [{ name: "cuda" parameters { key: "enable_cuda_graph" value: "1" } }] } }'
      repo=$(serve_repo bert "$B" "max_batch_size: 32
input [{ name: \"input_ids\" data_type: TYPE_INT64 dims: [128] }, { name: \"attention_mask\" data_type: TYPE_INT64 dims: [128] }, { name: \"token_type_ids\" data_type: TYPE_INT64 dims: [128] }]
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }
$graph_opt")
      echo "=== BERT $variant"
      start_server $repo "$out/serve_bert_$variant.log" && { grep -E "READY|warn" "$out/serve_bert_$variant.log" | head -3; load "bert_$variant" bert /tmp/bert_b1.bin "$len" 64; stop_server; }
    done
  } > "$out/bert.txt" 2>&1
fi

if [[ " $parts " == *" mlp "* ]]; then
  {
    ortgpu bench "$M" --provider cuda --batch 1 --duration 4 --no-check --no-progress | tail -3
    len=$(python3 scripts/make_binary_request.py /tmp/mlp_b1.bin input:FP32:1x256)
    repo=$(serve_repo mlp "$M" 'max_batch_size: 8
instance_group [{ count: 1 kind: KIND_GPU }]')
    # Serve flag sets to compare, ';'-separated.
    IFS=';' read -ra variants <<< "${MLP_SERVE_FLAGS:---busy-poll-us 0;--http-threads 2 --busy-poll-us 300}"
    for flags in "${variants[@]}"; do
      tag=$(echo "$flags" | tr -cd '[:alnum:]')
      SERVE_FLAGS="$flags" start_server $repo "$out/serve_mlp_$tag.log" || continue
      echo "=== mlp, serve $flags: wrk -t1 -c1 -d8s"
      BODY_FILE=/tmp/mlp_b1.bin JSON_LEN=$len wrk -t1 -c1 -d8s --latency -s $LUA http://127.0.0.1:8000/v2/models/mlp/infer | grep -E "50%|90%|99%|Requests/sec"
      load "mlp_$tag" mlp /tmp/mlp_b1.bin "$len" 1
      stop_server
    done
    ortgpu bench "$M" --provider cuda --batch 1 --duration 4 --no-check --no-progress | tail -3
  } > "$out/mlp.txt" 2>&1
fi

# server_mark MODEL [BEFORE]: the server's minor page faults, resident size and
# MODEL's inference count; with BEFORE (an earlier mark), the faults per
# inference since then
server_mark() {
  python3 - "$pid" "$1" "${2:-}" <<'PY'
import json, sys, urllib.request as u
pid, model, before = sys.argv[1], sys.argv[2], sys.argv[3]
faults = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])
rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
stats = json.load(u.urlopen(f"http://127.0.0.1:8000/v2/models/{model}/stats"))
count = sum(s["inference_count"] for s in stats["model_stats"])
if before:
    f0, c0 = (int(x) for x in before.split()[:2])
    print(f"server: {(faults - f0) / max(count - c0, 1):.1f} minor page faults per inference, RSS {rss // 1024} MiB")
else:
    print(faults, count)
PY
}

# perf_both NAME MODEL CONNECTIONS THREADS [PERF_FLAGS]: ortgpu perf over HTTP, then over gRPC
perf_both() {
  local mark
  for proto in http grpc; do
    echo "--- $1: ortgpu perf -i $proto --concurrency $3 --threads $4 ${5:-}"
    mark=$(server_mark "$2")
    ortgpu perf -i $proto --url http://127.0.0.1:8000 --grpc-url 127.0.0.1:8001 --model "$2" --concurrency "$3" \
      --threads "$4" --measurement-interval 3000 --max-trials 6 --no-progress ${5:-}
    echo "exit $?"
    server_mark "$2" "$mark"
  done
}

if [[ " $parts " == *" grpc "* ]]; then
  {
    [ "${GRPC_MLP:-1}" = 1 ] && ortgpu bench "$M" --provider cuda --batch 1 --duration 4 --no-check --no-progress | tail -3
    repo=$(serve_repo mlp "$M" 'max_batch_size: 8
instance_group [{ count: 1 kind: KIND_GPU }]')
    variants=()
    [ "${GRPC_MLP:-1}" = 1 ] && IFS=';' read -ra variants <<< "${MLP_SERVE_FLAGS:---busy-poll-us 0;--http-threads 2 --busy-poll-us 300}"
    for flags in "${variants[@]}"; do
      tag=$(echo "$flags" | tr -cd '[:alnum:]')
      SERVE_FLAGS="$flags" start_server $repo "$out/serve_grpc_mlp_$tag.log" || continue
      echo "=== mlp, serve $flags"; grep -E "^gRPC:" "$out/serve_grpc_mlp_$tag.log"
      IFS=';' read -ra perf_variants <<< "${MLP_PERF_FLAGS:-}"
      for pflags in "${perf_variants[@]:-}"; do perf_both "mlp_$tag" mlp 1 1 "$pflags"; done
      stop_server
    done
    [ "${GRPC_RESNET:-1}" = 1 ] && ortgpu bench "$R" --provider cuda --batch 32 --io cuda-graph --cuda-option prefer_nhwc=1 --duration 4 --no-check --no-progress | tail -3
    repo=$(serve_repo resnet50 "$R" "$BEST_RESNET_CONFIG")
    if [ "${GRPC_RESNET:-1}" = 1 ] && start_server $repo "$out/serve_grpc_resnet.log"; then
      for t in ${RESNET_PERF_THREADS:-4}; do perf_both resnet50 resnet50 ${RESNET_CONCURRENCY:-64} $t; done
      nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
      stop_server
    fi
  } > "$out/grpc.txt" 2>&1
fi

# items_per_s FILE: the largest throughput.items_per_s in a bench or perf JSON
items_per_s() {
  python3 - "$1" <<'PY'
import json, sys
best = 0.0
def walk(v):
    global best
    if isinstance(v, dict):
        t = v.get("throughput")
        if isinstance(t, dict) and isinstance(t.get("items_per_s"), (int, float)):
            best = max(best, t["items_per_s"])
        for x in v.values(): walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
try:
    walk(json.load(open(sys.argv[1])))
except Exception:
    pass
print(round(best, 1))
PY
}

if [[ " $parts " == *" cudashm "* ]]; then
  {
    ortgpu bench "$R" --provider cuda --batch 32 --io cuda-graph --cuda-option prefer_nhwc=1 --duration 4 --no-check \
      --no-progress --json > "$out/cudashm_bench.json" 2> "$out/cudashm_bench.err"
    in_process=$(items_per_s "$out/cudashm_bench.json")
    echo "in-process (bench --io cuda-graph, batch 32): $in_process images/s"
    repo=$(serve_repo resnet50 "$R" "$BEST_RESNET_CONFIG")
    if start_server $repo "$out/serve_cudashm_resnet.log"; then
      echo "=== ResNet-50 b32-2inst-graph through CUDA shared memory: scripts/cuda_shm_client.py"
      python3 scripts/cuda_shm_client.py --url http://127.0.0.1:8000 --model resnet50 --iterations 50 | tee "$out/cudashm_client.json"
      echo "client exit ${PIPESTATUS[0]}"
      if ortgpu perf --help 2>&1 | grep -q -- '--shared-memory'; then
        for shm in cuda binary; do
          flag=''; [ $shm = cuda ] && flag='--shared-memory cuda'
          echo "--- ortgpu perf $flag --concurrency ${RESNET_CONCURRENCY:-64} (batch-1 requests)"
          ortgpu perf --url http://127.0.0.1:8000 --model resnet50 $flag --concurrency ${RESNET_CONCURRENCY:-64} \
            --threads 4 --measurement-interval 3000 --max-trials 6 --no-progress --json > "$out/cudashm_perf_$shm.json" \
            2> "$out/cudashm_perf_$shm.err"
          echo "exit $?"; tail -3 "$out/cudashm_perf_$shm.err"
          served=$(items_per_s "$out/cudashm_perf_$shm.json")
          python3 -c 'import sys; s, b = float(sys.argv[1]), float(sys.argv[2]); print("served (%s): %.1f images/s, %.1f%% of in-process (%.1f)" % (sys.argv[3], s, 100 * s / b if b else 0, b))' \
            "$served" "$in_process" "$shm"
        done
      else
        echo "ortgpu perf has no --shared-memory flag here: only the client ran"
      fi
      stats resnet50 | python3 -c 'import json,sys; m=json.load(sys.stdin)["model_stats"][0]; print("batch_stats:", [(b["batch_size"], b["compute_infer"]["count"], round(b["compute_input"]["ns"]/max(1,b["compute_input"]["count"])/1e6,3)) for b in m["batch_stats"]])'
      grep -iE "error|warn|fail" "$out/serve_cudashm_resnet.log" | sort | uniq -c | sort -rn | head -8
      stop_server
    fi
  } > "$out/cudashm.txt" 2>&1
fi

if [[ " $parts " == *" weights "* ]]; then
  {
    resnet_io='max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [1000] }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }'
    bert_cfg='max_batch_size: 32
input [{ name: "input_ids" data_type: TYPE_INT64 dims: [128] }, { name: "attention_mask" data_type: TYPE_INT64 dims: [128] }, { name: "token_type_ids" data_type: TYPE_INT64 dims: [128] }]
dynamic_batching { preferred_batch_size: [16, 32] max_queue_delay_microseconds: 2000 }'
    nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/GPU memory before any server: /'
    for model in ${WEIGHTS_MODELS:-resnet-graph resnet-plain bert}; do
      case $model in
        resnet-graph) file=$R name=resnet50 digest="input 1x3x224x224 output" cfg="$resnet_io
optimization { execution_accelerators { gpu_execution_accelerator [{ name: \"cuda\" parameters { key: \"prefer_nhwc\" value: \"1\" } parameters { key: \"enable_cuda_graph\" value: \"1\" } }] } }" ;;
        resnet-plain) file=$R name=resnet50 digest="input 1x3x224x224 output" cfg=$resnet_io ;;
        # The arena grows by what is asked for, not the next power of two:
        # shows whether the arena's rounding hides what sharing saves.
        resnet-same) file=$R name=resnet50 digest="input 1x3x224x224 output" cfg="$resnet_io
optimization { execution_accelerators { gpu_execution_accelerator [{ name: \"cuda\" parameters { key: \"arena_extend_strategy\" value: \"kSameAsRequested\" } }] } }" ;;
        bert) file=$B name=bert cfg=$bert_cfg
              digest="input_ids:INT64,attention_mask:INT64,token_type_ids:INT64 1x128 last_hidden_state" ;;
      esac
      for n in ${WEIGHTS_INSTANCES:-1 2 4}; do
        for share in ${WEIGHTS_SHARES:-off on}; do
          tag=$model-$n-$share
          repo=$(serve_repo $name "$file" "$cfg
instance_group [{ count: $n kind: KIND_GPU }]
parameters { key: \"share_weights\" value { string_value: \"$share\" } }")
          start_server $repo "$out/serve_weights_$tag.log" || { echo "$tag: serve failed (serve_weights_$tag.log)"; continue; }
          python3 scripts/infer_digest.py http://127.0.0.1:8000 $name $digest 8 > "$out/digest_weights_$tag.json"; ok=$?
          mem=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader | head -1)
          cmp=''
          [ $share != off ] && cmp=$(python3 scripts/infer_digest.py --compare "$out/digest_weights_$model-$n-off.json" "$out/digest_weights_$tag.json")
          echo "$tag: memory.used $mem; digest exit $ok${cmp:+; outputs against off: $cmp}"
          grep -o 'weights: .*' "$out/serve_weights_$tag.log" | sed 's/^/    /'
          stop_server
        done
      done
    done
  } > "$out/weights.txt" 2>&1
fi

# padding (issue 25): the best ResNet-50 config with adaptive_padding false
# (every batch padded to 32, as before) and true (the default: padded only
# when the GPU is busy or it costs about the same): one client's latency and
# 64 connections' throughput (PADDING_CONCURRENCY), the padding line of the
# start-up summary, batch_stats and GPU memory; into padding.txt.
if [[ " $parts " == *" padding "* ]]; then
  {
    for adaptive in false true; do
      repo=$(serve_repo resnet50 "$R" "$BEST_RESNET_CONFIG
parameters { key: \"adaptive_padding\" value { string_value: \"$adaptive\" } }")
      start_server $repo "$out/serve_padding_$adaptive.log" || continue
      echo "=== adaptive_padding $adaptive"; grep -E "padding:|is READY" "$out/serve_padding_$adaptive.log"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader
      for c in ${PADDING_CONCURRENCY:-1 64}; do
        ortgpu perf --url http://127.0.0.1:8000 --model resnet50 --concurrency $c --threads 2 --measurement-interval 3000 \
          --max-trials 6 --no-progress --json > "$out/perf_padding_${adaptive}_c$c.json" 2> "$out/perf_padding_${adaptive}_c$c.err"
        python3 - "$out/perf_padding_${adaptive}_c$c.json" "$c" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])).get("steps", []):
    print("concurrency", sys.argv[2], json.dumps({k: s.get(k) for k in ("throughput", "latency_ms", "stable", "errors")})[:600])
PY
        echo "batch_stats after concurrency $c:"; stats resnet50 | python3 -c 'import json,sys; m=json.load(sys.stdin)["model_stats"][0]; print([(b["batch_size"], b["compute_infer"]["count"], round(b["compute_infer"]["ns"]/max(1,b["compute_infer"]["count"])/1e6,2)) for b in m["batch_stats"]])'
      done
      stop_server
    done
  } > "$out/padding.txt" 2>&1
fi

if [[ " $parts " == *" perfwrk "* ]]; then
  ROUNDS=2 scripts/perf_vs_wrk.sh /tmp/ortgpu-gpu/bin 5 > "$out/perf_vs_wrk.txt" 2>&1
fi

echo "done: $(ls "$out")"
