#!/usr/bin/env bash
# perf_vs_wrk.sh: is `ortgpu perf` ever the bottleneck? Starts the bare Beast
# server benchmarks/fixed_response_server.cc on a free port, then for 64
# connections and for 1 connection runs wrk (POSTing the same binary KServe
# request perf sends) and `ortgpu perf` for the same time, and prints both
# requests/s and perf/wrk. Figures: docs/BENCHMARKS.md.
#
#   scripts/perf_vs_wrk.sh [BUILD_DIR] [SECONDS]      (env SERVER_THREADS, default 1)
set -euo pipefail
BUILD=${1:-build}
SECONDS_EACH=${2:-10}
SERVER_THREADS=${SERVER_THREADS:-1}
for t in ortgpu ortgpu_fixed_response_server; do
  [[ -x $BUILD/$t ]] || { echo "perf_vs_wrk.sh: $BUILD/$t is missing; build it: cmake --build $BUILD --target $t" >&2; exit 2; }
done
command -v wrk >/dev/null || { echo "perf_vs_wrk.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BUILD/ortgpu_fixed_response_server" "$PORT" "$SERVER_THREADS" >/dev/null &
SERVER=$!
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/v2/models/fixed" >/dev/null && break; sleep 0.1; done

# The request perf encodes for model "fixed" at batch 1: its JSON header, then
# the 16 input bytes (the values do not matter to the fixed server).
HEADER='{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}],"outputs":[{"name":"y","parameters":{"binary_data":true}}]}'
cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$HEADER' .. string.rep("\0", 16)
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "${#HEADER}"
LUA

wrk_rps() {  # CONNECTIONS THREADS
  wrk -t"$2" -c"$1" -d"${SECONDS_EACH}s" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/v2/models/fixed/infer" |
    awk '/Requests\/sec/ {print $2}'
}
perf_json() {  # CONNECTIONS: three windows over the same time as wrk
  "$BUILD/ortgpu" perf --url "http://127.0.0.1:$PORT" --model fixed --concurrency "$1" --metrics-url off \
    --measurement-interval $((SECONDS_EACH * 1000 / 3)) --max-trials 3 --no-progress --json
}
field() { python3 -c "import json,sys; s=json.load(sys.stdin)['steps'][0]; print($1)"; }

ROUNDS=${ROUNDS:-3}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); server threads: $SERVER_THREADS; ${SECONDS_EACH}s each, $ROUNDS rounds"
# wrk and perf alternate, so a neighbour's load on a shared machine hits both alike.
ROWS=()
for round in $(seq "$ROUNDS"); do
  W64=$(wrk_rps 64 4)
  P64=$(perf_json 64 | field "s['throughput']['infer_per_s']")
  W1=$(wrk_rps 1 1)
  P1_JSON=$(perf_json 1)
  P1=$(echo "$P1_JSON" | field "s['throughput']['infer_per_s']")
  P1_P50=$(echo "$P1_JSON" | field "s['latency_ms']['p50']")
  ROWS+=("$W64 $P64 $W1 $P1 $P1_P50")
done
python3 - "${ROWS[@]}" <<'PY'
import statistics, sys
rows = [list(map(float, r.split())) for r in sys.argv[1:]]
print("round | wrk -t4 -c64 req/s | perf -c64 req/s | perf/wrk | wrk -t1 -c1 req/s | perf -c1 req/s | perf/wrk | perf -c1 p50 us")
for i, (w64, p64, w1, p1, p50) in enumerate(rows):
    print(f"{i:5} | {w64:18.0f} | {p64:15.0f} | {p64 / w64:8.3f} | {w1:17.0f} | {p1:14.0f} | {p1 / w1:8.3f} | {p50 * 1000:.1f}")
r64 = statistics.median(p64 / w64 for w64, p64, *_ in rows)
r1 = statistics.median(p1 / w1 for _, _, w1, p1, _ in rows)
over = statistics.median(1e6 / p1 - 1e6 / w1 for _, _, w1, p1, _ in rows)
print(f"median perf/wrk: 64 connections {r64:.3f}, 1 connection {r1:.3f}; perf's own cost over wrk's at 1 connection: {over:+.1f} us per request")
PY
