#!/usr/bin/python3
"""Writes a KServe v2 binary-tensor request body for wrk (benchmarks/wrk_binary_infer.lua).

  make_binary_request.py OUT NAME:DTYPE:DIMS [NAME:DTYPE:DIMS ...] [--output NAME ...]
  e.g. make_binary_request.py /tmp/req.bin input:FP32:1x3x224x224
Prints the JSON header's length (the Inference-Header-Content-Length value) on stdout.
Values are random in [-1, 1) for floats and [0, 100) for integers; BYTES is not supported.
"""
import json
import random
import struct
import sys

SIZES = {"FP32": ("f", 4), "FP64": ("d", 8), "INT64": ("q", 8), "INT32": ("i", 4), "UINT8": ("B", 1), "INT8": ("b", 1)}


def main(argv):
    out, specs, outputs = argv[1], [], []
    args = iter(argv[2:])
    for a in args:
        if a == "--output":
            outputs.append(next(args))
        else:
            specs.append(a)
    rng = random.Random(1)
    inputs, blobs = [], []
    for spec in specs:
        name, dtype, dims = spec.split(":")
        shape = [int(d) for d in dims.split("x")]
        count = 1
        for d in shape:
            count *= d
        fmt, size = SIZES[dtype]
        if fmt in "fd":
            values = [rng.uniform(-1, 1) for _ in range(count)]
        else:
            values = [rng.randrange(0, 100) for _ in range(count)]
        blob = struct.pack("<%d%s" % (count, fmt), *values)
        inputs.append({"name": name, "datatype": dtype, "shape": shape, "parameters": {"binary_data_size": len(blob)}})
        blobs.append(blob)
    header = {"inputs": inputs}
    if outputs:
        header["outputs"] = [{"name": n, "parameters": {"binary_data": True}} for n in outputs]
    else:
        header["parameters"] = {"binary_data_output": True}
    text = json.dumps(header, separators=(",", ":")).encode()
    with open(out, "wb") as f:
        f.write(text)
        for b in blobs:
            f.write(b)
    print(len(text))


if __name__ == "__main__":
    main(sys.argv)
