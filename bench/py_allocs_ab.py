#!/usr/bin/env python3
"""bench/py_allocs_ab.py - TRACE_PY_ALLOCS=1 of one or more libtrace.so builds
side by side with memray --trace-python-allocators, on bench/workloads.

    bench/py_allocs_ab.py --python PY [--rounds N] [--workloads a,b] [--default] TOOL...
    TOOL: NAME=path/to/libtrace.so (LD_PRELOAD, TRACE_PY_ALLOCS=1), or memray

--default runs the libtrace.so builds with default settings instead (no
TRACE_PY_ALLOCS): a change to what every traced program pays.

For each workload, each round runs every tool as a back-to-back pair (bare,
then under the tool), so a busy shared machine slows both runs of a pair
alike; the figure is the median over rounds of (CPU of the tool's run / CPU
of its bare run), CPU being user + system of the process and its children.
A before/after of a change: two builds, e.g. main=... branch=...  The load
average is printed at the start and the end: write it beside the figures.
scripts/bench --only python measures the full table (every tool, default
settings too); this is the quick comparison of builds for the every-object
mode alone.
"""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = "churn_cycles,dict_str,recursion,json_work,regex_work,threaded,buffer_loop"


def cpu(argv, env):
    full = dict(os.environ)
    full.update(env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=full, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workloads", default=WORKLOADS)
    ap.add_argument("--scale", default="1")
    ap.add_argument("--default", action="store_true", help="libtrace.so with default settings")
    ap.add_argument("tools", nargs="+")
    a = ap.parse_args()
    print("load %.1f %.1f %.1f at %s UTC" % (os.getloadavg() + (time.strftime("%H:%M", time.gmtime()),)),
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for w in a.workloads.split(","):
            script = os.path.join(HERE, "workloads", w + ".py")
            cpu([a.python, script, a.scale], {})     # warm the page cache
            ratios = {t.partition("=")[0]: [] for t in a.tools}
            for _ in range(a.rounds):
                for t in a.tools:
                    name, _, lib = t.partition("=")
                    bare = cpu([a.python, script, a.scale], {})
                    if name == "memray":
                        out = os.path.join(tmp, "memray.bin")
                        tool = cpu([a.python, "-m", "memray", "run", "-q", "-f", "-o", out,
                                    "--trace-python-allocators", script, a.scale], {})
                    else:
                        tool = cpu([a.python, script, a.scale],
                                   dict({"LD_PRELOAD": lib, "TRACE_QUIET": "1",
                                         "TRACE_OUTPUT": os.path.join(tmp, "trace.tlog")},
                                        **({} if a.default else {"TRACE_PY_ALLOCS": "1"})))
                    ratios[name].append(tool / bare)
            print("%-13s %s" % (w, "  ".join("%s %.2f (%s)" % (n, statistics.median(v),
                                                               "/".join("%.2f" % x for x in v))
                                             for n, v in ratios.items())), flush=True)
    print("load %.1f %.1f %.1f at %s UTC" % (os.getloadavg() + (time.strftime("%H:%M", time.gmtime()),)),
          flush=True)


if __name__ == "__main__":
    main()
