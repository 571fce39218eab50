"""Threads made in C that call into Python (tests/python/native_threads.c
through ctypes callbacks): grpcio's completion-queue threads, a C library's
worker calling a cffi or ctypes callback, each call taking the GIL with
PyGILState_Ensure on a thread CPython made no state for.  The callbacks
make reference cycles, collect, raise and catch, and make 2 MiB bytearrays
while the C threads malloc and free beside them; Python threads call the
same C; a callback forks.  Then the process ends four ways: main returns,
or one of the C threads calls exit(7), raises SIGTERM or aborts while the
others are inside callbacks.

Each ending runs bare, then traced by default, with TRACE_PY_ALLOCS=1 and
with TRACE_HOST_THRESHOLD=4096: the exit status, stdout and stderr are the
bare run's byte for byte, every log (the forked child's too) ends with END,
and in the log of a run that returns, collections and 2 MiB buffers are
recorded on each of the ten C threads that called the callback, with it
as their innermost Python frame.  No test covered a thread Python did not make
calling into it (a sweep of grpcio, sqlite3, cffi and ctypes under the
preload, where none differed)."""
import json
import os
import resource
import subprocess
import tempfile

import pytrace as pt

SCRIPT = r'''
import ctypes, gc, os, sys, threading, warnings
warnings.simplefilter("ignore", DeprecationWarning)   # fork() in a process with threads (3.12)
lib = ctypes.CDLL(sys.argv[1])
ending = sys.argv[2]
CB = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long)
lib.run_threads.argtypes = [CB, ctypes.c_long, ctypes.c_long]
lib.run_threads.restype = ctypes.c_long
lib.end_from_thread.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint]


class Cycle:
    def __init__(self):
        self.me = self


kept = []


def callback(thread, call):
    junk = [Cycle() for _ in range(3)]
    if call % 25 == 0:
        kept.append(bytearray(2 << 20))
        del kept[:-4]
    if call % 40 == 0:
        gc.collect()
    try:
        if call % 7 == 0:
            raise ValueError(call)
    except ValueError:
        pass
    return thread + call


def forking(thread, call):
    if thread == 0 and call == 3:
        pid = os.fork()
        if pid == 0:
            junk = [Cycle() for _ in range(100)]
            gc.collect()
            os._exit(5)
        return os.WEXITSTATUS(os.waitpid(pid, 0)[1])
    return 0


cb, fork_cb = CB(callback), CB(forking)
print("calls", lib.run_threads(cb, 6, 200))
workers = [threading.Thread(target=lib.run_threads, args=(cb, 2, 50)) for _ in range(2)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print("fork", lib.run_threads(fork_cb, 2, 5))
if ending != "return":
    print("ending", ending, flush=True)
    lib.end_from_thread({"exit": 0, "sigterm": 1, "abort": 2}[ending], 7, 100000)
    while True:
        lib.run_threads(cb, 2, 20)
'''

ENDINGS = {"return": 0, "exit": 7, "sigterm": -15, "abort": -6}
MODES = {"default": {}, "py_allocs": {"TRACE_PY_ALLOCS": "1"}, "host_4096": {"TRACE_HOST_THRESHOLD": "4096"}}
# C threads that call the callback: 6 from the main thread, 2 from each of 2 Python threads.
C_THREADS = 10

args = pt.parse_args(lambda p: p.add_argument("--fixture", required=True))
fails = pt.Failures()


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(python, script, ending, tmp, env):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("TRACE_") or k == "TRACE_TEST_PYTHONS"}
    full.pop("LD_PRELOAD", None)
    full.update(env)
    return subprocess.run([python, script, args.fixture, ending], capture_output=True, env=full,
                          cwd=tmp, timeout=120, preexec_fn=no_core)


def logs_of(directory):
    """{pid: (events, clean_end, forked)} of every log there (t-PID.tlog), as
    pylog reads it; forked: whether INFO forked says a fork made it."""
    found = {}
    for name in sorted(os.listdir(directory)):
        out = subprocess.run([args.pylog, os.path.join(directory, name)], capture_output=True, text=True)
        events, clean, forked = [], None, False
        for line in out.stdout.splitlines():
            rec = json.loads(line)
            if rec["kind"] == "infos":
                clean = rec["clean_end"]
                forked = any(k == "forked" for k, _ in rec["infos"])
            else:
                events.append(rec)
        found[int(name[2:-5])] = (events, clean if out.returncode == 0 else None, forked)
    return found


def callback_tids(events, kind, pid, min_size=0):
    return {e["tid"] for e in events
            if e["kind"] == kind and e["tid"] != pid and e.get("size", 0) >= min_size
            and e["py"] and e["py"][0][2] in ("callback", "forking")}


def check(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "native_threads.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        for ending, status in ENDINGS.items():
            bare = run(python, script, ending, tmp, {})
            tag = "%s %s" % (version, ending)
            if not fails.check(bare.returncode == status, "%s: bare run: status %d, not %d: %s" % (
                    tag, bare.returncode, status, bare.stderr[-800:])):
                continue
            for mode, settings in MODES.items():
                logs = os.path.join(tmp, "logs-%s-%s" % (ending, mode))
                os.mkdir(logs)
                env = dict(settings, LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(logs, "t-%p.tlog"))
                traced = run(python, script, ending, tmp, env)
                what = "%s %s" % (tag, mode)
                fails.check(traced.returncode == bare.returncode,
                            "%s: status %d traced, %d bare: %s" % (
                                what, traced.returncode, bare.returncode, traced.stderr[-800:]))
                fails.check(traced.stdout == bare.stdout, "%s: stdout %r traced, %r bare" % (
                    what, traced.stdout[-300:], bare.stdout[-300:]))
                fails.check(traced.stderr == bare.stderr, "%s: stderr %r traced, %r bare" % (
                    what, traced.stderr[-800:], bare.stderr[-800:]))
                found = logs_of(logs)
                fails.check(len(found) == 2, "%s: %d logs, expected the program's and its "
                            "child's: %s" % (what, len(found), sorted(found)))
                for pid, (events, clean, forked) in found.items():
                    fails.check(clean == 1, "%s: the log of %s %d does not end with END (pylog: %s)" % (
                        what, "child" if forked else "process", pid, clean))
                main = [(pid, events) for pid, (events, _, forked) in found.items() if not forked]
                if ending != "return" or not main:
                    continue
                pid, events = main[0]
                gcs = callback_tids(events, "gc_start", pid)
                bufs = callback_tids(events, "host_alloc", pid, 2 << 20)
                fails.check(len(gcs) >= C_THREADS and len(bufs) >= C_THREADS,
                            "%s: collections on %d C threads, 2 MiB buffers on %d, with the "
                            "callback innermost (expected %d each)" % (
                                what, len(gcs), len(bufs), C_THREADS))


pt.for_each_interpreter(args.python, check, fails)
