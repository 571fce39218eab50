#!/usr/bin/env python3
"""bench/start_cost.py - what a process pays to start and to end under
LD_PRELOAD=libtrace.so when it records little or nothing: the price a
build or a test suite that spawns thousands of small processes with the
preload in its environment pays each time.

    bench/start_cost.py [--build DIR] [--lib PATH] [--against PATH] [--runs N]
                        [--python EXE ...] [--no-callgrind] [--no-strace]

Programs: /bin/true; a small C program that mallocs a little (built here
with cc); one that mallocs a 2 MiB block under TRACE_HOST_BUFFERS=1 (one
event with its stack, a log written at exit); `PYTHON -c pass` for each --python (default: pyenv's 3.11, a
shared libpython, and Debian's /usr/bin/python3.11, libpython linked in);
and `PYTHON -c 'import gc; gc.collect()'` with the first, which records a
collection (two events with stacks) and so writes a log on its way out.

Each program runs --runs times bare and as many traced, alternating (a busy
shared machine slows both alike), pinned to CPU 0 where taskset exists.
Wall time is taken around posix_spawn and wait4, CPU time (user + system)
from wait4's rusage.  The table gives the medians, their ratio and the
median over pairs of (traced - bare) in microseconds.  --against names a
second libtrace.so (the one before a change, copied aside with its
libgputrace-unwind.so.8): each program then runs bare, under it and under
--lib in turn, the order rotating, and the table gives the CPU each adds and
the median over runs of (lib - against), the load being the same for both.
Then, unless left
out, instructions under callgrind (a count the VM's neighbours cannot
move; the dynamic loader's included) and system calls (strace -f -c) for
/bin/true and `python -c pass`.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SMALL_C = r'''
#include <stdlib.h>
#include <string.h>
int main(void)
{
    void *p[16];
    for (int i = 0; i < 16; i++) {
        p[i] = malloc(64 + 32 * i);
        memset(p[i], i, 64);
    }
    for (int i = 0; i < 16; i++)
        free(p[i]);
    return 0;
}
'''

# One 2 MiB block, recorded under TRACE_HOST_BUFFERS=1: the shortest
# process that writes a log, so its exit flushes, through the two threads.
ONE_BLOCK_C = r'''
#include <stdlib.h>
#include <string.h>
int main(void)
{
    char *volatile p = malloc(2u << 20);
    memset(p, 1, 4096);
    free(p);
    return 0;
}
'''


def default_pythons():
    out = []
    for cand in sorted(os.listdir("/root/.pyenv/versions")) if os.path.isdir("/root/.pyenv/versions") else []:
        if cand.startswith("3.11"):
            out.append(os.path.join("/root/.pyenv/versions", cand, "bin", "python3.11"))
    if os.path.exists("/usr/bin/python3.11"):
        out.append("/usr/bin/python3.11")
    return [p for p in out if os.path.exists(p)] or [sys.executable]


def environ(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def spawn(argv, env):
    """(wall us, CPU us) of one run."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env,
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s: exit status %d" % (argv, os.waitstatus_to_exitcode(status)))
    return wall, (ru.ru_utime + ru.ru_stime) * 1e6


def side_by_side(argv, bare_env, traced_env, runs):
    rows = {"bare": ([], []), "traced": ([], [])}
    for _ in range(3):   # page cache, the loader's cache
        spawn(argv, bare_env)
        spawn(argv, traced_env)
    for i in range(runs):
        order = [("bare", bare_env), ("traced", traced_env)]
        if i % 2:
            order.reverse()
        for name, env in order:
            w, c = spawn(argv, env)
            rows[name][0].append(w)
            rows[name][1].append(c)
    return rows


def three_ways(argv, bare_env, against_env, traced_env, runs):
    """bare, --against and --lib in turn, the first of the three rotating
    and the order reversed every other round."""
    envs = [("bare", bare_env), ("against", against_env), ("traced", traced_env)]
    rows = {name: ([], []) for name, _ in envs}
    for _ in range(3):
        for _, env in envs:
            spawn(argv, env)
    for i in range(runs):
        order = envs[i % 3:] + envs[:i % 3]
        if (i // 3) % 2:
            order.reverse()
        for name, env in order:
            w, c = spawn(argv, env)
            rows[name][0].append(w)
            rows[name][1].append(c)
    return rows


def paired(a, b):
    return statistics.median([y - x for x, y in zip(a, b)])


def summary(rows):
    out = {}
    for k, idx in (("wall", 0), ("cpu", 1)):
        b, t = rows["bare"][idx], rows["traced"][idx]
        out[k] = (statistics.median(b), statistics.median(t),
                  statistics.median([y - x for x, y in zip(b, t)]))
    return out


def callgrind(argv, env, work):
    out = os.path.join(work, "cg.out")
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv,
                       env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError("callgrind %s: %s" % (argv, p.stderr[-500:]))
    return int(m.group(1))


def syscalls(argv, env, work):
    out = os.path.join(work, "st.out")
    subprocess.run(["strace", "-f", "-c", "-o", out] + argv, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        m = re.search(r"^\s*\S+\s+\S+\s+\S+\s+(\d+)\s+(?:\d+\s+)?total$", f.read(), re.M)
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--lib", help="libtrace.so to measure (default BUILD/lib/libtrace.so)")
    ap.add_argument("--against", help="a second libtrace.so, run alternately with --lib")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--python", action="append")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-strace", action="store_true")
    args = ap.parse_args()
    lib = os.path.abspath(args.lib or os.path.join(args.build, "lib", "libtrace.so"))
    if not os.path.exists(lib):
        sys.exit("no %s: build first" % lib)
    pythons = args.python or default_pythons()
    work = tempfile.mkdtemp(prefix="start-cost-")
    try:
        small = os.path.join(work, "small_malloc")
        src = small + ".c"
        with open(src, "w") as f:
            f.write(SMALL_C)
        subprocess.run(["cc", "-O2", "-o", small, src], check=True)
        block = os.path.join(work, "one_block")
        with open(block + ".c", "w") as f:
            f.write(ONE_BLOCK_C)
        subprocess.run(["cc", "-O2", "-o", block, block + ".c"], check=True)
        bare = environ({})
        traced = environ({"LD_PRELOAD": lib, "TRACE_QUIET": "1",
                          "TRACE_OUTPUT": os.path.join(work, "t-%p.tlog")})
        against = None
        if args.against:
            against = environ({"LD_PRELOAD": os.path.abspath(args.against), "TRACE_QUIET": "1",
                               "TRACE_OUTPUT": os.path.join(work, "t-%p.tlog")})
        pin = hasattr(os, "sched_setaffinity") and os.cpu_count() > 1
        programs = [("/bin/true", ["/bin/true"], {}), ("small C, 16 mallocs", [small], {}),
                    ("small C, one 2 MiB block, TRACE_HOST_BUFFERS=1", [block],
                     {"TRACE_HOST_BUFFERS": "1"})]
        for py in pythons:
            programs.append(("%s -c pass" % py, [py, "-c", "pass"], {}))
        programs.append(("%s, one gc.collect()" % pythons[0],
                         [pythons[0], "-c", "import gc; gc.collect()"], {}))
        load = os.getloadavg()[0]
        print("libtrace.so: %s\n%sload average at start: %.2f; %d runs of each, alternating, "
              "pinned: %s\n" % (lib, "against: %s\n" % os.path.abspath(args.against) if against else "",
                                 load, args.runs, "yes" if pin else "no"))
        if against:
            print("| program | CPU bare us | against: added us | lib: added us | lib - against us | "
                  "wall bare us | against: added us | lib: added us | lib - against us |")
            print("|---|---|---|---|---|---|---|---|---|")
        else:
            print("| program | wall bare us | wall traced us | ratio | added us | "
                  "CPU bare us | CPU traced us | ratio | added us |")
            print("|---|---|---|---|---|---|---|---|---|")
        for name, argv, extra in programs:
            if pin:
                # Children inherit this: taskset in front would itself run
                # under the preload, and be counted.
                os.sched_setaffinity(0, {0})
            if against:
                r = three_ways(argv, dict(bare, **extra), dict(against, **extra),
                               dict(traced, **extra), args.runs)
                cells = []
                for idx in (1, 0):   # CPU, then wall
                    b, a, t = r["bare"][idx], r["against"][idx], r["traced"][idx]
                    cells.append("%.0f | %+.0f | %+.0f | %+.0f" % (
                        statistics.median(b), paired(b, a), paired(b, t), paired(a, t)))
                print("| %s | %s |" % (name, " | ".join(cells)))
            else:
                s = summary(side_by_side(argv, dict(bare, **extra), dict(traced, **extra), args.runs))
                w, c = s["wall"], s["cpu"]
                print("| %s | %.0f | %.0f | %.2f | %+.0f | %.0f | %.0f | %.2f | %+.0f |" % (
                    name, w[0], w[1], w[1] / w[0], w[2], c[0], c[1], c[1] / c[0] if c[0] else 0, c[2]))
            # The gc run leaves a log per traced run: keep the directory small.
            for f in os.listdir(work):
                if f.endswith(".tlog"):
                    os.unlink(os.path.join(work, f))
        if pin:
            os.sched_setaffinity(0, set(range(os.cpu_count())))
        counted = [("/bin/true", ["/bin/true"]), ("%s -c pass" % pythons[0], [pythons[0], "-c", "pass"])]
        if not args.no_callgrind and shutil.which("valgrind"):
            print("\n| program (callgrind) | instructions bare | %straced | added |" %
                  ("against | " if against else ""))
            print("|---|---|---|---|%s" % ("---|" if against else ""))
            for name, argv in counted:
                b, t = callgrind(argv, bare, work), callgrind(argv, traced, work)
                a = "%d | " % callgrind(argv, against, work) if against else ""
                print("| %s | %d | %s%d | %+d |" % (name, b, a, t, t - b))
        if not args.no_strace and shutil.which("strace"):
            print("\n| program (strace -f -c) | system calls bare | %straced |" %
                  ("against | " if against else ""))
            print("|---|---|---|%s" % ("---|" if against else ""))
            for name, argv in counted:
                a = "%d | " % syscalls(argv, against, work) if against else ""
                print("| %s | %d | %s%d |" % (name, syscalls(argv, bare, work), a,
                                             syscalls(argv, traced, work)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
