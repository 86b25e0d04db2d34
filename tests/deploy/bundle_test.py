#!/usr/bin/env python3
"""The portable bundle (make package, scripts/package.sh) works on its own.

  bundle_test.py host   TARBALL VERSION SOURCE_DIR
      unpacked into an empty folder: its layout (RUNPATH, LICENSES/, README),
      then `bin/ortgpu --version`, `doctor --json` and `serve` of the example
      repository under `env -i` (no LD_LIBRARY_PATH, no PATH, no HOME).
  bundle_test.py chroot TARBALL VERSION SOURCE_DIR
      the same inside a minimal Debian 12 root (scripts/debian_rootfs.sh,
      mmdebstrap --variant=minbase) under chroot, which has none of the build's
      packages: what the Dockerfile's runtime stage has. Skipped (exit 77) with
      the reason when the root cannot be made (not root, no mirror) or entered.
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_support import check_serves_examples, fail, run, skip  # noqa: E402


def unpack(tarball, into):
    """Unpacks TARBALL into INTO; the bundle's top folder."""
    with tarfile.open(tarball) as t:
        names = t.getnames()
        top = {n.split("/")[0] for n in names}
        if len(top) != 1:
            fail(f"{tarball} has {len(top)} top-level entries ({sorted(top)[:5]}), not one folder")
        t.extractall(into, filter="tar")
    return os.path.join(into, top.pop())


def dynamic(path, tag):
    code, text = run(["readelf", "-d", path])
    return [line.split("[", 1)[1].rstrip("]") for line in text.splitlines() if f"({tag})" in line]


SYSTEM = ("libc.so", "libm.so", "libdl.so", "librt.so", "libpthread.so", "ld-linux", "libstdc++.so", "libgcc_s.so")
# The CUDA EP's own imports come from the host or the CUDA image, never the bundle.
CUDA = ("libcuda.so", "libcudart.so", "libcublas", "libcublasLt", "libcurand", "libcufft", "libcudnn")


def check_layout(bundle):
    for rel in ("bin/ortgpu", "lib/libonnxruntime.so.1", "lib/libonnxruntime_providers_cuda.so",
                "lib/libonnxruntime_providers_shared.so", "LICENSES/onnxruntime.LICENSE", "README.md", "MANIFEST"):
        if not os.path.isfile(os.path.join(bundle, rel)):
            fail(f"the bundle has no {rel}")
    if dynamic(os.path.join(bundle, "bin/ortgpu"), "RUNPATH") != ["$ORIGIN/../lib"]:
        fail(f"bin/ortgpu's RUNPATH is {dynamic(os.path.join(bundle, 'bin/ortgpu'), 'RUNPATH')}, not $ORIGIN/../lib")
    libs = set(os.listdir(os.path.join(bundle, "lib")))
    for lib in sorted(libs):
        # RUNPATH is not inherited: each library must find its own NEEDED entries in lib/.
        if not lib.startswith("libonnxruntime") and dynamic(os.path.join(bundle, "lib", lib), "RUNPATH") != ["$ORIGIN"]:
            fail(f"lib/{lib} has RUNPATH {dynamic(os.path.join(bundle, 'lib', lib), 'RUNPATH')}, not $ORIGIN")
        for needed in dynamic(os.path.join(bundle, "lib", lib), "NEEDED"):
            if needed not in libs and not needed.startswith(SYSTEM + CUDA):
                fail(f"lib/{lib} needs {needed}, which is neither bundled nor a system or CUDA library")
    licences = os.listdir(os.path.join(bundle, "LICENSES"))
    manifest = open(os.path.join(bundle, "MANIFEST")).read().split("\n")
    for line in filter(None, manifest):
        soname, pkg = line.split()[:2]
        if soname not in libs:
            fail(f"MANIFEST lists {soname}, which lib/ lacks")
        if pkg != "onnxruntime" and f"{pkg}.copyright" not in licences:
            fail(f"LICENSES/ has no {pkg}.copyright for {soname}")


def check_commands(prefix, bundle_bin, version, repository):
    """--version, doctor --json and serve through PREFIX + [BUNDLE_BIN]."""
    code, text = run(prefix + [bundle_bin, "--version"])
    if code != 0 or version not in text:
        fail(f"`ortgpu --version` exited {code} and printed {text!r}, not {version}")
    # doctor exits 1 on a machine without a GPU; its JSON is what a script reads either way.
    code, text = run(prefix + [bundle_bin, "doctor", "--json"])
    try:
        report = json.loads(text[text.index("{"):])
    except ValueError:
        fail(f"`ortgpu doctor --json` exited {code} without a JSON report:\n{text}")
    if code not in (0, 1):
        fail(f"`ortgpu doctor --json` exited {code}:\n{text}")
    seen = {f["id"]: f for f in report.get("findings", [])}
    lib_dir = os.path.join(os.path.dirname(os.path.dirname(bundle_bin)), "lib")
    # The bundle's own ONNX Runtime and CUDA EP, not one the build or the system has.
    for finding, want in (("provider.ort", "libonnxruntime.so.1"), ("provider.ep_library", "libonnxruntime_providers_cuda.so")):
        named = {os.path.normpath(w) for w in seen.get(finding, {}).get("seen", "").replace(";", " ").split()}
        if os.path.join(lib_dir, want) not in named:
            fail(f"doctor's {finding} does not name {os.path.join(lib_dir, want)}: {seen.get(finding)}")
    if seen.get("e2e.cpu", {}).get("status") != "pass":
        fail(f"doctor's CPU check did not pass: {seen.get('e2e.cpu')}")
    check_serves_examples(prefix + [bundle_bin], repository)


def main():
    mode, tarball, version, source = sys.argv[1:5]
    examples = os.path.join(source, "examples", "model_repository")
    if mode == "host":
        with tempfile.TemporaryDirectory(prefix="ortgpu-bundle-") as empty:
            bundle = unpack(tarball, empty)
            check_layout(bundle)
            check_commands(["env", "-i"], os.path.join(bundle, "bin", "ortgpu"), version, examples)
        print("bundle works unpacked under env -i")
        return
    if os.geteuid() != 0:
        skip("the chroot test needs root (chroot and mmdebstrap's root mode)")
    made = subprocess.run([os.path.join(source, "scripts", "debian_rootfs.sh")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=600)
    if made.returncode != 0:
        skip("cannot make the Debian 12 root: " + made.stderr.decode(errors="replace").strip())
    root = made.stdout.decode().strip()
    work = tempfile.mkdtemp(prefix="ortgpu-bundle-", dir=os.path.join(root, "tmp"))
    try:
        bundle = unpack(tarball, work)
        shutil.copytree(examples, os.path.join(work, "models"))
        inside = lambda p: "/" + os.path.relpath(p, root)  # noqa: E731
        # A private mount namespace: /proc is mounted for this run only and
        # vanishes with it; exec keeps ortgpu the process the test signals.
        enter = ["unshare", "--mount", "sh", "-c", f'mount -t proc proc "{root}/proc" && exec chroot "$0" "$@"',
                 root, "/usr/bin/env", "-i"]
        code, text = run(enter + ["/bin/true"])
        if code != 0:
            skip(f"cannot enter the root with unshare --mount and chroot (exit {code}): {text.strip()}")
        for host_lib in ("libgrpc", "libprotobuf", "libabsl", "libonnxruntime"):
            if any(f.startswith(host_lib) for d in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")
                   for f in os.listdir(os.path.join(root, d)) if os.path.isdir(os.path.join(root, d))):
                fail(f"the Debian root has {host_lib} installed, so it proves nothing about the bundle")
        check_commands(enter, inside(os.path.join(bundle, "bin", "ortgpu")), version, inside(os.path.join(work, "models")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("bundle works in a minimal Debian 12 root under chroot")


if __name__ == "__main__":
    main()
