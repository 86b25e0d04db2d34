#!/usr/bin/env bash
# The first run of `ortgpu tune` on the H200 (run l2, 2026-12-04): ResNet-50 with a 20 ms p99
# budget and the default CUDA search, stopped after $2 seconds, to see what each measurement costs.
set -u
L=${1:-/tmp/l2}; LIMIT=${2:-400}; mkdir -p "$L"
source .gpu-carry/stage.sh
M=/tmp/models; mkdir -p $M
[ -f $M/resnet50.onnx ] || python3 .gpu-carry/export_models.py $M bert resnet50 mlp > "$L/export.txt" 2>&1
echo "== $(date -u +%T) tune" >> "$L/steps.txt"
( time timeout $LIMIT ortgpu tune $M/resnet50.onnx --latency-budget-ms 20 --output /tmp/tune/resnet50 ) > "$L/tune_resnet.txt" 2>&1
echo "rc=$?" >> "$L/tune_resnet.txt"
cp /tmp/tune/resnet50/tune_history.jsonl "$L/" 2>/dev/null
cp /tmp/tune/resnet50/config.pbtxt "$L/" 2>/dev/null
echo "== $(date -u +%T) done" >> "$L/steps.txt"
