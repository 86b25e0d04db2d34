#!/usr/bin/env bash
# Run k3 of docs/BENCHMARKS.md (2026-12-04) on the H200 test machine, from the repository root with
# .gpu-carry sent along: BERT-base fp16 with ortgpu's attention fusion (MultiHeadAttention; convert's
# --fuse auto on --provider cuda) against TF32 and PyTorch eager fp16 in the same run. Output under LOGDIR.
set -u
L=${1:-/tmp/k3}; mkdir -p "$L"
source .gpu-carry/stage.sh
M=/tmp/models; mkdir -p $M
python3 .gpu-carry/export_models.py $M bert > "$L/export.txt" 2>&1
B=$M/bert.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
{ /usr/bin/time -f "wall %e s" ortgpu convert $B --to fp16 -o $M/bert_fp16.onnx --provider cuda $BS --batch 8; echo "rc=$?"; } > "$L/c_bert.txt" 2>&1
{ /usr/bin/time -f "wall %e s" ortgpu convert $B --to fp16 -o $M/bert_fp16_nofuse.onnx --provider cuda $BS --batch 8 --fuse off; echo "rc=$?"; } > "$L/c_bert_nofuse.txt" 2>&1
for f in bert bert_fp16_nofuse bert_fp16; do timeout 100 ortgpu bench $M/$f.onnx --provider cuda --io bound --batch 32,128 $BS --iterations 100 --no-check; done > "$L/bench.txt" 2>&1
timeout 120 python3 scripts/torch_fp16_baseline.py bert > "$L/torch.txt" 2>&1
