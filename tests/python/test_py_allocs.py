"""TRACE_PY_ALLOCS=N records one object allocation in N as py_alloc with the
Python stack; off by default.  Native stacks only with TRACE_PY_ALLOC_NATIVE=1."""
import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
PROGRAM = "def make():\n    return [[i] for i in range(5000)]\nx = make()\n"


def from_make(run):
    return [e for e in run.of("py_alloc") if e["py"] and e["py"][0][2] in ("make", "<listcomp>", "make.<locals>.<listcomp>")]


def check(python, version):
    tag = "%s (%s)" % (version, python)
    off = pt.run_traced([python, "-c", PROGRAM], args.preload, args.pylog)
    fails.check(not off.of("py_alloc"), "%s: py_alloc recorded without TRACE_PY_ALLOCS" % tag)
    every = pt.run_traced([python, "-c", PROGRAM], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
    tenth = pt.run_traced([python, "-c", PROGRAM], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "10"})
    n1, n10 = len(from_make(every)), len(from_make(tenth))
    fails.check(n1 >= 5000, "%s: TRACE_PY_ALLOCS=1 recorded %d allocations in make(), expected >= 5000"
                % (tag, n1))
    fails.check(n1 / 12 <= n10 <= n1 / 8, "%s: TRACE_PY_ALLOCS=10 recorded %d, with 1: %d" % (tag, n10, n1))
    fails.check(every.proc.returncode == 0, "%s: program failed" % tag)
    with_native = [e for e in from_make(every) if e["native_depth"]]
    fails.check(not with_native, "%s: %d py_alloc events carry a native stack without TRACE_PY_ALLOC_NATIVE"
                % (tag, len(with_native)))
    native = pt.run_traced([python, "-c", PROGRAM], args.preload, args.pylog,
                           env={"TRACE_PY_ALLOCS": "1", "TRACE_PY_ALLOC_NATIVE": "1"})
    made = from_make(native)
    fails.check(len(made) >= 5000 and all(e["native_depth"] for e in made),
                "%s: TRACE_PY_ALLOC_NATIVE=1: %d of %d py_alloc events in make() have a native stack"
                % (tag, len([e for e in made if e["native_depth"]]), len(made)))


pt.for_each_interpreter(args.python, check, fails)
