#!/usr/bin/env bash
# How fast request bodies arrive in `ortgpu serve` (issue 8, item 1): a model
# that reads a ResNet-sized input and returns its mean (so the response is
# tiny and the model costs almost nothing), served on the CPU, loaded by wrk
# with binary-tensor bodies of 602 KB (batch 1) and 19 MB (batch 32). Prints
# requests/s, MB/s per connection and, under strace, read syscalls per request.
#
#   scripts/body_read_bench.sh [build/ortgpu]      (needs wrk, strace, python3-onnx)
set -euo pipefail
bin=$(realpath "${1:-build/ortgpu}")
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ortgpu-body.XXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/repo/image_mean/1"
/usr/bin/python3 - "$work/repo/image_mean/1/model.onnx" <<'PY'
import sys, onnx
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("ReduceMean", ["input"], ["output"], axes=[1, 2, 3], keepdims=0)], "image_mean",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
                      [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch"])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
cat > "$work/repo/image_mean/config.pbtxt" <<'CFG'
max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [] }]
instance_group [{ count: 2 kind: KIND_CPU }]
CFG
len1=$(/usr/bin/python3 "$here/scripts/make_binary_request.py" "$work/b1.bin" input:FP32:1x3x224x224)
len32=$(/usr/bin/python3 "$here/scripts/make_binary_request.py" "$work/b32.bin" input:FP32:32x3x224x224)
port=$((20000 + RANDOM % 20000))
"$bin" serve --model-repository "$work/repo" --http-port $port --metrics-port -1 --access-log json >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.2; done
url="http://127.0.0.1:$port/v2/models/image_mean/infer"
run() {  # name body json_len connections seconds
  local out; out=$(BODY_FILE=$2 JSON_LEN=$3 wrk -t"$(( $4 < 2 ? 1 : 2 ))" -c"$4" -d"$5"s -s "$here/benchmarks/wrk_binary_infer.lua" "$url")
  local rps; rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  local bytes; bytes=$(stat -c %s "$2")
  local non2xx; non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  # The access log's read_ms: from the header to the body's last byte, in the server.
  local arrival; arrival=$(/usr/bin/python3 - "$work/serve.log" "$bytes" <<'PY'
import json, sys
ms = [j["read_ms"] for j in (json.loads(l[l.index("{"):]) for l in open(sys.argv[1]) if '"read_ms"' in l)
      if j["request_bytes"] == int(sys.argv[2]) and j["read_ms"] > 0]
print("%.0f" % (int(sys.argv[2]) / (sorted(ms)[len(ms) // 2]) / 1000) if ms else "?")
PY
)
  : >"$work/serve.log"
  printf '%-6s %3d conn  %8.1f req/s  %7.1f MB/s per connection end to end  median body arrival %s MB/s  non-2xx: %s\n' \
    "$1" "$4" "$rps" "$(echo "$rps * $bytes / $4 / 1000000" | bc -l)" "${arrival:-?}" "${non2xx:-0}"
}
echo "ortgpu serve, CPU EP, $(nproc) cores, $(date -u +%F)"
run 602KB "$work/b1.bin" "$len1" 4 5
run 602KB "$work/b1.bin" "$len1" 1 5
run 19MB "$work/b32.bin" "$len32" 1 5
if command -v strace >/dev/null; then
  # read syscalls per request: strace counts the server's calls over a
  # fixed window while wrk counts the requests.
  for spec in "602KB $work/b1.bin $len1 4" "19MB $work/b32.bin $len32 1"; do
    set -- $spec
    strace -f -c -e trace=read,recvfrom,recvmsg,readv -o "$work/strace.txt" -p $pid & spid=$!
    sleep 0.5
    out=$(BODY_FILE=$2 JSON_LEN=$3 wrk -t1 -c"$4" -d3s -s "$here/benchmarks/wrk_binary_infer.lua" "$url")
    kill -INT $spid; wait $spid 2>/dev/null || true
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    calls=$(awk '/total/ {print $4}' "$work/strace.txt")
    printf '%-10s read syscalls per request under strace: %.1f (%s calls, %s requests)\n' "$1" \
      "$(echo "$calls / $reqs" | bc -l)" "$calls" "$reqs"
  done
fi
