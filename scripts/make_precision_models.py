#!/usr/bin/python3
"""Write float32 models shaped like ResNet-50 and BERT-base (random weights) for timing
`ortgpu convert` where torch is not installed (scripts/ and docs/PRECISION.md).

  resnet50.onnx  input [batch,3,224,224] -> output [batch,1000]: the 53 convolutions (batch
                 norm folded, as torch exports eval mode), 16 residual Adds, pooling, Gemm;
                 25.5 M weights
  bert.onnx      input_ids, attention_mask, token_type_ids int64 [batch,seq] ->
                 last_hidden_state [batch,seq,768]: embeddings (Gather x3, LayerNormalization),
                 12 layers of attention (MatMul/Add, Reshape/Transpose, scaled scores, the
                 additive mask, Softmax) and GELU (Erf) feed-forward; 109 M weights

The graphs are the real architectures' node for node in kind and count (within a few shape
nodes); the lead's export_models.py makes the torch exports on the GPU machine. Needs
python3-onnx and numpy.

Usage: make_precision_models.py OUT [resnet50] [bert]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(1)


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def weight(self, shape, scale=0.05):
        name = f"w{len(self.inits)}"
        self.inits.append(numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, array, dtype=np.int64):
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.array(array, dtype=dtype), name))
        return name

    def node(self, op, inputs, **attrs):
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{op}_{self.count}", **attrs))
        return out


def resnet50():
    g = Graph()

    def conv(x, cin, cout, k, stride=1, relu=True):
        y = g.node("Conv", [x, g.weight([cout, cin, k, k]), g.weight([cout], 0.01)],
                   kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        return g.node("Relu", [y]) if relu else y

    x = conv("input", 3, 64, 7, 2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            s = stride if b == 0 else 1
            y = conv(x, cin, width, 1)
            y = conv(y, width, width, 3, s)
            y = conv(y, width, width * 4, 1, relu=False)
            short = conv(x, cin, width * 4, 1, s, relu=False) if b == 0 else x
            x = g.node("Relu", [g.node("Add", [y, short])])
            cin = width * 4
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    g.nodes.append(helper.make_node("Gemm", [x, g.weight([1000, 2048]), g.weight([1000], 0.01)], ["output"],
                                    name="/fc/Gemm", transB=1))
    return helper.make_graph(g.nodes, "resnet50",
                             [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
                             [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1000])], g.inits)


def bert():
    g = Graph()
    hidden, heads, layers, ffn = 768, 12, 12, 3072

    def layer_norm(x):
        return g.node("LayerNormalization", [x, g.weight([hidden], 1.0), g.weight([hidden], 0.01)], axis=-1,
                      epsilon=1e-12)

    def linear(x, cin, cout):
        return g.node("Add", [g.node("MatMul", [x, g.weight([cin, cout])]), g.weight([cout], 0.01)])

    emb = g.node("Add", [g.node("Gather", [g.weight([30522, hidden]), "input_ids"]),
                         g.node("Gather", [g.weight([2, hidden]), "token_type_ids"])])
    seq = g.node("Gather", [g.node("Shape", ["input_ids"]), g.const(1)], axis=0)
    positions = g.node("Unsqueeze", [g.node("Range", [g.const(0), seq, g.const(1)]), g.const([0])])
    x = layer_norm(g.node("Add", [emb, g.node("Gather", [g.weight([512, hidden]), positions])]))
    # The additive mask (1 - mask) * finfo(float32).min, as transformers builds it.
    mask = g.node("Cast", [g.node("Unsqueeze", ["attention_mask", g.const([1, 2])])], to=TensorProto.FLOAT)
    mask = g.node("Mul", [g.node("Sub", [g.const(1.0, np.float32), mask]), g.const(-3.4028234663852886e38, np.float32)])
    split_heads = g.const([0, 0, heads, hidden // heads])
    merge_heads = g.const([0, 0, hidden])
    for _ in range(layers):
        q, k, v = (g.node("Transpose", [g.node("Reshape", [linear(x, hidden, hidden), split_heads])], perm=p)
                   for p in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
        scores = g.node("Div", [g.node("MatMul", [q, k]), g.const(8.0, np.float32)])
        probs = g.node("Softmax", [g.node("Add", [scores, mask])], axis=-1)
        context = g.node("Reshape", [g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3]),
                                     merge_heads])
        x = layer_norm(g.node("Add", [linear(context, hidden, hidden), x]))
        h = linear(x, hidden, ffn)
        gelu = g.node("Mul", [g.node("Mul", [h, g.node("Add", [g.node("Erf", [g.node("Div", [
            h, g.const(1.4142135, np.float32)])]), g.const(1.0, np.float32)])]), g.const(0.5, np.float32)])
        x = layer_norm(g.node("Add", [linear(gelu, ffn, hidden), x]))
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/output"))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    return helper.make_graph(g.nodes, "bert", inputs,
                             [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                                            ["batch", "seq", hidden])], g.inits)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or ["resnet50", "bert"]:
        model = helper.make_model(globals()[name](), opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="ortgpu-precision")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        print(f"{name}.onnx: {len(model.graph.node)} nodes")
