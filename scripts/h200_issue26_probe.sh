#!/usr/bin/env bash
# Run k1 of docs/BENCHMARKS.md (2026-12-04) on the H200 test machine, from the repository root with
# .gpu-carry sent along: what stands between BERT-base in float16 and issue 26's 2.0x. Dumps the
# exported graph (one encoder layer), what ORT's own optimisers make of it (the CUDA EP at
# `extended` through `ortgpu bench --save-optimized`, and the python transformers optimizer of the
# onnxruntime wheel there, CPU-only but able to write a fused graph), then benches ortgpu's fp16
# conversion of the plain export and of the fused graph side by side. Output under LOGDIR.
set -u
L=${1:-$OUT}; mkdir -p "$L"
source .gpu-carry/stage.sh
export PYTHONUNBUFFERED=1
M=/tmp/models; mkdir -p $M
date -u
python3 .gpu-carry/export_models.py $M bert resnet50 > "$L/export.txt" 2>&1
B=$M/bert.onnx
BS="--shape seq:128 --int-range input_ids:0:30000"
hist() {  # op histogram of a model file
python3 - "$1" <<'PY'
import onnx, sys, collections
m = onnx.load(sys.argv[1], load_external_data=False)
c = collections.Counter((n.domain or 'ai.onnx') + ':' + n.op_type for n in m.graph.node)
print(sys.argv[1], len(m.graph.node), 'nodes:', dict(sorted(c.items(), key=lambda kv: -kv[1])))
PY
}
python3 - > "$L/bert_graph.txt" 2>&1 <<'PY'
import onnx, collections
from onnx import numpy_helper
m = onnx.load('/tmp/models/bert.onnx')
g = m.graph
inits = {i.name: i for i in g.initializer}
print('opset', [(o.domain, o.version) for o in m.opset_import])
print('inputs', [(i.name, i.type.tensor_type.elem_type, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]) for i in g.input])
print(collections.Counter(n.op_type for n in g.node))
def show(v):
    if v in inits:
        t = inits[v]
        a = numpy_helper.to_array(t)
        return f'{v}<init {list(t.dims)}{" =" + str(a.tolist()) if a.size <= 8 else ""}>'
    return v
for i, n in enumerate(g.node[:330]):
    attrs = {}
    for a in n.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            arr = numpy_helper.to_array(a.t); attrs[a.name] = arr.tolist() if arr.size <= 8 else f'tensor{list(arr.shape)}'
        elif a.type != onnx.AttributeProto.GRAPH:
            attrs[a.name] = onnx.helper.get_attribute_value(a)
    print(i, n.op_type, n.name, [show(x) for x in n.input], list(n.output), attrs)
PY
hist $B > "$L/hist.txt" 2>&1
ortgpu convert $B --to fp16 -o $M/bert_fp16.onnx --provider cuda $BS --batch 8 > "$L/c_bert_fp16.txt" 2>&1
for f in bert bert_fp16; do
  ortgpu bench $M/$f.onnx --provider cuda --opt all --save-optimized $M/${f}_ortcuda.onnx --iterations 1 --warmup 0 --no-check $BS > /dev/null 2>&1
  hist $M/${f}_ortcuda.onnx >> "$L/hist.txt" 2>&1
done
python3 - > "$L/pyopt.txt" 2>&1 <<'PY'
from onnxruntime.transformers import optimizer
o = optimizer.optimize_model('/tmp/models/bert.onnx', model_type='bert', num_heads=12, hidden_size=768, opt_level=0, use_gpu=True)
print('fused', o.get_fused_operator_statistics())
o.save_model_to_file('/tmp/models/bert_pyopt.onnx')
o.convert_float_to_float16(keep_io_types=True)
o.save_model_to_file('/tmp/models/bert_pyopt_pyfp16.onnx')
PY
hist $M/bert_pyopt.onnx >> "$L/hist.txt" 2>&1
ortgpu convert $M/bert_pyopt.onnx --to fp16 -o $M/bert_pyopt_fp16.onnx --provider cuda $BS --batch 8 > "$L/c_bert_pyopt_fp16.txt" 2>&1
hist $M/bert_pyopt_fp16.onnx >> "$L/hist.txt" 2>&1
for f in bert bert_fp16 bert_pyopt bert_pyopt_fp16 bert_pyopt_pyfp16; do
  [ -f $M/$f.onnx ] && timeout 120 ortgpu bench $M/$f.onnx --provider cuda --io bound --batch 32,128 $BS --iterations 100 --no-check > "$L/p_$f.txt" 2>&1
done
# ResNet-50 in the same run: TF32 against fp16 (bound I/O and CUDA graphs), NHWC
R=$M/resnet50.onnx
ortgpu convert $R --to fp16 -o $M/resnet50_fp16.onnx --provider cuda --batch 32 > "$L/c_resnet_fp16.txt" 2>&1
for f in resnet50 resnet50_fp16; do
  for io in bound cuda-graph; do
    timeout 120 ortgpu bench $M/$f.onnx --provider cuda --io $io --cuda-option prefer_nhwc=1 --batch 32,128 --iterations 200 --no-check > "$L/p_${f}_$io.txt" 2>&1
  done
done
date -u
