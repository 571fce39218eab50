#!/usr/bin/env python3
"""bench/thread_bench.py - what a short process and a short-lived thread
cost under each tool: CPU time and page faults of `python -c pass`, and per
thread of a program that starts threads one after another, each running
one collection (an event with its native and Python stacks on a thread
that has recorded nothing before), bare and under libtrace.so, memray and
heaptrack, run side by side.

    bench/thread_bench.py [--build DIR] [--python EXE] [--threads N] [--runs N]
                          [--against LIB] [--only-ours]

Each tool runs --runs times (default 7), each run right after a bare one;
the table gives the medians and the median of (tool - bare) over those
pairs; the tools take turns round by round.  --against adds a second
libtrace.so (the one before a change), run the same way in the same rounds:
compare its added figures with libtrace.so's.  A thread's figures are taken inside the program (getrusage around
the threads, start-up left out); a process's by wait4 on it, start-up and
exit included.  Page faults are the kernel's count, which a busy machine
does not move; CPU time it does: compare the added figures.
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

THREADS = r'''
import gc, resource, sys, threading
def one():
    t = threading.Thread(target=gc.collect)
    t.start()
    t.join()
for _ in range(20):
    one()
n = int(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(n):
    one()
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
print("per_thread", cpu / n * 1e6, (after.ru_minflt - before.ru_minflt) / n)
'''


def tools(build_dir, python, work, against=None, others=True):
    lib = os.path.join(build_dir, "lib", "libtrace.so")
    out = [("bare", [], {}),
           ("libtrace.so", [], {"LD_PRELOAD": lib, "TRACE_QUIET": "1",
                                "TRACE_OUTPUT": os.path.join(work, "t-%p.tlog")})]
    if against:
        out.append(("against", [], {"LD_PRELOAD": against, "TRACE_QUIET": "1",
                                    "TRACE_OUTPUT": os.path.join(work, "a-%p.tlog")}))
    if not others:
        return out
    if subprocess.run([python, "-m", "memray", "--version"], capture_output=True).returncode == 0:
        out.append(("memray", [python, "-m", "memray", "run", "-q", "-f", "-o",
                               os.path.join(work, "m.bin")], {}))
    if shutil.which("heaptrack"):
        out.append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")], {}))
    return out


def environ(env):
    full = dict(os.environ)
    full.pop("LD_PRELOAD", None)
    full.update(env)
    return full


def process_cost(prefix, env, python):
    """(CPU ms, page faults) of `python -c pass` under the tool."""
    argv = prefix + ([python, "-c", "pass"] if not prefix or prefix[0] != python else ["-c", "pass"])
    p = subprocess.Popen(argv, env=environ(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d" % (argv, p.returncode))
    return (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_minflt


def thread_cost(prefix, env, python, script, threads):
    """(CPU us, page faults) per thread under the tool."""
    argv = prefix + ([python, script] if not prefix or prefix[0] != python else [script]) + [str(threads)]
    p = subprocess.run(argv, env=environ(env), capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("per_thread"):
            _, cpu, faults = line.split()
            return float(cpu), float(faults)
    raise RuntimeError("%s failed (%d): %s" % (argv, p.returncode, p.stderr[-1500:]))


def measure(args):
    rows = []
    with tempfile.TemporaryDirectory(prefix="thread-bench-") as work:
        script = os.path.join(work, "threads.py")
        with open(script, "w") as f:
            f.write(THREADS)
        found = tools(args.build, args.python, work, args.against, not args.only_ours)
        bare_prefix, bare_env = found[0][1], found[0][2]
        # Round by round, each tool right after a bare run of its own: a
        # second libtrace.so (--against) sees the same load as the first.
        runs = {name: ([], []) for name, _, _ in found[1:]}
        for _ in range(args.runs):
            for name, prefix, env in found[1:]:
                for i, (pre, e) in enumerate(((bare_prefix, bare_env), (prefix, env))):
                    runs[name][i].append(process_cost(pre, e, args.python) +
                                         thread_cost(pre, e, args.python, script, args.threads))
        for name, prefix, env in found[1:]:
            med = lambda who, k: statistics.median(r[k] for r in runs[name][who == name])
            added = lambda k: statistics.median(t[k] - b[k] for t, b in zip(runs[name][1], runs[name][0]))
            rows.append((name, [med(name, k) for k in range(4)], [added(k) for k in range(4)],
                         [med("bare", k) for k in range(4)]))
            print("  %-12s process %.1f ms %+.1f, %d faults %+d; thread %.0f us %+.0f, %.1f faults %+.1f"
                  % (name, rows[-1][1][0], rows[-1][2][0], rows[-1][1][1], rows[-1][2][1],
                     rows[-1][1][2], rows[-1][2][2], rows[-1][1][3], rows[-1][2][3]), flush=True)
    return rows


def table(rows, args):
    out = ["| tool | `python -c pass`: CPU ms (added) | its page faults (added) | "
           "a thread running one collection: CPU us (added) | its page faults (added) |",
           "|---|---:|---:|---:|---:|"]
    bare = statistics.median(r[3][0] for r in rows), statistics.median(r[3][1] for r in rows), \
        statistics.median(r[3][2] for r in rows), statistics.median(r[3][3] for r in rows)
    out.append("| bare | %.1f | %d | %.0f | %.1f |" % bare)
    for name, med, added, _ in rows:
        out.append("| %s | %.1f (%+.1f) | %d (%+d) | %.0f (%+.0f) | %.1f (%+.1f) |"
                   % (name, med[0], added[0], med[1], added[1], med[2], added[2], med[3], added[3]))
    return "\n".join(out) + ("\n\n%d threads per run, %d runs per tool, each after a bare run; %s."
                             % (args.threads, args.runs, args.python))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--threads", type=int, default=300)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--against", help="a second libtrace.so (the one before a change, copied aside "
                    "with its libgputrace-unwind.so.8), measured as the tool 'against'")
    ap.add_argument("--only-ours", action="store_true", help="leave memray and heaptrack out")
    args = ap.parse_args()
    print(table(measure(args), args))


if __name__ == "__main__":
    main()
