#!/usr/bin/env python3
"""deploy/docker/Dockerfile, checked without a container engine.

  dockerfile_test.py BINARY TARBALL SOURCE_DIR

Every COPY source exists (in the build context, or in what the build stage
made from the bundle after `make package`); the ports, the model volume,
the user, the entrypoint and the health check agree with `ortgpu serve`'s
flags and defaults as its --help prints them; the HEALTHCHECK command itself
runs against a live `ortgpu serve` and tells ready from not ready. The
runtime stage's user space is what the chroot bundle test stands for.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_support import ServeChild, fail, serve_flags  # noqa: E402


def parse(path):
    """[(stage name, [(INSTRUCTION, text)])] of a Dockerfile; ARGs before the first FROM as stage None."""
    lines, cur = [], ""
    for raw in open(path):
        line = raw.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        lines.append(cur + line)
        cur = ""
    stages = [(None, [])]
    for line in lines:
        instr, _, rest = line.strip().partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest.strip(), re.I)
            stages.append((m.group(2), [("FROM", m.group(1))]))
        else:
            stages[-1][1].append((instr, rest.strip()))
    return stages


def one(stage, instr):
    found = [t for i, t in stage if i == instr]
    if len(found) != 1:
        fail(f"the runtime stage has {len(found)} {instr} lines, not one")
    return found[0]


def main():
    binary, tarball, source = sys.argv[1:4]
    dockerfile = os.path.join(source, "deploy", "docker", "Dockerfile")
    flags = serve_flags(binary)
    stages = parse(dockerfile)
    args = {m.group(1): m.group(2) for i, t in stages[0][1] if i == "ARG" for m in [re.match(r"(\w+)=(\S+)", t)] if m}
    if len(stages) != 3:
        fail(f"the Dockerfile has {len(stages) - 1} stages, not two (build, runtime)")
    (build_name, build), (_, runtime) = stages[1], stages[2]
    if build[0][1] not in ("debian:12", "debian:bookworm") and not build[0][1].startswith("debian:12"):
        fail(f"the build stage is FROM {build[0][1]}, not Debian 12")
    base = runtime[0][1]
    base = args.get(base.strip("${}"), base)
    if not re.match(r"nvidia/cuda:13\.[0-9.]+-cudnn-runtime-ubuntu\d\d\.04$", base):
        fail(f"the runtime stage is FROM {base}, not an nvidia/cuda 13 cuDNN runtime image")

    # COPY sources: the build context (the repository) and the build stage's bundle.
    for instr, text in build:
        if instr == "COPY":
            *srcs, _ = shlex.split(text)
            for s in srcs:
                if not os.path.exists(os.path.join(source, s)):
                    fail(f"build stage COPY {s}: no such path in the repository")
    run = " ".join(t for i, t in build if i == "RUN")
    m = re.search(r"tar -xzf (\S+) -C (\S+) --strip-components=1", run)
    made = re.search(r"make package BUILD=(\S+)", run)
    if not m or not made:
        fail("the build stage does not `make package BUILD=DIR` and unpack the bundle with tar -xzf ... --strip-components=1")
    pattern, unpacked = m.group(1), m.group(2)
    glob = os.path.basename(pattern).replace(".", r"\.").replace("*", ".*")
    if os.path.dirname(pattern) != made.group(1) or not re.fullmatch(glob, os.path.basename(tarball)):
        fail(f"the build stage unpacks {pattern}, but make package BUILD={made.group(1)} writes "
             f"{made.group(1)}/{os.path.basename(tarball)}")
    with tarfile.open(tarball) as t:
        bundle_files = {"/".join(n.split("/")[1:]) for n in t.getnames()}
    copies = [shlex.split(t) for i, t in runtime if i == "COPY"]
    if not copies:
        fail("the runtime stage copies nothing")
    for c in copies:
        if c[0] != f"--from={build_name}" or c[1] != unpacked:
            fail(f"runtime COPY {' '.join(c)}: only the bundle ({unpacked}) from stage {build_name} belongs there")
    prefix = copies[0][2]
    env = one(runtime, "ENV")
    if f"PATH={prefix}/bin:" not in env or "bin/ortgpu" not in bundle_files:
        fail(f"ENV PATH does not start with {prefix}/bin, where the bundle's bin/ortgpu lands")
    if "CUDA_MODULE_LOADING=LAZY" not in env.split():
        fail("ENV lacks CUDA_MODULE_LOADING=LAZY")

    # The server's side: ports, volume, user, entrypoint, health check.
    exposed = set(one(runtime, "EXPOSE").split())
    want = {flags["--http-port"], flags["--grpc-port"], flags["--metrics-port"]}
    if exposed != want:
        fail(f"EXPOSE {sorted(exposed)}, but serve's default ports are {sorted(want)}")
    if json.loads(one(runtime, "ENTRYPOINT")) != ["ortgpu", "serve"]:
        fail(f"ENTRYPOINT is {one(runtime, 'ENTRYPOINT')}, not [\"ortgpu\", \"serve\"]")
    cmd = json.loads(one(runtime, "CMD"))
    for flag in cmd:
        if flag.startswith("--") and flag not in flags:
            fail(f"CMD passes {flag}, which `ortgpu serve --help` does not list")
    opts = dict(zip(cmd[::2], cmd[1::2]))
    volume = json.loads(one(runtime, "VOLUME"))
    if opts.get("--model-repository") not in volume:
        fail(f"CMD's --model-repository {opts.get('--model-repository')} is not the VOLUME {volume}")
    if opts.get("--host") != "0.0.0.0":
        fail(f"CMD's --host is {opts.get('--host')}: serve's default {flags['--host']} is unreachable from outside a container")
    user = one(runtime, "USER").split(":")[0]
    if user in ("0", "root") or not re.search(rf"useradd .*--uid {user}\b", " ".join(t for i, t in runtime if i == "RUN")):
        fail(f"USER {user}: not a non-root user the runtime stage creates")

    health = one(runtime, "HEALTHCHECK")
    hc = json.loads(health[health.index("CMD") + 3:].strip())
    port = flags["--http-port"]
    if f"/dev/tcp/127.0.0.1/{port}" not in hc[-1] or "GET /v2/health/ready " not in hc[-1]:
        fail(f"HEALTHCHECK does not ask /v2/health/ready on serve's HTTP port {port}: {hc}")
    # The health check against a live server: healthy when ready, unhealthy when nothing listens.
    with ServeChild([binary, "serve", "--model-repository", os.path.join(source, "examples", "model_repository"),
                     "--http-port", "0", "--metrics-port", "0", "--grpc-port", "-1"]) as s:
        live = [a.replace(f"/{port}", f"/{s.http_port}") for a in hc]
        if subprocess.run(live, timeout=30).returncode != 0:
            fail(f"HEALTHCHECK {live} fails against a ready server:\n{s.output}")
        s.stop()
        if subprocess.run(live, timeout=30, stderr=subprocess.DEVNULL).returncode == 0:
            fail("HEALTHCHECK passes with no server listening")
    print("Dockerfile agrees with the bundle and ortgpu serve")


if __name__ == "__main__":
    main()
