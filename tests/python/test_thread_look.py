#!/usr/bin/env python3
"""The thread-name look never runs importlib: with `threading` in sys.modules
still being imported (its spec's _initializing set, as during its own
`import threading`), audit events raised past the look's 100 ms make no call
of importlib's _lock_unlock_module, and the program's import-lock
bookkeeping (`_blocking_on`) is left as it was.

Old (PyImport_GetModule, 3.9 to 3.13): each look waited for the module
through `_lock_unlock_module('threading')`, Python code inside our hook; in a
traced `import threading` it removed the importing thread's `_blocking_on`
entry, and `_ModuleLock.acquire` raised KeyError (`del _blocking_on[tid]`).

The look creates no object either: an object's creation takes
tracemalloc's lock (3.8 to 3.10), which an event inside tracemalloc holds
(its table of traces grows with a raw malloc of 1 MiB and more, a host
block).  Old (3.10's PySys_GetObject, a str per look): a program that
started tracemalloc hung there at the first look due.

The names are still found: a thread named loader_0 that collects is
"(loader_0)" in the log.

usage: test_thread_look.py --preload LIB --pylog PYLOG --dump TRACE-DUMP [--python PY]..."""
import os
import subprocess
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()

PROGRAM = r'''
import sys, time, types
import importlib._bootstrap as b
calls = []
orig = b._lock_unlock_module
def counted(name):
    calls.append(name)
    return orig(name)
b._lock_unlock_module = counted
real = sys.modules.pop("threading", None)
fake = types.ModuleType("threading")
fake.__spec__ = b.ModuleSpec("threading", None)
fake.__spec__._initializing = True
sys.modules["threading"] = fake
for i in range(4):
    time.sleep(0.12)
    open(sys.executable, "rb").close()      # an audit event ("open")
    sys.audit("gputrace.test.look", i)
sys.modules["threading"] = real
b._lock_unlock_module = orig
print("calls", len(calls), sorted(set(calls)))
'''
NAMED = r'''
import threading, gc, time
def work():
    for i in range(3):
        x = [[] for _ in range(1000)]
        for a in x:
            a.append(a)
        gc.collect()
        time.sleep(0.15)
t = threading.Thread(target=work, name="loader_0")
t.start()
t.join()
'''

# A look due (100 ms since the last) at the host block tracemalloc's table
# of traces allocates, with its lock held, as the table grows past 1 MiB.
TRACEMALLOC = r'''
import time, tracemalloc
keep = [None] * 300000
for rnd in range(3):
    tracemalloc.start(1)
    time.sleep(0.15)
    b = bytearray(2 << 20)          # an event: the time the next look reads moves on
    for i in range(len(keep)):
        keep[i] = object()
    tracemalloc.stop()
    del b
print("tracemalloc ok")
'''


def run_bounded(argv, env, limit=60):
    """(exit status, stdout, stderr); None for the status of a run that hung."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = p.communicate(timeout=limit)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out, err


def check(python, version):
    with tempfile.TemporaryDirectory(prefix="thread-look-") as work:
        log = os.path.join(work, "t.tlog")
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log)
        bare = subprocess.run([python, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
        out = subprocess.run([python, "-c", PROGRAM], capture_output=True, text=True, timeout=120,
                             env=env)
        print("  bare:", bare.stdout.strip(), "| traced:", out.stdout.strip())
        fails.check(bare.returncode == 0 and bare.stdout.startswith("calls 0"),
                    "%s bare: %r %r" % (version, bare.stdout, bare.stderr[-500:]))
        fails.check(out.returncode == 0, "%s traced: exit %d: %s" % (version, out.returncode,
                                                                      out.stderr[-800:]))
        fails.check(out.stdout.startswith("calls 0"),
                    "%s traced: importlib called from the look: %r" % (version, out.stdout))
        fails.check(os.path.exists(log), "%s traced: no log" % version)
        env["TRACE_OUTPUT"] = os.path.join(work, "tm.tlog")
        rc, stdout, stderr = run_bounded([python, "-c", TRACEMALLOC], env)
        print("  tracemalloc:", "hung" if rc is None else "exit %d %s" % (rc, stdout.strip()))
        fails.check(rc == 0 and "tracemalloc ok" in stdout,
                    "%s traced under tracemalloc: %s: %s" % (version, "hung (60 s)" if rc is None
                                                             else "exit %d" % rc, stderr[-500:]))
        named = os.path.join(work, "named.tlog")
        env["TRACE_OUTPUT"] = named
        run = subprocess.run([python, "-c", NAMED], capture_output=True, text=True, timeout=120, env=env)
        summary = subprocess.run([args.dump, "--summary", named], capture_output=True, text=True)
        threads = [l for l in summary.stdout.splitlines() if l.startswith("threads")]
        print("  named:", threads)
        fails.check(run.returncode == 0 and "(loader_0)" in summary.stdout,
                    "%s: thread name not found: exit %d, %r" % (version, run.returncode, threads))


pt.for_each_interpreter(args.python, check, fails)
