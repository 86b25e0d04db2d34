#!/usr/bin/env bash
# Run x1 of docs/BENCHMARKS.md (2026-12-07, evening) on the GPU test machine, from the repository
# root with .gpu-carry sent along (ortgpu and wrk in the bundle); about 22 minutes, so start it
# detached (setsid) and collect LOGDIR/*.tgz in later calls (one archive per part, written as each
# part ends). Parts, in this order:
#   pack/        issue 26: BERT-base float16 with attention's Q, K and V projections packed into one MatMul
#                (this build's fusion): its conversion on the GPU, and against the graph before and PyTorch
#                eager float16 at batch 32 and 128, two rounds alternating
#   w2/          issue 26: scripts/h200_w2.sh with ROUNDS="1 2": the mixed-precision search timed on
#                the GPU (ResNet-50 rel=0.0005, BERT-base rel=0.002) and BERT-base fp16 against
#                PyTorch eager fp16 at batch 32 and 128, two rounds alternating
#   attn/        issue 26: the converted BERT-base at batch 128 under each attention kernel ORT's
#                CUDA EP offers (sdpa_kernel) and with TunableOp's GEMM search
#   served/      issue 26: run v1's tune winner for ResNet-50 (fp16) served at 64 connections
#                against in process at the served batch (perf --compare-in-process), two passes;
#                issue 29: bench --io served at batch 16 staged once and joined from 16 one-row
#                requests (--request-rows 1, serve's BatchRunner)
#   i27/         issue 27: PARTS=bench scripts/h200_issue27.sh: bench --memory's bent fit
#   tune_bert/   issue 28: TUNE_MINUTES=3 scripts/h200_tune.sh bert, then its replay (three searches)
#   mlp/         issue 29: the tiny MLP at 1 connection with no serve flag (scripts/h200_s1.sh)
#
#   setsid bash scripts/h200_x1.sh LOGDIR > /dev/null 2>&1 < /dev/null &
#   PARTS="w2 i27" ... runs only the parts named (default: all; "w2-" is w2 without the PyTorch rounds)
set -u
T0=$(date +%s)
# A part runs when named and, past the first, when ${BUDGET_S:-1500} s less its own length are not yet spent.
want() { [[ " ${PARTS:-pack w2 attn served i27 tune_bert mlp} " == *" $1 "* ]] && [ $(( $(date +%s) - T0 + ${2:-0} )) -lt ${BUDGET_S:-1500} ]; }
TOP=${1:?usage: scripts/h200_x1.sh LOGDIR}
mkdir -p "$TOP"
source scripts/h200_s1.sh --functions "$TOP/mlp"   # stage, models resnet50 + mlp, step, inproc, served
L=$TOP   # h200_s1.sh's functions write under $L: set back to $TOP/mlp for them below
[ -f $M/bert.onnx ] || timeout 300 python3 .gpu-carry/export_models.py $M bert >> "$L/export.txt" 2>&1
BS=(--shape seq:128 --int-range input_ids:0:30000)
pack() { tar czf "$L/$1.tgz" -C "$L" "$1"; echo "== $(date -u +%T) packed $1" >> "$L/steps.txt"; }
echo "== $(date -u +%T) start" >> "$L/steps.txt"

if want pack; then
# Issue 26: this build's fusion packs attention's Q, K and V projections into one MatMul. Its conversion
# judged against true float32 on the GPU, then two rounds alternating at batch 32 and 128 against the
# graph of the build before (three MatMuls and three Adds: scripts/mha_bias_probe.py unpack).
mkdir -p "$L/pack"
{ /usr/bin/time -f "wall %e s" timeout 90 ortgpu convert $M/bert.onnx --to fp16 -o $M/bert_fp16.onnx --provider cuda "${BS[@]}" \
    --batch 8; echo "rc=$?"; } > "$L/pack/convert.txt" 2>&1
python3 scripts/mha_bias_probe.py $M/bert_fp16.onnx unpack $M/bert_before.onnx > "$L/pack/unpack.txt" 2>&1
# bench with its CPU check on: the CPU provider cannot run packed QKV, so the check is skipped with a note.
timeout 90 ortgpu bench $M/bert_fp16.onnx --provider cuda --io bound --batch 8 "${BS[@]}" --iterations 20 --no-progress \
  > "$L/pack/check.txt" 2>&1; echo "rc=$?" >> "$L/pack/check.txt"
python3 -c "import onnx,collections,sys; [print(f, collections.Counter(n.op_type for n in onnx.load(f,load_external_data=False).graph.node).most_common(8)) for f in sys.argv[1:]]" \
  $M/bert_fp16.onnx $M/bert_before.onnx >> "$L/pack/ops.txt" 2>&1
for r in 1 2; do
  for v in before fp16; do
    { echo "round $r variant $v"; timeout 90 ortgpu bench $M/bert_$v.onnx --provider cuda --io bound --batch 32,128 "${BS[@]}" \
        --iterations 100 --no-check --no-progress; } > "$L/pack/ab_${r}_$v.txt" 2>&1
  done
  # PyTorch eager float16 in the same round (scripts/h200_w2.sh's rounds), unless PACK_TORCH=0.
  [ "${PACK_TORCH:-1}" = 1 ] && timeout 100 python3 scripts/torch_fp16_baseline.py bert > "$L/pack/ab_${r}_torch.txt" 2>&1
done
pack pack
fi

if want w2; then ROUNDS="1 2" bash scripts/h200_w2.sh "$L/w2"; pack w2; fi
if want w2-; then bash scripts/h200_w2.sh "$L/w2"; pack w2; fi
[ -f $M/bert_fp16.onnx ] || timeout 60 ortgpu convert $M/bert.onnx --to fp16 -o $M/bert_fp16.onnx --provider cuda "${BS[@]}" --batch 8 > "$L/convert_bert.txt" 2>&1

if want attn 150; then
mkdir -p "$L/attn"
for k in ${ATTN_VARIANTS:-default 1 2 4 8 16 tunable}; do
  opt=(); [ $k = default ] || opt=(--cuda-option sdpa_kernel=$k)
  [ $k = tunable ] && opt=(--cuda-option tunable_op_enable=1 --cuda-option tunable_op_tuning_enable=1)
  { echo "variant $k: ${opt[*]}"
    timeout 90 ortgpu bench $M/bert_fp16.onnx --provider cuda --io bound --batch 128 "${BS[@]}" --iterations 100 \
      "${opt[@]}" --no-progress; echo "rc=$?"; } > "$L/attn/$k.txt" 2>&1
done
pack attn
fi

if want served 200; then
bash scripts/h200_fp16_served.sh $M "$L/served"
# Issue 29: the same model in process as serve's worker runs it, the batch staged once against
# joined from 16 one-row requests through serve's BatchRunner (--request-rows 1).
for rr in 0 1; do
  { timeout 120 ortgpu bench $M/resnet50.onnx --provider cuda --precision fp16 --cuda-option prefer_nhwc=1 \
      --cuda-option fuse_conv_bias=1 --cuda-option cudnn_conv_algo_search=HEURISTIC --io served --batch 16 \
      --concurrency 1,2 --request-rows $rr --iterations 300 --no-check --no-progress; echo "rc=$?"; } > "$L/served/bench_rows_$rr.txt" 2>&1
done
pack served
fi

if want i27 300; then PARTS=bench bash scripts/h200_issue27.sh "$L/i27" > /dev/null 2>&1; pack i27; fi

if want tune_bert 420; then
  TUNE_MINUTES=3 bash scripts/h200_tune.sh "$L/tune_bert" bert
  bash scripts/h200_tune.sh "$L/tune_bert" replay-bert
  find "$L/tune_bert" -name '*.onnx' -delete; pack tune_bert
fi

if want mlp 90; then L=$TOP/mlp; inproc mlp; served 1 default; L=$TOP; pack mlp; fi
echo "== $(date -u +%T) done" >> "$L/steps.txt"
touch "$L/done"
