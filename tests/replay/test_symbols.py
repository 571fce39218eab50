#!/usr/bin/env python3
"""Symbolised stacks in trace-replay's report: a traced toy pool frees a
block twice from free_twice(); the violation's native stack names it, with
file and line.  After the binary moves away, --debug-dir finds it again."""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def frames(replay, log, extra=()):
    p = subprocess.run([replay, "check", log, "--json"] + list(extra), capture_output=True, text=True)
    d = json.loads(p.stdout)
    v = d.get("violation") or {}
    return p.returncode, v.get("invariant"), v.get("native_stack") or []


def main():
    replay, prog, preload = sys.argv[1:4]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        built = os.path.join(tmp, "bin")
        os.mkdir(built)
        exe = os.path.join(built, "symprog")
        shutil.copy(prog, exe)
        log = os.path.join(tmp, "sym.log")
        env = dict(os.environ, LD_PRELOAD=preload, TRACE_OUTPUT=log, TRACE_QUIET="1")
        subprocess.run([exe], env=env, check=True, capture_output=True)
        rc, inv, st = frames(replay, log)
        names = [f.get("function") for f in st]
        if rc != 1 or inv != "double_free":
            failures.append("double free found (rc %d, %s)" % (rc, inv))
        if "free_twice" not in names:
            failures.append("free_twice in the stack: %s" % names)
        else:
            f = st[names.index("free_twice")]
            if not (f.get("file") or "").endswith("symprog.c") or not f.get("line"):
                failures.append("file and line of free_twice: %s" % f)
        # The binary moves away: only --debug-dir knows where it is now.
        elsewhere = os.path.join(tmp, "elsewhere")
        os.mkdir(elsewhere)
        shutil.move(exe, os.path.join(elsewhere, "symprog"))
        rc, inv, st = frames(replay, log)
        if "free_twice" in [f.get("function") for f in st]:
            failures.append("without the binary, no names")
        rc, inv, st = frames(replay, log, ["--debug-dir", elsewhere])
        if "free_twice" not in [f.get("function") for f in st]:
            failures.append("--debug-dir resolves again: %s" % [f.get("function") for f in st])
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
