#!/usr/bin/python3
"""Write small ONNX models shaped like real pretrained ones into a model repository.

Each model is one that the old default warm-up (zeros, every symbolic dim 1, empty strings)
could not run, as real voice-activity detectors, OCR detectors and string models cannot:

  reflect_pad    x float [batch, 2, samples] -> Pad(mode=reflect, 2 on the last axis): needs
                 samples >= 3
  sample_rate_if x float [batch, samples], sr int64 scalar -> If(sr == 16000) frames of 16
                 samples, else frames of 80: needs the sample rate (a zero or a one picks the
                 8 kHz branch, whose frames do not fit 1, 2, 16 or 64 samples)
  string_cast    text string [batch] -> Cast to float: needs non-empty numeric strings
  lstm_state     x float [seq, batch, 4], h0/c0 float [1, batch, 8] -> LSTM with state
                 (no leading batch dim: served with max_batch_size 0)
  rate_if        sample_rate_if with its rate input named "rate", which no generated input
                 guesses: warm-up needs --warmup-input rate=FILE.npy (or a model_warmup)
  pool_up        x float [batch, 1, height, width] -> MaxPool /4, Upsample x4, Add x: needs
                 height and width multiples of 4 (a 100x150 request fails at run time)

OUT/<model>/1/model.onnx, no config.pbtxt. Needs python3-onnx.

Usage: make_real_models.py OUT
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OPSET = 17


def save(out, name, graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ortgpu-tests")
    onnx.checker.check_model(model)
    folder = os.path.join(out, name, "1")
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def reflect_pad():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, "samples"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, "padded"])
    pad = helper.make_node("Pad", ["x", "pads"], ["y"], name="reflect_pad", mode="reflect")
    return helper.make_graph([pad], "reflect_pad", [x], [y], [ints("pads", [0, 0, 2, 0, 0, 2])])


def sample_rate_if(rate_name="sr"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "samples"])
    sr = helper.make_tensor_value_info(rate_name, TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "frames"])

    def branch(frame):
        out = helper.make_tensor_value_info("framed_%d" % frame, TensorProto.FLOAT, None)
        shape = "frame_shape_%d" % frame
        return helper.make_graph(
            [helper.make_node("Constant", [], [shape], value=ints(shape, [0, -1, frame])),
             helper.make_node("Reshape", ["x", shape], ["frames_%d" % frame], name="frames_of_%d" % frame),
             helper.make_node("ReduceSum", ["frames_%d" % frame, "last_axis"], ["framed_%d" % frame], keepdims=0)],
            "frames_%d" % frame, [], [out])

    nodes = [
        helper.make_node("Equal", [rate_name, "rate_16k"], ["is_16k"]),
        helper.make_node("If", ["is_16k"], ["y"], name="branch_on_sample_rate", then_branch=branch(16),
                         else_branch=branch(80)),
    ]
    inits = [helper.make_tensor("rate_16k", TensorProto.INT64, [], [16000]), ints("last_axis", [-1])]
    return helper.make_graph(nodes, "sample_rate_if", [x, sr], [y], inits)


def string_cast():
    text = helper.make_tensor_value_info("text", TensorProto.STRING, ["batch"])
    y = helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch"])
    cast = helper.make_node("Cast", ["text"], ["value"], name="parse_number", to=TensorProto.FLOAT)
    return helper.make_graph([cast], "string_cast", [text], [y])


def lstm_state():
    hidden = 8
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", "batch", 4])
    h0 = helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, "batch", hidden])
    c0 = helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, "batch", hidden])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 1, "batch", hidden]),
            helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, "batch", hidden]),
            helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, "batch", hidden])]

    def weights(name, rows, cols, seed):
        values = [((i * 7 + seed * 13) % 17 - 8) / 40.0 for i in range(rows * cols)]
        return helper.make_tensor(name, TensorProto.FLOAT, [1, rows, cols], values)

    bias = helper.make_tensor("B", TensorProto.FLOAT, [1, 8 * hidden], [(i % 5 - 2) / 10.0 for i in range(8 * hidden)])
    inits = [weights("W", 4 * hidden, 4, 1), weights("R", 4 * hidden, hidden, 2), bias]
    lstm = helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "h", "c"], name="lstm",
                            hidden_size=hidden)
    return helper.make_graph([lstm], "lstm_state", [x, h0, c0], outs, inits)


def pool_up():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, "height", "width"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1, "height", "width"])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["pooled"], name="pool", kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Resize", ["pooled", "", "scales"], ["up"], name="upsample", mode="nearest"),
        helper.make_node("Add", ["up", "x"], ["y"], name="skip_add"),
    ]
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1.0, 1.0, 4.0, 4.0])
    return helper.make_graph(nodes, "pool_up", [x], [y], [scales])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    for name, build in [("reflect_pad", reflect_pad), ("sample_rate_if", sample_rate_if),
                        ("rate_if", lambda: sample_rate_if("rate")), ("string_cast", string_cast), ("lstm_state", lstm_state), ("pool_up", pool_up)]:
        save(out, name, build())


if __name__ == "__main__":
    main()
