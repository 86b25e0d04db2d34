"""Helpers shared by the deployment tests (tests/deploy/*_test.py).

ServeChild runs `ortgpu serve` (any argv prefix: env -i, chroot, ...) as a
child process, reads its start-up summary for the ports it bound (the same
lines tests/e2e/serve_process.h reads) and stops it with SIGTERM. Every wait
has a deadline; nothing sleeps to synchronise. Not thread-safe.

Run through CTest (tests/CMakeLists.txt); a test that cannot run here exits
SKIP (77) with the reason, which CTest reports as skipped.
"""
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.request

SKIP = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


def run(argv, timeout=60):
    """Runs argv; (exit code, stdout + stderr)."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def serve_flags(binary):
    """The flags of `ortgpu serve --help`: flag -> its default as text ("8000"),
    "" for a flag without one. Read from the binary, so a test follows the
    server rather than a copy of its defaults."""
    code, text = run([binary, "serve", "--help"])
    if code != 0:
        fail(f"`{binary} serve --help` exited {code}:\n{text}")
    flags = {}
    for m in re.finditer(r"^\s*(--[a-z][a-z-]*)(?:\s+[A-Z](?:[^=\s]| (?=\S))*=(\S+))?", text, re.M):
        flags.setdefault(m.group(1), m.group(2) or "")
    if "--http-port" not in flags:
        fail(f"`ortgpu serve --help` lists no --http-port:\n{text}")
    return flags


class ServeChild:
    """`ARGV serve ...` with the ports it printed once it is up."""

    def __init__(self, argv, deadline_s=60):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output = ""
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + deadline_s
        http = metrics = None
        while time.monotonic() < end:
            if not sel.select(timeout=max(0.0, end - time.monotonic())):
                break
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            self.output += chunk.decode(errors="replace")
            http = re.search(r"HTTP: http://\S+:(\d+)\n", self.output)
            metrics = re.search(r"metrics: http://\S+:(\d+)/metrics\n", self.output)
            if http and metrics:
                break
        sel.close()
        if not (http and metrics):
            self.proc.kill()
            rest = self.proc.communicate()[0].decode(errors="replace")
            fail(f"`{' '.join(argv)}` did not print its ports within {deadline_s} s:\n{self.output}{rest}")
        self.http_port = int(http.group(1))
        self.metrics_port = int(metrics.group(1))
        grpc = re.search(r"gRPC: \S+:(\d+)\n", self.output)
        self.grpc_port = int(grpc.group(1)) if grpc else 0

    def get(self, path, port=None):
        return self.request("GET", path, port=port)

    def request(self, method, path, body=None, port=None, host=None):
        """(status, body text) of one HTTP exchange on 127.0.0.1; HOST: the Host header's name."""
        url = f"http://127.0.0.1:{port or self.http_port}{path}"
        req = urllib.request.Request(url, data=body, method=method)
        if host:
            req.add_header("Host", f"{host}:{port or self.http_port}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def infer(self, model, body):
        status, text = self.request("POST", f"/v2/models/{model}/infer", json.dumps(body).encode())
        if status != 200:
            fail(f"POST /v2/models/{model}/infer: {status} {text}")
        return json.loads(text)

    def stop(self, deadline_s=30):
        """SIGTERM, then the exit code (the server drains and exits 0)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rest = self.proc.communicate(timeout=deadline_s)[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest = self.proc.communicate()[0]
        self.output += rest.decode(errors="replace")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


ADD_SUB_REQUEST = {"inputs": [
    {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
    {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [10, 20, 30, 40]}]}


def check_serves_examples(argv_prefix, repository):
    """Serves the example repository with ARGV_PREFIX (e.g. env -i BUNDLE/bin/ortgpu)
    on free ports: ready, add_sub answers 1+10.., /metrics counts it, SIGTERM exits 0."""
    argv = argv_prefix + ["serve", "--model-repository", repository, "--http-port", "0",
                          "--metrics-port", "0", "--grpc-port", "0"]
    with ServeChild(argv) as s:
        status, text = s.get("/v2/health/ready")
        if status != 200:
            fail(f"/v2/health/ready: {status} {text}\n{s.output}")
        out = s.infer("add_sub", ADD_SUB_REQUEST)
        sums = next(o["data"] for o in out["outputs"] if o["name"] == "OUTPUT0")
        if sums != [11, 22, 33, 44]:
            fail(f"add_sub OUTPUT0 is {sums}, not [11, 22, 33, 44]")
        status, metrics = s.get("/metrics", port=s.metrics_port)
        if status != 200 or 'nv_inference_request_success{model="add_sub",version="1"} 1' not in metrics:
            fail(f"/metrics does not count the inference ({status}):\n{metrics[:2000]}")
        if s.grpc_port == 0:
            fail(f"no gRPC port in the start-up summary:\n{s.output}")
        code = s.stop()
        if code != 0:
            fail(f"serve exited {code} after SIGTERM, not 0:\n{s.output}")
