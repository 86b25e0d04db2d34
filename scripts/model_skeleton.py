#!/usr/bin/python3
"""Carry a large ONNX model's graph without its weights, and give it weights again elsewhere.

The GPU machine exports the real architectures (export_models.py), but a ResNet-50 or BERT-base
file (100-440 MB) cannot come back from it. `strip` keeps the graph and every small initializer
(shape constants, scalars: 1,024 elements or fewer) and empties each larger floating-point one,
recording its dtype, shape, mean and standard deviation in the initializer's doc_string; the
skeleton is a few hundred KB. `fill` draws each emptied initializer again from a normal
distribution with that mean and deviation (seeded), so the model has the export's graph, shapes
and weight scales: what conversion time and accuracy depend on, not the trained values.

usage: model_skeleton.py strip MODEL.onnx SKELETON.onnx
       model_skeleton.py fill SKELETON.onnx MODEL.onnx [SEED]
"""
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper

SMALL = 1024
TAG = "ortgpu-skeleton "
FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}


def strip(src, dst):
    m = onnx.load(src)
    emptied = 0
    for t in m.graph.initializer:
        if t.data_type not in FLOATS or int(np.prod(t.dims)) <= SMALL:
            continue
        a = numpy_helper.to_array(t).astype(np.float64)
        info = {"mean": float(a.mean()), "std": float(a.std())}
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.ClearField("double_data")
        t.ClearField("int32_data")
        t.doc_string = TAG + json.dumps(info)
        emptied += 1
    onnx.save(m, dst)
    print(f"{dst}: {emptied} initializers emptied")


def fill(src, dst, seed):
    m = onnx.load(src)
    rng = np.random.default_rng(seed)
    filled = 0
    for t in m.graph.initializer:
        if not t.doc_string.startswith(TAG):
            continue
        info = json.loads(t.doc_string[len(TAG):])
        dtype = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
                 onnx.TensorProto.DOUBLE: np.float64}[t.data_type]
        a = rng.normal(info["mean"], info["std"], size=tuple(t.dims)).astype(dtype)
        t.CopyFrom(numpy_helper.from_array(a, t.name))
        filled += 1
    onnx.save(m, dst)
    print(f"{dst}: {filled} initializers filled")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "strip":
        strip(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "fill":
        fill(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    else:
        sys.exit(__doc__)
