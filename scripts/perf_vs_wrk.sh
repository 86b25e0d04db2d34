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

# Each run prints "REQUESTS_PER_S CPU_SECONDS" (the client's user + sys time,
# from /usr/bin/time), so its cost per request is known even when neighbours
# on a shared machine take CPU from it.
wrk_run() {  # CONNECTIONS THREADS
  /usr/bin/time -f "cpu %U %S" -o "$WORK/time" \
    wrk -t"$2" -c"$1" -d"${SECONDS_EACH}s" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/v2/models/fixed/infer" > "$WORK/wrk.out"
  echo "$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out") $(awk '{print $2 + $3}' "$WORK/time")"
}
perf_run() {  # CONNECTIONS THREADS: three windows over the same time as wrk
  /usr/bin/time -f "cpu %U %S" -o "$WORK/time" \
    "$BUILD/ortgpu" perf --url "http://127.0.0.1:$PORT" --model fixed --concurrency "$1" --threads "$2" --metrics-url off \
    --measurement-interval $((SECONDS_EACH * 1000 / 3)) --max-trials 3 --no-progress --json > "$WORK/perf.json"
  echo "$(field "s['throughput']['infer_per_s']" < "$WORK/perf.json") $(awk '{print $2 + $3}' "$WORK/time")"
}
field() { python3 -c "import json,sys; s=json.load(sys.stdin)['steps'][0]; print($1)"; }

ROUNDS=${ROUNDS:-3}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); server threads: $SERVER_THREADS; ${SECONDS_EACH}s each, $ROUNDS rounds"
# wrk and perf alternate, so a neighbour's load on a shared machine hits both alike.
ROWS=()
for round in $(seq "$ROUNDS"); do
  ROWS+=("$(wrk_run 64 4) $(perf_run 64 1) $(perf_run 64 4) $(wrk_run 1 1) $(perf_run 1 1)")
done
python3 - "$SECONDS_EACH" "${ROWS[@]}" <<'PY'
import statistics, sys
seconds = float(sys.argv[1])
rows = [list(map(float, r.split())) for r in sys.argv[2:]]
names = ["wrk -t4 -c64", "perf -c64", "perf -c64 --threads 4", "wrk -t1 -c1", "perf -c1"]
def cost(rps, cpu):  # client CPU microseconds per request
    return cpu / (rps * seconds) * 1e6 if rps > 0 else float("nan")
print("round | " + " | ".join(f"{n} req/s (CPU us/req)" for n in names))
for i, r in enumerate(rows):
    print(f"{i:5} | " + " | ".join(f"{r[2 * k]:8.0f} ({cost(r[2 * k], r[2 * k + 1]):.2f})" for k in range(5)))
med = lambda f: statistics.median(f(r) for r in rows)
print(f"median perf/wrk, 64 connections: {med(lambda r: r[2] / r[0]):.3f} (1 thread), {med(lambda r: r[4] / r[0]):.3f} (4 threads, as wrk -t4)")
print(f"median perf/wrk, 1 connection:   {med(lambda r: r[8] / r[6]):.3f}")
print(f"median client CPU per request, 64 connections: wrk {med(lambda r: cost(r[0], r[1])):.2f} us, perf {med(lambda r: cost(r[2], r[3])):.2f} us; "
      f"1 connection: wrk {med(lambda r: cost(r[6], r[7])):.2f} us, perf {med(lambda r: cost(r[8], r[9])):.2f} us")
PY
