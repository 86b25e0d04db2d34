#!/usr/bin/env python3
"""A ResNet-50-shaped model that does (almost) nothing: the served data path's ceiling.

usage: python3 scripts/make_null_model.py OUT.onnx

input[batch,3,224,224] float32 -> output[batch,1000]: Flatten, then the first 1000
values of each row. The request and response bytes are ResNet-50's, the GPU work is
one copy, so a served run of it measures what HTTP, the batcher, the joining of a
batch and the host-device copies allow (scripts/h200_serve.sh, variants null-*).
Needs python3-onnx (the GPU machine has it).
"""
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
nodes = [
    helper.make_node("Flatten", ["input"], ["flat"], axis=1),
    helper.make_node("Slice", ["flat", "starts", "ends", "axes"], ["output"]),
]
inits = [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("starts", 0), ("ends", 1000), ("axes", 1))]
graph = helper.make_graph(
    nodes, "null_resnet_shaped",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1000])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
