"""The cost of the checked Python stack walk (python_greenlet.h) per large
host block event: the same loop of bytearray(8192) allocations and frees
(two host events each, TRACE_HOST_THRESHOLD=4096) under DEPTH frames of
distinct functions, under the preload, with greenlet imported as installed (PyPI's
module: watched, the fast walk) and with a stripped copy of it first on
PYTHONPATH (unwatched: host events take walk_checked), run in alternating
pairs.  Prints per interpreter the median time per event of each and their
difference.

    python bench/greenlet_walk.py --preload build/lib/libtrace.so \\
        [--python /path/python3.12 ...] [--pairs 7] [--events 40000] [--depth 20]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

LOOP = r"""
import sys, time, greenlet
def leaf(k):
    t = time.perf_counter()
    for _ in range(k):
        b = bytearray(8192)
        del b
    return time.perf_counter() - t
# DEPTH distinct functions (distinct code objects, as a real stack has).
for i in range(DEPTH):
    exec("def f%d(k):\n    return %s(k)\n" % (i, "f%d" % (i + 1) if i + 1 < DEPTH else "leaf"))
f0(500)                                   # warm: stacks interned
print(f0(K) / (2 * K) * 1e9)              # ns per host event
"""


def stripped_copy(python, tmp):
    where = subprocess.run([python, "-c", "import greenlet, os; print(os.path.dirname(greenlet.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    root = os.path.join(tmp, "stripped")
    shutil.copytree(where, os.path.join(root, "greenlet"))
    for f in os.listdir(os.path.join(root, "greenlet")):
        if f.startswith("_greenlet.") and f.endswith(".so"):
            subprocess.run(["strip", "--strip-all", os.path.join(root, "greenlet", f)], check=True)
    return root


def one(python, preload, extra, depth, events, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_") and k != "PYTHONPATH"}
    env.update(LD_PRELOAD=preload, TRACE_OUTPUT=os.path.join(tmp, "bench-%p.tlog"),
               TRACE_HOST_BUFFERS="1", TRACE_HOST_THRESHOLD="4096", **extra)
    code = LOOP.replace("DEPTH", str(depth)).replace("K)", "%d)" % (events // 2))
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True)
    for f in os.listdir(tmp):
        if f.startswith("bench-"):
            os.unlink(os.path.join(tmp, f))
    return float(out.stdout.split()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preload", required=True)
    p.add_argument("--python", action="append", default=[])
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--events", type=int, default=40000)
    p.add_argument("--depth", type=int, default=20)
    a = p.parse_args()
    preload = os.path.abspath(a.preload)
    print("load average:", open("/proc/loadavg").read().split()[:3])
    for python in a.python or ["python3"]:
        with tempfile.TemporaryDirectory() as tmp:
            root = stripped_copy(python, tmp)
            fast, checked = [], []
            for i in range(a.pairs):
                runs = [(fast, {}), (checked, {"PYTHONPATH": root})]
                for into, extra in runs if i % 2 == 0 else runs[::-1]:
                    into.append(one(python, preload, extra, a.depth, a.events, tmp))
            f, c = statistics.median(fast), statistics.median(checked)
            print("%s depth %d: watched (fast walk) %.0f ns/event, stripped (checked walk) %.0f ns/event,"
                  " difference %.0f ns (%d pairs, %d events each)"
                  % (python, a.depth, f, c, c - f, a.pairs, a.events))
    print("load average:", open("/proc/loadavg").read().split()[:3])


main()
