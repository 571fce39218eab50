#!/usr/bin/env python3
"""bench/memray_counts.py - how many allocations memray's Tracker counts in
one workload, bare and under one or more libtrace.so builds.

    bench/memray_counts.py --python PY [--runs N] [--native] [--python-allocators] TOOL...
    TOOL: NAME=path/to/libtrace.so[,KEY=VALUE...] (LD_PRELOAD and settings)

PY must have memray installed (a throwaway venv: python -m venv V;
V/bin/pip install memray).  Each run starts the Tracker once the interpreter
runs, makes raw blocks (bytes over 512 bytes: PyMem_RawMalloc, PyMem_RawCalloc,
PyMem_RawRealloc), scans text with re, then reads the capture file back: the
figure is its allocation records.  Runs alternate (bare, then each tool),
N of each; printed per setting: min, median, max.  The counts vary a little
run to run bare too (memray's own threads, the allocator's arenas)."""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

WORKLOAD = r"""
import os, re, sys, memray
out = sys.argv[1]
kw = {}
if sys.argv[2] == "1":
    kw["native_traces"] = True
if sys.argv[3] == "1":
    kw["trace_python_allocators"] = True
with memray.Tracker(out, **kw):
    blocks = [b"x" * (1000 + i % 50) for i in range(500)]
    zeros = [bytes(1000 + i % 50) for i in range(200)]
    grown = bytearray(700)
    for i in range(100):
        grown += b"y" * 700
    text = " ".join("job %d took %d ms" % (i, i % 1000) for i in range(2000))
    found = re.findall(r"\b\d+\b", text)
    del blocks, zeros, grown, found
reader = memray.FileReader(out)
print(sum(1 for _ in reader.get_allocation_records()))
"""


def count(python, out, env, native, pyalloc):
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    full.update(env)
    done = subprocess.run([python, "-c", WORKLOAD, out, native, pyalloc], env=full,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return None
    return int(done.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--python-allocators", action="store_true")
    ap.add_argument("tools", nargs="*")
    a = ap.parse_args()
    print("load %.1f %.1f %.1f at %s UTC" % (os.getloadavg() + (time.strftime("%H:%M", time.gmtime()),)),
          flush=True)
    settings = [("bare", {})]
    for t in a.tools:
        name, _, rest = t.partition("=")
        lib, *pairs = rest.split(",")
        env = dict(p.split("=", 1) for p in pairs)
        env.update(LD_PRELOAD=lib, TRACE_QUIET="1")
        settings.append((name + (" " + ",".join(pairs) if pairs else ""), env))
    got = {name: [] for name, _ in settings}
    failed = {name: 0 for name, _ in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.runs):
            for name, env in settings:
                out = os.path.join(tmp, "capture.bin")
                if os.path.exists(out):
                    os.unlink(out)
                env = dict(env, TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"))
                n = count(a.python, out, env, "1" if a.native else "0", "1" if a.python_allocators else "0")
                if n is None:
                    failed[name] += 1
                else:
                    got[name].append(n)
    for name, _ in settings:
        v = got[name]
        print("%-40s %s%s" % (name, "min %d median %d max %d (%d runs)" % (min(v), statistics.median(v), max(v),
                                                                           len(v)) if v else "no run",
                              ", %d failed" % failed[name] if failed[name] else ""))
    print("load %.1f %.1f %.1f at %s UTC" % (os.getloadavg() + (time.strftime("%H:%M", time.gmtime()),)),
          flush=True)


if __name__ == "__main__":
    main()
