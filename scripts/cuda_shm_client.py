#!/usr/bin/env python3
"""A CUDA shared memory client for `ortgpu serve` (Triton's protocol), with
nothing but the standard library: ctypes on libcudart and urllib.

  scripts/cuda_shm_client.py [--url http://127.0.0.1:8000] [--model resnet50]
                             [--device 0] [--iterations 20] [--seed 1]

It asks the model's metadata for its first input and output (the batch
dimension set to 1), cudaMallocs an input and an output buffer on --device,
uploads one batch-1 image (deterministic pseudo-random values), exports both
buffers with cudaIpcGetMemHandle and registers them
(POST /v2/cudasharedmemory/region/NAME/register with raw_handle.b64,
device_id, byte_size), infers with the input and the output in the regions,
copies the output back and compares it with the same image sent as a binary
HTTP request (max abs diff), then unregisters both regions and frees them.
It also times --iterations requests of each kind, one at a time.

Prints one JSON line; exits 1 when the outputs differ by more than --tolerance
(or anything fails), 0 otherwise.
"""
import argparse
import array
import base64
import ctypes
import ctypes.util
import json
import random
import struct
import sys
import time
import urllib.error
import urllib.request

CUDA_MEMCPY_HOST_TO_DEVICE = 1
CUDA_MEMCPY_DEVICE_TO_HOST = 2
IPC_HANDLE_BYTES = 64
ELEMENT_BYTES = {"FP32": 4, "FP16": 2, "FP64": 8, "INT64": 8, "INT32": 4, "INT8": 1, "UINT8": 1, "BOOL": 1}


class CudaIpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


def load_cudart():
    names = []
    found = ctypes.util.find_library("cudart")
    if found:
        names.append(found)
    names += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(f"{name}: {e}")
    raise SystemExit("cannot load libcudart (" + "; ".join(errors) +
                     "); run `source .gpu-carry/stage.sh` or put libcudart.so on LD_LIBRARY_PATH")


class Cuda:
    def __init__(self, device):
        self.rt = load_cudart()
        self.rt.cudaGetErrorString.restype = ctypes.c_char_p
        self.rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.rt.cudaFree.argtypes = [ctypes.c_void_p]
        self.rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.rt.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        self.rt.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(CudaIpcMemHandle), ctypes.c_void_p]
        self.check(self.rt.cudaSetDevice(device), "cudaSetDevice")

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed: CUDA error {rc} ({self.rt.cudaGetErrorString(rc).decode()})")

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.rt.cudaMalloc(ctypes.byref(p), nbytes), "cudaMalloc")
        return p

    def upload(self, dst, data):
        buf = (ctypes.c_char * len(data)).from_buffer_copy(data)
        self.check(self.rt.cudaMemcpy(dst, buf, len(data), CUDA_MEMCPY_HOST_TO_DEVICE), "cudaMemcpy (to device)")

    def download(self, src, nbytes):
        buf = (ctypes.c_char * nbytes)()
        self.check(self.rt.cudaMemcpy(buf, src, nbytes, CUDA_MEMCPY_DEVICE_TO_HOST), "cudaMemcpy (to host)")
        return bytes(buf)

    def ipc_handle(self, p):
        h = CudaIpcMemHandle()
        self.check(self.rt.cudaIpcGetMemHandle(ctypes.byref(h), p), "cudaIpcGetMemHandle")
        # bytes(h.reserved) would stop at the handle's first zero byte
        return ctypes.string_at(ctypes.addressof(h), ctypes.sizeof(h))


def http(url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def post_json(url, obj):
    status, body, _ = http(url, json.dumps(obj).encode(), {"Content-Type": "application/json"})
    if status != 200:
        raise RuntimeError(f"POST {url}: HTTP {status}: {body.decode(errors='replace')}")
    return json.loads(body) if body else {}


def concrete(shape):
    return [1 if d < 0 else d for d in shape]


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def binary_infer(base, model, inp, out, image):
    header = json.dumps({
        "inputs": [{"name": inp["name"], "datatype": inp["datatype"], "shape": inp["shape"],
                    "parameters": {"binary_data_size": len(image)}}],
        "outputs": [{"name": out["name"], "parameters": {"binary_data": True}}],
    }).encode()
    status, body, headers = http(f"{base}/v2/models/{model}/infer", header + image,
                                 {"Content-Type": "application/octet-stream",
                                  "Inference-Header-Content-Length": str(len(header))})
    if status != 200:
        raise RuntimeError(f"binary infer: HTTP {status}: {body.decode(errors='replace')}")
    json_len = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    return body[json_len:]


def shm_infer(base, model, inp, out, in_bytes, out_bytes):
    request = {
        "inputs": [{"name": inp["name"], "datatype": inp["datatype"], "shape": inp["shape"],
                    "parameters": {"shared_memory_region": "ortgpu_in", "shared_memory_byte_size": in_bytes}}],
        "outputs": [{"name": out["name"],
                     "parameters": {"shared_memory_region": "ortgpu_out", "shared_memory_byte_size": out_bytes}}],
    }
    reply = post_json(f"{base}/v2/models/{model}/infer", request)
    o = reply["outputs"][0]
    # In its region: name, datatype and shape alone, as Triton answers (no data, no parameters).
    if "data" in o or "parameters" in o:
        raise RuntimeError(f"the output did not come back in its region: {json.dumps(o)[:300]}")
    return reply


def floats(raw, datatype):
    if datatype == "FP32":
        a = array.array("f")
        a.frombytes(raw)
        return list(a)
    if datatype == "FP16":
        return [struct.unpack("<e", raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    return list(raw)


def timed(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    samples.sort()
    return {"p50_ms": round(samples[len(samples) // 2], 3), "mean_ms": round(sum(samples) / len(samples), 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    a = ap.parse_args()
    base = a.url.rstrip("/")
    result = {"model": a.model, "device": a.device}
    cuda = None
    regions = []
    buffers = []
    try:
        status, body, _ = http(f"{base}/v2/models/{a.model}")
        if status != 200:
            raise RuntimeError(f"GET /v2/models/{a.model}: HTTP {status}: {body.decode(errors='replace')}")
        md = json.loads(body)
        inp = dict(md["inputs"][0], shape=concrete(md["inputs"][0]["shape"]))
        out = dict(md["outputs"][0], shape=concrete(md["outputs"][0]["shape"]))
        if inp["datatype"] not in ("FP32", "FP16"):
            raise RuntimeError(f"input {inp['name']} is {inp['datatype']}; this client sends FP32 or FP16 images")
        in_bytes = count(inp["shape"]) * ELEMENT_BYTES[inp["datatype"]]
        out_bytes = count(out["shape"]) * ELEMENT_BYTES.get(out["datatype"], 4)
        rng = random.Random(a.seed)
        values = [rng.random() for _ in range(count(inp["shape"]))]
        image = (array.array("f", values).tobytes() if inp["datatype"] == "FP32"
                 else b"".join(struct.pack("<e", v) for v in values))

        cuda = Cuda(a.device)
        d_in, d_out = cuda.malloc(in_bytes), cuda.malloc(out_bytes)
        buffers = [d_in, d_out]
        cuda.upload(d_in, image)
        cuda.check(cuda.rt.cudaMemset(d_out, 0, out_bytes), "cudaMemset")
        for name, p, n in (("ortgpu_in", d_in, in_bytes), ("ortgpu_out", d_out, out_bytes)):
            post_json(f"{base}/v2/cudasharedmemory/region/{name}/register",
                      {"raw_handle": {"b64": base64.b64encode(cuda.ipc_handle(p)).decode()},
                       "device_id": a.device, "byte_size": n})
            regions.append(name)
        status, body, _ = http(f"{base}/v2/cudasharedmemory/status")
        result["regions"] = json.loads(body) if status == 200 else body.decode(errors="replace")

        shm_infer(base, a.model, inp, out, in_bytes, out_bytes)
        from_shm = floats(cuda.download(d_out, out_bytes), out["datatype"])
        from_http = floats(binary_infer(base, a.model, inp, out, image), out["datatype"])
        if len(from_shm) != len(from_http):
            raise RuntimeError(f"{len(from_shm)} output values through CUDA shared memory, {len(from_http)} over HTTP")
        diff = max(abs(x - y) for x, y in zip(from_shm, from_http))
        result.update(input=inp["name"], output=out["name"], input_bytes=in_bytes, output_bytes=out_bytes,
                      max_abs_diff=diff, match=diff <= a.tolerance,
                      argmax_shm=max(range(len(from_shm)), key=from_shm.__getitem__),
                      argmax_http=max(range(len(from_http)), key=from_http.__getitem__))
        if a.iterations > 0:
            result["cuda_shm_latency"] = timed(lambda: shm_infer(base, a.model, inp, out, in_bytes, out_bytes),
                                               a.iterations)
            result["binary_http_latency"] = timed(lambda: binary_infer(base, a.model, inp, out, image), a.iterations)
    except Exception as e:  # noqa: BLE001 - reported in the JSON line
        result["error"] = str(e)
    finally:
        for name in regions:
            try:
                post_json(f"{base}/v2/cudasharedmemory/region/{name}/unregister", {})
            except Exception as e:  # noqa: BLE001
                result.setdefault("unregister_errors", []).append(str(e))
        if cuda is not None:
            for p in buffers:
                cuda.rt.cudaFree(p)
    print(json.dumps(result))
    return 0 if result.get("match") and "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main())
