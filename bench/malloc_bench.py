#!/usr/bin/env python3
"""bench/malloc_bench.py - the added cost of the host-block hooks on small
allocations: ns per malloc+free pair of 16 to 1024 bytes made by a C
extension (bench/malloc_bench.c, loaded with ctypes), bare and under
libtrace.so, memray and heaptrack, run side by side.

    bench/malloc_bench.py [--build DIR] [--python EXE] [--pairs N] [--runs N]

Each variant runs --runs times (default 5), alternating with a bare run, and
reports the median ns per pair and the median of (variant - bare) over the
pairs; with and without large blocks live (the tracer's free() then reads
each block's size word instead of one global count).  memray is measured
when `python -m memray` works (scripts/bench's venv has it), heaptrack when
it is on PATH.  CPU-bound, single-threaded: pin it (taskset) on a busy
machine, and compare the added ns, not absolutes.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DRIVER = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.pairs_ns.restype = ctypes.c_double
lib.pairs_ns.argtypes = [ctypes.c_long, ctypes.c_int]
lib.pairs_ns(100000, int(sys.argv[3]))                  # warm up
print("ns_per_pair", lib.pairs_ns(int(sys.argv[2]), int(sys.argv[3])))
'''


def build(work):
    lib = os.path.join(work, "malloc_bench.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, os.path.join(HERE, "malloc_bench.c")],
                   check=True)
    driver = os.path.join(work, "driver.py")
    with open(driver, "w") as f:
        f.write(DRIVER)
    return lib, driver


def run(prefix, env, python, driver, lib, pairs, live):
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run(prefix + [python, driver, lib, str(pairs), str(live)], env=full,
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("ns_per_pair"):
            return float(line.split()[1])
    raise RuntimeError("%s failed (%d): %s" % (prefix or "bare", p.returncode, p.stderr[-1500:]))


def variants(build_dir, python, work):
    lib = os.path.join(build_dir, "lib", "libtrace.so")
    out = [("libtrace.so", [], {"LD_PRELOAD": lib, "TRACE_QUIET": "1",
                                "TRACE_OUTPUT": os.path.join(work, "t-%p.tlog")})]
    if subprocess.run([python, "-m", "memray", "--version"], capture_output=True).returncode == 0:
        out.append(("memray", ["MEMRAY"], {}))
        out.append(("memray --native", ["MEMRAY-NATIVE"], {}))
    if shutil.which("heaptrack"):
        out.append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")], {}))
    return out


def measure(args):
    rows = []
    with tempfile.TemporaryDirectory(prefix="malloc-bench-") as work:
        lib, driver = build(work)
        for live in (0, 4):
            bare_all = []
            for name, prefix, env in variants(args.build, args.python, work):
                values, added = [], []
                for _ in range(args.runs):
                    bare = run([], {}, args.python, driver, lib, args.pairs, live)
                    if prefix == ["MEMRAY"] or prefix == ["MEMRAY-NATIVE"]:
                        extra = ["--native"] if prefix == ["MEMRAY-NATIVE"] else []
                        memray_out = os.path.join(work, "m.bin")
                        # memray runs a script: the driver with its arguments.
                        full = [args.python, "-m", "memray", "run", "-q", "-f"] + extra + \
                               ["-o", memray_out]
                        value = run_memray(full, driver, lib, args.pairs, live)
                    else:
                        value = run(prefix, env, args.python, driver, lib, args.pairs, live)
                    bare_all.append(bare)
                    values.append(value)
                    added.append(value - bare)
                rows.append((live, name, statistics.median(values), statistics.median(added)))
                print("  large live %d  %-16s %7.2f ns/pair  added %+6.2f ns" % rows[-1], flush=True)
            rows.append((live, "bare", statistics.median(bare_all), 0.0))
    return rows


def run_memray(prefix, driver, lib, pairs, live):
    p = subprocess.run(prefix + [driver, lib, str(pairs), str(live)], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("ns_per_pair"):
            return float(line.split()[1])
    raise RuntimeError("memray failed (%d): %s" % (p.returncode, p.stderr[-1500:]))


def table(rows, pairs, runs):
    out = ["| large blocks live | tool | ns per malloc+free pair | added ns (median of pairs) |",
           "|---:|---|---:|---:|"]
    for live, name, value, added in sorted(rows, key=lambda r: (r[0], r[1] != "bare")):
        out.append("| %d | %s | %.2f | %s |" % (live, name, value,
                                                "-" if name == "bare" else "%+.2f" % added))
    return "\n".join(out) + "\n\n%d pairs per run, %d runs per tool, each after a bare run." % (pairs, runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--pairs", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = measure(args)
    print(table(rows, args.pairs, args.runs))


if __name__ == "__main__":
    main()
