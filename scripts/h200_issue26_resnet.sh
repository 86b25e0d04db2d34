#!/usr/bin/env bash
# Run l1 of docs/BENCHMARKS.md (2026-12-04, evening) on the H200 test machine, from the repository
# root with .gpu-carry sent along: bench --precision on BERT-base again (the CPU check now at the
# smallest batch only), and what the CUDA EP's options do to ResNet-50 in float16 (NHWC or not,
# cuDNN's conv+bias fusion, the conv search), with PyTorch eager fp16 in the same run. LOGDIR: $1.
set -u
L=${1:-/tmp/l1}; mkdir -p "$L"
source .gpu-carry/stage.sh
M=/tmp/models; mkdir -p $M
[ -f $M/resnet50.onnx ] || python3 .gpu-carry/export_models.py $M bert resnet50 mlp > "$L/export.txt" 2>&1
B=$M/bert.onnx R=$M/resnet50.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
step bench-bert-precision
timeout 200 ortgpu bench $B --provider cuda --precision tf32,fp16 --io bound --batch 32,128 $BS --iterations 100 > "$L/bench_bert.txt" 2>&1; echo "rc=$?" >> "$L/bench_bert.txt"
step convert-resnet
ortgpu convert $R --to fp16 -o $M/r16.onnx --provider cuda > "$L/convert_resnet.txt" 2>&1
run_r() { # name model options...
  local name=$1 model=$2; shift 2
  step "resnet $name"
  echo "### $name: $*" >> "$L/resnet_variants.txt"
  timeout 60 ortgpu bench $model --provider cuda --io bound --batch 32,128 --iterations 100 --no-check "$@" >> "$L/resnet_variants.txt" 2>&1
  echo "rc=$?" >> "$L/resnet_variants.txt"
}
run_r tf32-nhwc $R --cuda-option prefer_nhwc=1
run_r tf32-nhwc-fusebias $R --cuda-option prefer_nhwc=1 --cuda-option fuse_conv_bias=1
run_r fp16-nhwc $M/r16.onnx --cuda-option prefer_nhwc=1
run_r fp16-nhwc-fusebias $M/r16.onnx --cuda-option prefer_nhwc=1 --cuda-option fuse_conv_bias=1
run_r fp16-nchw $M/r16.onnx
run_r fp16-nchw-fusebias $M/r16.onnx --cuda-option fuse_conv_bias=1
run_r fp16-nhwc-heuristic $M/r16.onnx --cuda-option prefer_nhwc=1 --cuda-option cudnn_conv_algo_search=HEURISTIC
run_r fp16-nhwc-graph $M/r16.onnx --cuda-option prefer_nhwc=1 --cuda-option fuse_conv_bias=1 --io cuda-graph
step save-optimized
timeout 60 ortgpu bench $M/r16.onnx --provider cuda --io bound --batch 128 --iterations 5 --no-check --cuda-option prefer_nhwc=1 --save-optimized $M/r16_opt.onnx > /dev/null 2>&1
timeout 60 ortgpu bench $M/r16.onnx --provider cuda --io bound --batch 128 --iterations 5 --no-check --save-optimized $M/r16_opt_nchw.onnx > /dev/null 2>&1
python3 - $M/r16_opt.onnx $M/r16_opt_nchw.onnx > "$L/optimized_ops.txt" 2>&1 <<'PY'
import sys, collections, onnx
for p in sys.argv[1:]:
    m = onnx.load(p, load_external_data=False)
    c = collections.Counter((n.domain or "ai.onnx") + ":" + n.op_type for n in m.graph.node)
    print(p, sum(c.values()), dict(c.most_common()))
PY
step torch
timeout 120 python3 scripts/torch_fp16_baseline.py resnet50 > "$L/torch.txt" 2>&1
step done
