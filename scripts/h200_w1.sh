#!/usr/bin/env bash
# Run w1 of docs/BENCHMARKS.md (2026-12-07, afternoon) on the GPU test machine, from the repository
# root with .gpu-carry sent along (ortgpu and wrk in the bundle); about 25 minutes, so start it
# detached (setsid) and collect LOGDIR/done in later calls. Parts, in this order:
#   *_skeleton.onnx      ResNet-50's and BERT-base's exported graphs without their weights
#                        (scripts/model_skeleton.py), to time conversion on the build machine
#   bert_user.txt        issue 26 as a new user runs it: `ortgpu bench bert.onnx --precision tf32,fp16`
#                        at batch 32 and 128 (converted in process, judged against true fp32)
#   convert_bert.txt     `ortgpu convert --to fp16 --provider cuda` (timed)
#   ab_N_torch.txt, ab_N_ortgpu.txt   two rounds, alternating: PyTorch eager fp16
#                        (scripts/torch_fp16_baseline.py bert) and the converted file in process
#                        (bound I/O, batch 32 and 128): issue 26's comparison in one run
#   mlp_1_default.txt    issue 29: the tiny MLP at 1 connection with no serve flag (scripts/h200_s1.sh)
#   resnet_fp16_served/  issue 26: run v1's tune winner (fp16) served at 64 connections,
#                        perf --compare-in-process (scripts/h200_fp16_served.sh; pass_N.txt)
#   graphs_bench.txt     bench --io served-graph (serve's StagedGraph) at batch 8 and 32 with its
#                        outputs checked against the CPU, and --io cuda-graph beside it
#   resnet_graphs/       scripts/h200_serve.sh grpc with GRPC_MLP=0: the hand config (CUDA graphs)
#                        served over HTTP and gRPC at 64 connections against bench --io cuda-graph
#   tune_resnet50/       issue 28 on ResNet-50: `TUNE_MINUTES=4 scripts/h200_tune.sh`, then its
#                        replay (perf --compare-in-process now converts to the served precision)
#   tune_bert/           issue 28 on BERT-base: `TUNE_MINUTES=3`, then its replay
#
#   setsid bash scripts/h200_w1.sh LOGDIR > /dev/null 2>&1 < /dev/null &
set -u
L=${1:?usage: scripts/h200_w1.sh LOGDIR}
mkdir -p "$L"
source scripts/h200_s1.sh --functions "$L"   # stage, models resnet50 + mlp, step, inproc, served
[ -f $M/bert.onnx ] || timeout 300 python3 .gpu-carry/export_models.py $M bert >> "$L/export.txt" 2>&1
BS=(--shape seq:128 --int-range input_ids:0:30000)
# The exports' graphs without their weights, to time conversion on the build machine (the files
# themselves are too large to come back): scripts/model_skeleton.py fill gives them weights again.
for m in resnet50 bert; do python3 scripts/model_skeleton.py strip $M/$m.onnx "$L/${m}_skeleton.onnx" >> "$L/export.txt" 2>&1; done

step "bert as a new user runs it"
{ /usr/bin/time -f "wall %e s" timeout 240 ortgpu bench $M/bert.onnx --provider cuda --precision tf32,fp16 --io bound \
    --batch 32,128 "${BS[@]}" --iterations 100 --no-progress; echo "rc=$?"; } > "$L/bert_user.txt" 2>&1
step "convert bert"
{ /usr/bin/time -f "wall %e s" ortgpu convert $M/bert.onnx --to fp16 -o $M/bert_fp16.onnx --provider cuda "${BS[@]}" --batch 8
  echo "rc=$?"; } > "$L/convert_bert.txt" 2>&1
for r in 1 2; do
  step "round $r torch"
  timeout 150 python3 scripts/torch_fp16_baseline.py bert > "$L/ab_${r}_torch.txt" 2>&1
  step "round $r ortgpu"
  timeout 150 ortgpu bench $M/bert_fp16.onnx --provider cuda --io bound --batch 32,128 "${BS[@]}" --iterations 100 \
    --no-check --no-progress > "$L/ab_${r}_ortgpu.txt" 2>&1
done

inproc mlp
served 1 default

step "resnet50 fp16, v1's winner, served against in process"
bash scripts/h200_fp16_served.sh $M "$L/resnet_fp16_served"

step "graphs: bench --io served-graph, checked against the CPU"
{ timeout 200 ortgpu bench $M/resnet50.onnx --provider cuda --io served-graph --batch 8,32 --cuda-option prefer_nhwc=1 --no-progress
  echo "rc=$?"
  timeout 100 ortgpu bench $M/resnet50.onnx --provider cuda --io cuda-graph --batch 32 --cuda-option prefer_nhwc=1 --no-check --no-progress
  echo "rc=$?"; } > "$L/graphs_bench.txt" 2>&1
step "graphs: serve's hand config (CUDA graphs) at 64 connections"
GRPC_MLP=0 DURATION=8 timeout 240 bash scripts/h200_serve.sh "$L/resnet_graphs" grpc > /dev/null 2>&1

step "tune resnet50"
TUNE_MINUTES=4 bash scripts/h200_tune.sh "$L/tune_resnet50" resnet
step "replay resnet50"
bash scripts/h200_tune.sh "$L/tune_resnet50" replay-resnet

step "tune bert"
TUNE_MINUTES=3 bash scripts/h200_tune.sh "$L/tune_bert" bert
step "replay bert"
bash scripts/h200_tune.sh "$L/tune_bert" replay-bert
step done
touch "$L/done"
