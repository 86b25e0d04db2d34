#!/usr/bin/env bash
# Run j1 of docs/BENCHMARKS.md (2026-12-04) on the H200 test machine, from the repository root
# with .gpu-carry sent along: issue 25's GPU-path defects (CUDA graphs at batch 32/128, the sweep's
# servable recommendation, doctor on torchvision's vit_b_16 and ssdlite320, padding only when it
# pays) and issue 26's first figures (ortgpu convert to fp16/mixed, bench fp32/TF32 against fp16,
# PyTorch eager fp16 in the same run). Everything goes under LOGDIR (default /tmp/r2); it takes
# about 8 minutes, so start it detached and collect it with a second call:
#
#   setsid nohup bash scripts/h200_issue25_26.sh /tmp/r2 </dev/null >/dev/null 2>&1 &
#
# The served comparison of run j1 (perf --compare-in-process against the sweep's fragment):
#   ortgpu serve --model /tmp/models/resnet50.onnx --config /tmp/r2/r50.pbtxt &
#   ortgpu perf --url http://127.0.0.1:8000 --model resnet50 --concurrency 64 --threads 4 \
#     --measurement-interval 3000 --max-trials 6 --compare-in-process /tmp/models/resnet50.onnx
set -u
L=${1:-/tmp/r2}; mkdir -p $L
exec > $L/main.log 2>&1
source .gpu-carry/stage.sh
export PYTHONUNBUFFERED=1
mkdir -p /tmp/models
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
python3 .gpu-carry/export_models.py /tmp/models > $L/export.txt 2>&1
R=/tmp/models/resnet50.onnx B=/tmp/models/bert.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
step() { echo "== $(date -u +%T) $*"; }
# --- issue 25 item 7a: CUDA graphs at batch 32 and 128
step cg; ortgpu bench $R --provider cuda --io cuda-graph --batch 32,128 --iterations 200 > $L/a_cg.txt 2>&1; echo "rc=$?" >> $L/a_cg.txt
step cg-pw; ortgpu bench $R --provider cuda --io cuda-graph --batch 32 --concurrency 1,2 --concurrency-mode per-worker > $L/a_cg_pw.txt 2>&1; echo "rc=$?" >> $L/a_cg_pw.txt
# --- issue 26: fp16 conversion, placement pass on CUDA, accuracy against true fp32
step convert
{ /usr/bin/time -f "wall %e s, cpu %U+%S s" ortgpu convert $R --to fp16 -o /tmp/models/resnet50_fp16.onnx --provider cuda --batch 32; echo "rc=$?"; } > $L/c_resnet_fp16.txt 2>&1
{ /usr/bin/time -f "wall %e s, cpu %U+%S s" ortgpu convert $B --to fp16 -o /tmp/models/bert_fp16.onnx --provider cuda $BS --batch 8; echo "rc=$?"; } > $L/c_bert_fp16.txt 2>&1
{ /usr/bin/time -f "wall %e s, cpu %U+%S s" ortgpu convert $B --to mixed -o /tmp/models/bert_mixed.onnx --provider cuda $BS --batch 8; echo "rc=$?"; } > $L/c_bert_mixed.txt 2>&1
step bench-precision
for f in resnet50 resnet50_fp16; do
  [ -f /tmp/models/$f.onnx ] && ortgpu bench /tmp/models/$f.onnx --provider cuda --io bound --cuda-option prefer_nhwc=1 --batch 32,128 --iterations 200 > $L/p_$f.txt 2>&1
done
ortgpu bench $R --provider cuda --io bound --cuda-option prefer_nhwc=1 --cuda-option use_tf32=0 --batch 32 --iterations 100 --no-check > $L/p_resnet50_truefp32.txt 2>&1
for f in bert bert_fp16 bert_mixed; do
  [ -f /tmp/models/$f.onnx ] && ortgpu bench /tmp/models/$f.onnx --provider cuda --io bound --batch 32,128 $BS --iterations 100 > $L/p_$f.txt 2>&1
done
step torch
cat > /tmp/tbase.py <<'PY'
import torch, torchvision, time, transformers
torch.backends.cudnn.benchmark=True
def t(f, x, n=50):
    for _ in range(10): f(x)
    torch.cuda.synchronize(); s=time.perf_counter()
    for _ in range(n): f(x)
    torch.cuda.synchronize(); return (time.perf_counter()-s)/n
with torch.no_grad():
    m=torchvision.models.resnet50().eval().cuda().half().to(memory_format=torch.channels_last)
    for b in (32,128):
        x=torch.randn(b,3,224,224,device='cuda').half().to(memory_format=torch.channels_last)
        d=t(m,x); print(f"torch eager fp16 resnet50 b{b}: {d*1e3:.2f} ms {b/d:.0f}/s")
    cfg=transformers.BertConfig(); mb=transformers.BertModel(cfg).eval().cuda().half()
    for b in (32,128):
        ids=torch.randint(0,30000,(b,128),device='cuda')
        d=t(lambda z: mb(input_ids=z), ids); print(f"torch eager fp16 bert b{b}: {d*1e3:.2f} ms {b/d:.0f}/s")
PY
timeout 300 python3 /tmp/tbase.py > $L/torch.txt 2>&1
# --- issue 25 item 7b: the sweep recommends only what serve runs
step sweep
timeout 420 ortgpu bench $R --provider cuda --batch 32 --sweep --iterations 50 --config-out $L/r50.pbtxt > $L/b_sweep.txt 2>&1; echo "rc=$?" >> $L/b_sweep.txt
# --- doctor on real architectures (vit, ssdlite) and BERT placement
step tv
cat > /tmp/tv.py <<'PY'
import torch, torchvision
torch.manual_seed(0)
def exp(name, m, args, **kw):
    for dyn in (False, True):
        try:
            torch.onnx.export(m, args, f'/tmp/models/{name}.onnx', opset_version=17, dynamo=dyn, **kw); print(name,'dynamo',dyn); return
        except Exception as e: print(name,'failed dynamo',dyn,repr(e)[:300])
exp('vit_b_16', torchvision.models.vit_b_16().eval(), (torch.randn(1,3,224,224),), input_names=['input'], output_names=['output'], dynamic_axes={'input':{0:'batch'},'output':{0:'batch'}})
exp('ssdlite', torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None).eval(), ([torch.rand(3,320,320)],), input_names=['images'], output_names=['boxes','scores','labels'])
PY
timeout 240 python3 /tmp/tv.py > $L/tv.txt 2>&1
for m in vit_b_16 ssdlite; do
  [ -f /tmp/models/$m.onnx ] && { timeout 200 ortgpu doctor --require gpu --json --model /tmp/models/$m.onnx > $L/d_$m.json 2>$L/d_$m.err; echo "rc=$?" >> $L/d_$m.err; }
done
timeout 200 ortgpu doctor --require gpu --model $B --shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128 > $L/d_bert.txt 2>&1; echo "rc=$?" >> $L/d_bert.txt
# --- issue 25 item 7d: padding before/after on the best ResNet-50 config
step padding
DURATION=10 timeout 500 scripts/h200_serve.sh $L/serve padding > $L/padding_run.txt 2>&1
step done
date -u
