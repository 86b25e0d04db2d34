#!/usr/bin/python3
"""Turn the ONNX backend node tests into an ortgpu/Triton model repository.

Reads the node tests Debian's libonnx-testdata installs
(/usr/share/libonnx-testdata/data/node/test_*/{model.onnx,test_data_set_0/}) and writes

  OUT/repository/<test>/1/model.onnx      the test's model
  OUT/repository/<test>/config.pbtxt      max_batch_size: 0 (the tests have fixed shapes) and a
                                          model_warmup on the test's inputs (warmup/input_<i>.bin);
                                          none for tests with string inputs (generated warm-up)
  OUT/cases/<test>.json                   {"inputs": [...], "outputs": [...]} with name,
                                          datatype (KServe), shape and flat data

Tests whose inputs or outputs are not plain tensors (sequences, optionals) or use a type the
JSON form cannot carry are listed in OUT/skipped.txt with the reason. Needs python3-onnx.

Usage: make_conformance_repo.py OUT [--source DIR] [--filter SUBSTRING]
"""
import argparse
import json
import math
import os
import shutil
import sys

import onnx
from onnx import numpy_helper

KSERVE = {
    onnx.TensorProto.FLOAT: "FP32", onnx.TensorProto.DOUBLE: "FP64", onnx.TensorProto.FLOAT16: "FP16",
    onnx.TensorProto.INT8: "INT8", onnx.TensorProto.INT16: "INT16", onnx.TensorProto.INT32: "INT32",
    onnx.TensorProto.INT64: "INT64", onnx.TensorProto.UINT8: "UINT8", onnx.TensorProto.UINT16: "UINT16",
    onnx.TensorProto.UINT32: "UINT32", onnx.TensorProto.UINT64: "UINT64", onnx.TensorProto.BOOL: "BOOL",
    onnx.TensorProto.STRING: "BYTES",
}
DEFAULT_SOURCE = "/usr/share/libonnx-testdata/data/node"


def tensor_json(name, proto):
    if proto.data_type not in KSERVE:
        raise ValueError("datatype %s has no KServe form here" % onnx.TensorProto.DataType.Name(proto.data_type))
    arr = numpy_helper.to_array(proto)
    if proto.data_type == onnx.TensorProto.STRING:
        data = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in arr.flatten()]
    elif proto.data_type == onnx.TensorProto.FLOAT16:
        data = [float(x) for x in arr.astype("float32").flatten()]
    elif proto.data_type == onnx.TensorProto.BOOL:
        data = [bool(x) for x in arr.flatten()]
    else:
        data = arr.flatten().tolist()
    # JSON has no NaN or infinity: those travel as the strings "nan", "inf", "-inf".
    if arr.dtype.kind == "f":
        data = [x if math.isfinite(x) else str(x) for x in data]
    return {"name": name, "datatype": KSERVE[proto.data_type], "shape": list(arr.shape), "data": data}


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def convert(test_dir, name, out):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    data_dir = os.path.join(test_dir, "test_data_set_0")
    if not os.path.isdir(data_dir):
        raise ValueError("no test_data_set_0")
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    for v in list(graph_inputs) + list(model.graph.output):
        if not v.type.HasField("tensor_type"):
            raise ValueError("'%s' is not a tensor (%s)" % (v.name, v.type.WhichOneof("value")))
    case = {"inputs": [], "outputs": []}
    model_dir = os.path.join(out, "repository", name)
    os.makedirs(os.path.join(model_dir, "warmup"), exist_ok=True)
    # Warm up on the test's own inputs: zeros are not valid for every operator (Reshape's shape).
    warmup = []
    for i, v in enumerate(graph_inputs):
        path = os.path.join(data_dir, "input_%d.pb" % i)
        if not os.path.exists(path):
            continue  # an optional input the test leaves out
        proto = read_tensor(path)
        case["inputs"].append(tensor_json(v.name, proto))
        dt = case["inputs"][-1]["datatype"]
        arr = numpy_helper.to_array(proto)
        dims = " ".join("dims: %d" % d for d in arr.shape)
        if dt == "BYTES":
            source = "zero_data: true"
        else:
            with open(os.path.join(model_dir, "warmup", "input_%d.bin" % i), "wb") as f:
                f.write(arr.tobytes())
            source = 'input_data_file: "input_%d.bin"' % i
        warmup.append('inputs { key: "%s" value { data_type: TYPE_%s %s %s } }'
                      % (v.name, "STRING" if dt == "BYTES" else dt, dims, source))
    for i, v in enumerate(model.graph.output):
        case["outputs"].append(tensor_json(v.name, read_tensor(os.path.join(data_dir, "output_%d.pb" % i))))
    os.makedirs(os.path.join(model_dir, "1"), exist_ok=True)
    shutil.copyfile(os.path.join(test_dir, "model.onnx"), os.path.join(model_dir, "1", "model.onnx"))
    with open(os.path.join(model_dir, "config.pbtxt"), "w") as f:
        f.write("max_batch_size: 0\n")
        # A model_warmup cannot carry strings from a file (zero_data gives empty strings, which a Cast
        # of strings cannot parse): models with string inputs use the server's generated warm-up.
        if not any(i["datatype"] == "BYTES" for i in case["inputs"]):
            f.write('model_warmup [ { name: "test_data_set_0" batch_size: 1 %s } ]\n' % " ".join(warmup))
    with open(os.path.join(out, "cases", name + ".json"), "w") as f:
        json.dump(case, f, allow_nan=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--source", default=DEFAULT_SOURCE)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    if not os.path.isdir(args.source):
        sys.exit("no ONNX node tests at %s; install libonnx-testdata (apt-get install libonnx-testdata)" % args.source)
    os.makedirs(os.path.join(args.out, "repository"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "cases"), exist_ok=True)
    converted, skipped = 0, []
    for name in sorted(os.listdir(args.source)):
        test_dir = os.path.join(args.source, name)
        if args.filter not in name or not os.path.exists(os.path.join(test_dir, "model.onnx")):
            continue
        try:
            convert(test_dir, name, args.out)
            converted += 1
        except Exception as e:  # one bad test never stops the rest
            shutil.rmtree(os.path.join(args.out, "repository", name), ignore_errors=True)
            skipped.append("%s: %s" % (name, e))
    with open(os.path.join(args.out, "skipped.txt"), "w") as f:
        f.write("\n".join(skipped) + ("\n" if skipped else ""))
    print("converted %d node tests, skipped %d (see %s)" % (converted, len(skipped),
                                                              os.path.join(args.out, "skipped.txt")))


if __name__ == "__main__":
    main()
