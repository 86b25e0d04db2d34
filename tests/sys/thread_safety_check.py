#!/usr/bin/env python3
"""Checks the lock annotations (src/sys/thread_annotations.h) with clang.

Compiles, with clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety
and the build's own flags (compile_commands.json), every translation unit of
src/ that uses the annotated Mutex (it, or the header of the same name,
includes "sys/mutex.h"). Exit 0 when all compile, 1 naming the violations.

With --expect-violation FILE it checks the check: FILE (a small test file
that breaks an annotation) must fail with a thread-safety error, so a check
that stopped seeing anything would fail too.

Usage: thread_safety_check.py CLANGXX BUILD_DIR SOURCE_DIR [--expect-violation FILE]
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CHECK_FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]
# What clang does not take from gcc's command lines, or what only writes files.
DROP_WITH_ARG = {"-o", "-MF", "-MT", "-MQ"}
DROP = {"-c", "-MD", "-MMD", "-fno-semantic-interposition"}


def clang_command(clangxx, entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = [clangxx]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_ARG:
            skip = True
            continue
        if a in DROP or a == entry["file"]:
            continue
        out.append(a)
    return out + CHECK_FLAGS + [entry["file"]]


def uses_mutex(path):
    candidates = [path, os.path.splitext(path)[0] + ".h"]
    for p in candidates:
        if os.path.exists(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                if '#include "sys/mutex.h"' in f.read():
                    return True
    return False


def run(command, cwd):
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    if len(sys.argv) not in (4, 6):
        print(__doc__, file=sys.stderr)
        return 2
    clangxx, build_dir, source_dir = sys.argv[1:4]
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    src = os.path.join(os.path.realpath(source_dir), "src") + os.sep
    by_file = {}
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if path.startswith(src) and path not in by_file:
            by_file[path] = e

    if len(sys.argv) == 6:
        # Compile the violation with the flags of a serve file (same includes).
        if sys.argv[4] != "--expect-violation":
            print(__doc__, file=sys.stderr)
            return 2
        template = next(e for p, e in sorted(by_file.items()) if uses_mutex(p))
        entry = dict(template, file=os.path.realpath(sys.argv[5]))
        code, text = run(clang_command(clangxx, entry), entry["directory"])
        if code != 0 and "-Wthread-safety" in text:
            print("the check catches the violation in", sys.argv[5])
            return 0
        print("the check did not catch the violation in", sys.argv[5], "(exit", code, ")\n" + text)
        return 1

    files = sorted(p for p in by_file if uses_mutex(p))
    if not files:
        print("no translation unit of", src, "includes sys/mutex.h: nothing checked")
        return 1
    jobs = int(os.environ.get("THREAD_SAFETY_JOBS", "2"))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda p: run(clang_command(clangxx, by_file[p]), by_file[p]["directory"]), files))
    failed = 0
    for path, (code, text) in zip(files, results):
        if code != 0:
            failed += 1
            print(f"FAILED {os.path.relpath(path, source_dir)}\n{text}")
    print(f"{len(files) - failed} of {len(files)} translation units pass -Wthread-safety")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
