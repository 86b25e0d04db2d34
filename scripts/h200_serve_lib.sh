# Shared by the H200 serve runs (scripts/h200_serve_workers.sh, h200_serve_padding.sh): stages
# .gpu-carry, exports the models when missing, and defines step and serve_run. Source it with L set.
source .gpu-carry/stage.sh
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:$LD_LIBRARY_PATH
M=/tmp/models; mkdir -p $M
[ -f $M/resnet50.onnx ] || python3 .gpu-carry/export_models.py $M bert resnet50 mlp > "$L/export.txt" 2>&1
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
serve_run() { # name model-file config-body perf-args...
  local name=$1 file=$2 cfg=$3; shift 3
  step "serve $name"
  local dir=/tmp/repo_$name; rm -rf $dir; mkdir -p $dir/m/1; ln -sf $file $dir/m/1/model.onnx
  printf '%s\n' "$cfg" > $dir/m/config.pbtxt
  ortgpu serve --model-repository $dir --http-port 8000 --grpc-port 8001 --metrics-port 8002 > "$L/serve_$name.log" 2>&1 & local pid=$!
  for _ in $(seq 1 900); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
  timeout 100 ortgpu perf --url http://127.0.0.1:8000 --model m --threads 4 --measurement-interval 1500 --max-trials 4 "$@" > "$L/perf_$name.txt" 2>&1; echo "rc=$?" >> "$L/perf_$name.txt"
  kill $pid; wait $pid
}
