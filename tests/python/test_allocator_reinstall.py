"""An allocator set on the object domain before the interpreter starts, by a
library preloaded before ours, then set again once the interpreter runs on
top of whatever is there unless that is its own (Scalene 2.x's
libscalene.so does both: `scalene run` puts it first in LD_PRELOAD).  We
wrap it (TRACE_PY_ALLOCS=1, or by default for the double-initialisation
check's fresh blocks); it found ours in place, took it as its predecessor
and every object allocation went round the two until the stack overflowed.
It must now find itself in place: the program runs as it does bare (same
output, status 0), the log ends with END, and with TRACE_PY_ALLOCS=1 objects
allocated after the reinstall are still recorded.  Interpreters without a
shared libpython are left out: the library's lookup finds the
interpreter's own PyMem_GetAllocator before ours there (docs/python.md)."""
import subprocess
import pytrace as pt


def options(p):
    p.add_argument("--fixture", required=True)
    p.add_argument("--dump", required=True)


args = pt.parse_args(options)
fails = pt.Failures()

PROGRAM = r"""
import ctypes, gc, sys
print("reinstalled", ctypes.CDLL(sys.argv[1]).reinstall_allocator(), flush=True)
class Node:
    pass
def cycles():
    for i in range(20000):
        a = Node(); b = Node(); a.o = b; b.o = a
        a.s = "x" * (i % 700)
for _ in range(3):
    cycles()
    gc.collect()
big = bytearray(8 << 20)
del big
print("done", gc.collect() >= 0)
"""


def check(python, version):
    if pt.is_static(python):
        print("   skipped: no shared libpython")
        return
    argv = [python, "-c", PROGRAM, args.fixture]
    # The sanitizer build's runtime comes first, then the fixture, then ours.
    runtime = args.preload.split(":")[:-1]
    bare = pt.run_traced(argv, args.preload, args.pylog, trace=False,
                         env={"LD_PRELOAD": ":".join(runtime + [args.fixture])})
    fails.check(bare.proc.returncode == 0 and "reinstalled 0" in bare.proc.stdout,
                "%s: bare run failed: %s %r %s" % (version, bare.proc.returncode, bare.proc.stdout,
                                                   bare.proc.stderr[-300:]))
    for env in ({}, {"TRACE_PY_ALLOCS": "1"}, {"TRACE_HOST_BUFFERS": "1"}):
        tag = "%s %s" % (version, env or "default")
        env = dict(env, LD_PRELOAD=":".join(runtime + [args.fixture, args.preload.split(":")[-1]]))
        run, path = pt.run_traced_keep(argv, args.preload, args.pylog, env=env)
        summary = subprocess.run([args.dump, "--summary", path], capture_output=True, text=True).stdout
        pt.discard(path)
        fails.check("clean (END record read)" in summary and "damage      none" in summary,
                    "%s: log not whole: %s" % (tag, summary[-300:]))
        fails.check(run.proc.returncode == 0, "%s: status %s, stderr %s" %
                    (tag, run.proc.returncode, run.proc.stderr[-300:]))
        fails.check(run.proc.stdout == bare.proc.stdout and run.proc.stderr == bare.proc.stderr,
                    "%s: output %r %r, bare %r %r" % (tag, run.proc.stdout, run.proc.stderr[-300:],
                                                      bare.proc.stdout, bare.proc.stderr[-300:]))
        if "TRACE_PY_ALLOCS" in env:
            fails.check(len(run.of("py_alloc")) > 1000, "%s: %d py_alloc events" %
                        (tag, len(run.of("py_alloc"))))


pt.for_each_interpreter(args.python, check, fails)
