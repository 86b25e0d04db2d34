#!/usr/bin/env bash
# Run k4 of docs/BENCHMARKS.md (2026-12-04) on the H200 test machine, from the repository root with
# .gpu-carry sent along: issue 26 as a new user meets it. `ortgpu bench --precision` on BERT-base and
# ResNet-50 (each precision converted in-process, fused on CUDA, judged against true fp32), BERT-base
# served with the config parameter precision=fp16 (converted at load, checked before READY) through
# `ortgpu perf --compare-in-process` against the converted file, and doctor's precision census of
# the converted model. Output under LOGDIR; about 4 minutes.
set -u
L=${1:-/tmp/k4}; mkdir -p "$L"
source .gpu-carry/stage.sh
M=/tmp/models; mkdir -p $M
python3 .gpu-carry/export_models.py $M bert resnet50 > /tmp/export.txt 2>&1
B=$M/bert.onnx R=$M/resnet50.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
step bench-bert
timeout 100 ortgpu bench $B --provider cuda --precision tf32,fp16 --io bound --batch 32,128 $BS --iterations 100 > "$L/bench_bert.txt" 2>&1; echo "rc=$?" >> "$L/bench_bert.txt"
step convert
ortgpu convert $B --to fp16 -o $M/bert_fp16.onnx --provider cuda $BS --batch 8 > "$L/convert_bert.txt" 2>&1 &
conv=$!
step serve
export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:$LD_LIBRARY_PATH
dir=/tmp/repo; rm -rf $dir; mkdir -p $dir/bert/1; ln -sf $B $dir/bert/1/model.onnx
cat > $dir/bert/config.pbtxt <<'CFG'
max_batch_size: 32
instance_group [{ count: 2 kind: KIND_GPU }]
dynamic_batching { preferred_batch_size: [32] max_queue_delay_microseconds: 2000 }
parameters { key: "precision" value: { string_value: "fp16" } }
CFG
ortgpu serve --model-repository $dir --http-port 8000 --metrics-port 8002 > "$L/serve.log" 2>&1 & pid=$!
for _ in $(seq 1 400); do python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break; sleep 0.2; done
python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8000/v2/models/bert/config").read().decode()[:3000])' > "$L/config.json" 2>&1
wait $conv
timeout 90 ortgpu perf --url http://127.0.0.1:8000 --model bert --threads 4 --measurement-interval 3000 --max-trials 4 --concurrency 64 \
  --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 --int-range input_ids:0:30000 \
  --compare-in-process $M/bert_fp16.onnx > "$L/perf_bert.txt" 2>&1
python3 -c 'import urllib.request as u; print("\n".join(l for l in u.urlopen("http://127.0.0.1:8002/metrics").read().decode().splitlines() if "precision" in l or "accuracy" in l))' >> "$L/config.json" 2>&1
kill $pid; wait $pid
step bench-resnet
timeout 80 ortgpu bench $R --provider cuda --precision fp32,tf32,fp16 --io bound --cuda-option prefer_nhwc=1 --batch 32 --iterations 100 > "$L/bench_resnet.txt" 2>&1; echo "rc=$?" >> "$L/bench_resnet.txt"
step doctor
timeout 45 ortgpu doctor --model $M/bert_fp16.onnx --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 > "$L/doctor.txt" 2>&1
step done
