#!/usr/bin/python3
"""Writes the ONNX files of examples/model_repository (committed; re-run only to change them).

Needs Debian's python3-onnx:  /usr/bin/python3 examples/make_example_models.py
  add_sub/1/model.onnx     INPUT0, INPUT1 FP32 [batch,4] -> OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1
  classifier/1/model.onnx  features FP32 [batch,4] -> probabilities FP32 [batch,3] = Softmax(features x W + b)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "model_repository")


def save(model, name):
    path = os.path.join(REPO, name, "1", "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(path, os.path.getsize(path), "bytes")


def opsets():
    return [helper.make_opsetid("", 17)]


def add_sub():
    batch4 = ["batch", 4]
    graph = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        "add_sub",
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, batch4),
         helper.make_tensor_value_info("INPUT1", TensorProto.FLOAT, batch4)],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, batch4),
         helper.make_tensor_value_info("OUTPUT1", TensorProto.FLOAT, batch4)])
    model = helper.make_model(graph, opset_imports=opsets(), producer_name="ortgpu-examples")
    model.ir_version = 8
    return model


def classifier():
    # Fixed weights, so the expected outputs in examples/README.md stay true.
    w = np.array([[1.0, 0.0, -1.0],
                  [0.5, 1.0, 0.0],
                  [0.0, -0.5, 1.0],
                  [-1.0, 0.25, 0.5]], dtype=np.float32)
    b = np.array([0.1, 0.0, -0.1], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "W"], ["logits_mm"]),
         helper.make_node("Add", ["logits_mm", "b"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1)],
        "classifier",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=opsets(), producer_name="ortgpu-examples")
    model.ir_version = 8
    return model


def main():
    save(add_sub(), "add_sub")
    save(classifier(), "classifier")
    return 0


if __name__ == "__main__":
    sys.exit(main())
