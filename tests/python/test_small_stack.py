"""The CPython hooks' stack, painted (tests/fixtures/small_stack/paint.c
through ctypes): a thread's first GC allocation, a collection with
gc.callbacks set (the tracer's GC hook), GC allocations under
TRACE_PY_ALLOCS=1, a collection of reference cycles, and a PyObject_Init
over a live object (the double-initialisation check, the fixture of
test_double_init.py), each 200 times on a thread, and the audit hook's
periodic looks 3 times, bare and traced.  On a
default stack a kind may take up to 14 KiB more traced than bare
(docs/guarantees.md; 16 KiB in the sanitizer build, whose frames carry
redzones: 12.7 KiB measured there); on a
thread made with threading.stack_size(32768), which never has 32 KiB left,
at most 1 KiB more: the recorder's work goes to a stack of the tracer's.
Before, a collection took 8.9 KiB more there (3.11: 11.5 against 2.7 KiB
bare), an allocation 5.5 KiB; the looks, on the thread's stack until
the audit hook went through the same check, 1.6 to 2.5 KiB (3.9 to 3.13:
3.10 2808 against 344 bytes).  The traced runs' logs hold their events."""
import os
import subprocess
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
FIXTURES = os.path.join(pt.HERE, "..", "fixtures")
PAINT = os.path.join(FIXTURES, "small_stack", "paint.c")
DOUBLE_INIT = os.path.join(FIXTURES, "double_init", "double_init.c")
MOST = (16 if "libasan" in args.preload else 14) * 1024
# On a thin stack the recorder's work goes aside (about 200 bytes stay),
# and so does the audit hook's (its periodic looks, the thread's name at
# most every 100 ms per thread and gc.callbacks every 64 audit events:
# python_threads.c, python_gc.c).  The sanitizer build's frames carry
# redzones: the hooks' own frames before the switch take about 2 KiB more
# there.
THIN_EXTRA = 4096 if "libasan" in args.preload else 1024
# Both runs bind every symbol at start: CPython's first pthread_cond_wait
# (the GIL handed over while another thread asks for it) went through the
# dynamic linker's lazy binding, 2.5 to 2.8 KiB of the program's own stack
# wherever that hand-over fell (Debian's 3.11 bare: 26 runs of 60 with the
# CPUs busy, 'gc' 3112 against 344 bytes; none of 40 with LD_BIND_NOW=1).
BIND_NOW = {"LD_BIND_NOW": "1"}

PROGRAM = r"""
import ctypes, gc, sys, threading, time
import double_init as d
lib = ctypes.CDLL(sys.argv[1])
lib.paint.restype = ctypes.c_size_t
lib.paint.argtypes = [ctypes.c_size_t]
lib.untouched.restype = ctypes.c_size_t
lib.untouched.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
stack, n = int(sys.argv[2]), int(sys.argv[3])

class Node:
    pass

def cycles():
    for i in range(50):
        a = Node(); b = Node(); a.b = b; b.a = a
    gc.collect()

def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass

# Both periodic looks inside the measurement: the thread's name is looked
# up again 100 ms after the last time (the spin records nothing), at the
# audit event after it, with threading's spec saying its import is under
# way (as while another thread imports it): CPython's PyImport_GetModule
# then calls importlib's _lock_unlock_module, Python code; 64 audit
# events hold one look at gc.callbacks.
def looks():
    spin(0.12)
    spec = threading.__spec__
    spec._initializing = True
    sys.audit("small_stack.look")
    spec._initializing = False
    for i in range(64):
        sys.audit("small_stack.look")

KINDS = [("first", 1, lambda: [()]), ("gc", 200, gc.collect),
         ("alloc", 200, lambda: [(i, str(i)) for i in range(200)]),
         ("cycles", 200, cycles), ("double_init", 200, d.make_twice),
         ("looks", 3, looks)]

def run():
    for kind, times, fn in KINDS:
        most = 0
        for i in range(times):
            lo = lib.paint(n)
            fn()
            most = max(most, n - lib.untouched(lo, n))
        print(kind, most, flush=True)

gc.callbacks.append(lambda phase, info: None)
# Collections only where a kind makes one: traced, the interpreter's
# collections do not fall on the same allocations as bare (the tracer's
# audit hook makes CPython build each audit event's arguments).
gc.disable()
if stack:
    threading.stack_size(stack)
t = threading.Thread(target=run)
t.start()
t.join()
"""


def build(python, tmp):
    cfg = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                          "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                         capture_output=True, text=True, check=True).stdout.split()
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I" + cfg[0], DOUBLE_INIT,
                    "-o", os.path.join(tmp, "double_init" + cfg[1])], check=True)
    paint = os.path.join(tmp, "libpaint.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", PAINT, "-o", paint], check=True)
    return paint


def painted(python, tmp, paint, stack, trace, tag):
    n = stack // 2 if stack else 64 * 1024
    run = pt.run_traced([python, "-c", PROGRAM, paint, str(stack), str(n)], args.preload, args.pylog,
                        env=dict(BIND_NOW, PYTHONPATH=tmp, TRACE_PY_ALLOCS="1"), trace=trace)
    if not fails.check(run.proc.returncode == 0, "%s: exit %d: %s"
                       % (tag, run.proc.returncode, run.proc.stderr[-800:])):
        return None, run
    return {l.split()[0]: int(l.split()[1]) for l in run.proc.stdout.splitlines()}, run


def check(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        paint = build(python, tmp)
        for stack, extra in ((0, MOST), (32768, THIN_EXTRA)):
            tag = "%s, %s stack" % (version, "%d-byte" % stack if stack else "default")
            bare, _ = painted(python, tmp, paint, stack, False, tag + ", bare")
            traced, run = painted(python, tmp, paint, stack, True, tag)
            if not bare or not traced:
                continue
            print("  %s: bare %s, traced %s" % (tag, bare, traced))
            for kind in bare:
                fails.check(traced[kind] - bare[kind] <= extra, "%s: %s took %d bytes of stack, %d bare"
                            % (tag, kind, traced[kind], bare[kind]))
            doubles = run.of("py_double_init")
            fails.check(len(doubles) == 200, "%s: %d py_double_init events, expected 200" % (tag, len(doubles)))
            starts = len(run.of("gc_start"))
            fails.check(starts >= 400, "%s: %d gc_start events, expected 400 or more" % (tag, starts))


pt.for_each_interpreter(args.python, check, fails)
