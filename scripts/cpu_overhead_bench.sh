#!/usr/bin/env bash
# serve's per-request overhead on the CPU (issue 8: the tiny MLP served on the
# CPU EP, 1 connection, adds <= 50 us to the in-process p50): a 256 -> 64 ->
# 10 MLP, `ortgpu bench` in process, then `ortgpu serve` loaded by wrk with one
# connection sending batch-1 binary requests, three rounds alternating; each
# round also times GET /v2/health/live (no model: the machine's HTTP floor).
#
#   scripts/cpu_overhead_bench.sh [build/ortgpu] [EXTRA SERVE FLAGS...]   (needs wrk, python3-onnx)
set -euo pipefail
bin=$(realpath "${1:-build/ortgpu}"); shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ortgpu-ovh.XXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/repo/mlp/1"
/usr/bin/python3 - "$work/repo/mlp/1/model.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
r = np.random.default_rng(1)
w1 = numpy_helper.from_array(r.standard_normal((256, 64)).astype(np.float32), "w1")
w2 = numpy_helper.from_array(r.standard_normal((64, 10)).astype(np.float32), "w2")
g = helper.make_graph([helper.make_node("MatMul", ["input", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
                       helper.make_node("MatMul", ["r", "w2"], ["output"])], "mlp",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 256])],
                      [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])], [w1, w2])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
printf 'max_batch_size: 8\ninstance_group [{ count: 1 kind: KIND_CPU }]\n' > "$work/repo/mlp/config.pbtxt"
len=$(/usr/bin/python3 "$here/scripts/make_binary_request.py" "$work/req.bin" input:FP32:1x256)
port=$((20000 + RANDOM % 20000))
"$bin" serve --model-repository "$work/repo" --http-port $port --metrics-port -1 "$@" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.2; done
echo "tiny MLP (256-64-10), CPU EP, $(nproc) cores, $(date -u +%F); serve flags: ${*:-none}"
for round in 1 2 3; do
  inproc=$("$bin" bench "$work/repo/mlp/1/model.onnx" --provider cpu --intra-threads 1 --duration 3 --no-check \
    --no-progress --json | /usr/bin/python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["results"][0]["latency_ms"]["p50"] * 1000))')
  served=$(BODY_FILE=$work/req.bin JSON_LEN=$len wrk -t1 -c1 -d5s --latency -s "$here/benchmarks/wrk_binary_infer.lua" \
    "http://127.0.0.1:$port/v2/models/mlp/infer" | awk '$1 == "50%" {v=$2; if (v ~ /ms$/) {sub("ms","",v); v*=1000} else sub("us","",v); print v}')
  # The HTTP floor of this machine and flags: a request that touches no model (GET /v2/health/live).
  floor=$(wrk -t1 -c1 -d3s --latency "http://127.0.0.1:$port/v2/health/live" | awk '$1 == "50%" {v=$2; if (v ~ /ms$/) {sub("ms","",v); v*=1000} else sub("us","",v); print v}')
  printf 'round %d: in-process p50 %6.1f us   served p50 %6.1f us   overhead %6.1f us   (HTTP floor: health p50 %6.1f us)\n' \
    $round "$inproc" "$served" "$(echo "$served - $inproc" | bc -l)" "$floor"
done
