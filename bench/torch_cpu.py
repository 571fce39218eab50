#!/usr/bin/env python3
"""bench/torch_cpu.py - what tracing costs a real PyTorch program on the CPU.

    bench/torch_cpu.py --python PY [--rounds N] [--steps S] [--preload LIB]

PY is an interpreter with torch installed (the PyPI wheel is the CUDA build;
no GPU is needed).  Each round runs tests/python/workloads/torch_train.py (an
MLP trained with Adam on two intra-op threads, torch.save/torch.load) bare,
traced with the defaults and traced with TRACE_PY_ALLOCS=1, in an order that
rotates from round to round (each round's wall/CPU seconds are printed).  Per setting: the median wall time and CPU time
(user + system of the process and its children) and their ratio to the bare
run's, and the events and bytes of the log.  The final losses must equal the
bare run's (the same seed): a run whose losses differ is reported, not
counted.  The load average is printed at the start and the end: write it
beside the figures.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "tests", "python", "workloads", "torch_train.py")
SETTINGS = {"bare": None, "default": {}, "py_allocs": {"TRACE_PY_ALLOCS": "1"}}


def one(args, setting, tmp):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    log = os.path.join(tmp, "%s-%d.tlog" % (setting, time.monotonic_ns()))
    if SETTINGS[setting] is not None:
        env.update(SETTINGS[setting], LD_PRELOAD=args.preload, TRACE_OUTPUT=log)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([args.python, WORKLOAD, str(args.steps)], env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    events = size = 0
    if os.path.exists(log):
        s = subprocess.run([args.dump, "--summary", log], capture_output=True, text=True).stdout
        m = re.search(r"^events\s+(\d+)", s, re.M)
        events = int(m.group(1)) if m else 0
        size = os.path.getsize(log)
        os.unlink(log)
    if p.returncode != 0:
        sys.exit("%s run failed (%d): %s" % (setting, p.returncode, p.stderr[-500:]))
    return {"wall": wall, "cpu": cpu, "out": p.stdout, "events": events, "size": size}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--preload", default=os.path.join(ROOT, "build", "lib", "libtrace.so"))
    ap.add_argument("--dump", default=os.path.join(ROOT, "build", "bin", "trace-dump"))
    args = ap.parse_args()
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    names = list(SETTINGS)
    runs = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="torch_cpu.") as tmp:
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            got = {n: one(args, n, tmp) for n in order}
            print("round %d: %s" % (r, "  ".join("%s %.2f/%.2f s" % (n, got[n]["wall"], got[n]["cpu"]) for n in order)),
                  flush=True)
            for n in names:
                if got[n]["out"] != got["bare"]["out"]:
                    print("round %d: %s printed other losses than bare:\n%s" % (r, n, got[n]["out"]))
                    continue
                runs[n].append(got[n])
    bare_wall = statistics.median(x["wall"] for x in runs["bare"])
    bare_cpu = statistics.median(x["cpu"] for x in runs["bare"])
    print("%-10s %5s %9s %6s %9s %6s %10s %10s" % ("setting", "runs", "wall s", "x", "cpu s", "x", "events", "log bytes"))
    for n in names:
        if not runs[n]:
            continue
        wall = statistics.median(x["wall"] for x in runs[n])
        cpu = statistics.median(x["cpu"] for x in runs[n])
        print("%-10s %5d %9.2f %6.2f %9.2f %6.2f %10d %10d" % (
            n, len(runs[n]), wall, wall / bare_wall, cpu, cpu / bare_cpu,
            statistics.median(x["events"] for x in runs[n]), statistics.median(x["size"] for x in runs[n])))
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
