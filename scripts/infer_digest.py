#!/usr/bin/env python3
"""infer_digest.py: the outputs of N distinct random binary requests, sent
concurrently so the server batches them, as JSON (per request: argmax and
the first values). Two servers (or configs) that compute the same thing give
the same digest: `--compare A.json B.json` checks that (exit 1 if not).

  infer_digest.py URL MODEL INPUT SHAPE OUTPUT [N] [SEED]   (SHAPE: 1x3x224x224)
  infer_digest.py --compare A.json B.json

INPUT is one input name, or several of one SHAPE comma-separated, each
NAME[:DATATYPE] (FP32 by default; INT64 inputs get random 0s and 1s, valid
token ids, masks and segment ids for BERT):
  input_ids:INT64,attention_mask:INT64,token_type_ids:INT64
"""
import concurrent.futures, json, random, struct, sys, urllib.request


def one(url, model, inp, shape, out, seed):
    rnd = random.Random(seed)
    count = 1
    for d in shape:
        count *= d
    inputs, data = [], b""
    for spec in inp.split(","):
        name, _, dtype = spec.partition(":")
        dtype = dtype or "FP32"
        if dtype == "INT64":
            part = struct.pack("<%dq" % count, *[rnd.randrange(2) for _ in range(count)])
        else:
            part = struct.pack("<%df" % count, *[rnd.uniform(-2, 2) for _ in range(count)])
        inputs.append({"name": name, "datatype": dtype, "shape": shape, "parameters": {"binary_data_size": len(part)}})
        data += part
    header = json.dumps({"inputs": inputs, "outputs": [{"name": out, "parameters": {"binary_data": True}}]}).encode()
    req = urllib.request.Request(url + "/v2/models/%s/infer" % model, data=header + data, method="POST",
                                 headers={"Inference-Header-Content-Length": str(len(header)),
                                          "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=60) as r:
        body = r.read()
        json_len = int(r.headers["Inference-Header-Content-Length"])
    values = struct.unpack("<%df" % ((len(body) - json_len) // 4), body[json_len:])
    best = max(range(len(values)), key=lambda i: values[i])
    return {"seed": seed, "argmax": best, "first": [round(v, 4) for v in values[:5]], "max": values[best]}


def main():
    if sys.argv[1] == "--compare":
        a, b = (json.load(open(p)) for p in sys.argv[2:4])
        bad = [(x["seed"], x["argmax"], y["argmax"]) for x, y in zip(a, b)
               if x["argmax"] != y["argmax"] or abs(x["max"] - y["max"]) > 1e-2 * max(1.0, abs(x["max"]))]
        print("%d of %d requests differ%s" % (len(bad), len(a), (": " + str(bad[:5])) if bad else ""))
        sys.exit(1 if bad or len(a) != len(b) else 0)
    url, model, inp, shape, out = sys.argv[1:6]
    n = int(sys.argv[6]) if len(sys.argv) > 6 else 48
    seed = int(sys.argv[7]) if len(sys.argv) > 7 else 1
    dims = [int(d) for d in shape.split("x")]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: one(url, model, inp, dims, out, seed + i), range(n)))
    json.dump(results, sys.stdout)


main()
