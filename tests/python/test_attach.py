"""Attaching to CPython: on every interpreter, the tracer attaches before site
customisation, records from the first audit event after initialisation on,
leaves the program's output and exit status alone, stays out with
TRACE_PYTHON=0, works under the debug allocator (PYTHONMALLOC=debug,
PYTHONDEVMODE=1, -X dev) and in debug builds (python3.X-dbg, with any
allocator) without the crash at exit an early audit hook causes there, and
leaves non-Python processes to CUDA tracing."""
import glob
import os
import re
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
hello = pt.workload("hello.py")
collect_line = pt.line_of(hello, "collect")


def traced(python, extra_args=(), env=None, cwd=None):
    return pt.run_traced([python, *extra_args, hello], args.preload, args.pylog, env=env, cwd=cwd)


def check_attached(python, version):
    bare = pt.run_traced([python, hello], args.preload, args.pylog, trace=False)
    run = traced(python)
    tag = "%s (%s)" % (version, python)
    fails.check(run.proc.returncode == bare.proc.returncode == 3,
                "%s: exit status %s traced, %s bare" % (tag, run.proc.returncode, bare.proc.returncode))
    fails.check(run.proc.stdout == bare.proc.stdout, "%s: output changed: %r vs %r"
                % (tag, run.proc.stdout, bare.proc.stdout))
    fails.check(any(v.startswith(version + ".") for v in run.info("python_version")),
                "%s: no python_version INFO (got %s)" % (tag, run.info("python_version")))
    # The header has it too, from the start (Py_GetVersion), and says the same.
    fails.check(run.header_python in run.info("python_version"),
                "%s: header python_version %r, INFO %s" % (tag, run.header_python, run.info("python_version")))
    at_line = [e for e in run.of("gc_start")
               if e["py"] and e["py"][0][0].endswith("hello.py") and e["py"][0][1] == collect_line
               and e["py"][0][2] in ("main",)]
    fails.check(len(at_line) == 1, "%s: expected one gc_start at hello.py:%d in main, got %d"
                % (tag, collect_line, len(at_line)))
    fails.check(not run.of("py_double_init"), "%s: py_double_init on an ordinary program" % tag)


def check_before_sitecustomize(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
            f.write("import gc\ngc.collect()\n")
        run = traced(python, env={"PYTHONPATH": tmp})
    hits = [e for e in run.of("gc_start") if e["py"] and e["py"][0][0].endswith("sitecustomize.py")]
    fails.check(len(hits) == 1, "%s: the collection in sitecustomize.py was not recorded "
                "(attached too late?)" % version)


def check_without_site(python, version):
    """python -S imports no site: the first audit event after initialisation
    is then cpython.run_file, still before the script's first line."""
    run = traced(python, ["-S"])
    at_line = [e for e in run.of("gc_start") if e["py"] and e["py"][0][1] == collect_line]
    fails.check(len(at_line) == 1, "%s -S: not attached" % version)


def check_switched_off(python, version):
    run = traced(python, env={"TRACE_PYTHON": "0"})
    fails.check(run.proc.returncode == 3, "%s TRACE_PYTHON=0: exit status %s" % (version, run.proc.returncode))
    fails.check(not run.of("gc_start") and not run.info("python_version"),
                "%s TRACE_PYTHON=0: Python events were recorded" % version)
    fails.check(run.header_python == "", "%s TRACE_PYTHON=0: header python_version %r"
                % (version, run.header_python))


DEBUG_ALLOCATOR = [("PYTHONMALLOC=debug", [], {"PYTHONMALLOC": "debug"}),
                   ("PYTHONDEVMODE=1", [], {"PYTHONDEVMODE": "1"}),
                   ("-X dev", ["-X", "dev"], {})]
# A debug build allocates the entry with its debug hooks already: the
# default, and plain malloc or pymalloc chosen at pre-initialisation.
DEBUG_BUILD = [("default allocator", [], {}),
               ("PYTHONMALLOC=malloc", [], {"PYTHONMALLOC": "malloc"}),
               ("PYTHONMALLOC=pymalloc", [], {"PYTHONMALLOC": "pymalloc"})] + DEBUG_ALLOCATOR


def check_debug_allocator(python, version, cases=DEBUG_ALLOCATOR):
    """The audit hook's entry, allocated before pre-initialisation, must go
    back at exit to the allocator that made it, not to the one in place
    then (either way round, the process would abort): the tracer attaches
    and the program ends as it does bare."""
    for name, extra, env in cases:
        bare = pt.run_traced([python, *extra, hello], args.preload, args.pylog, env=env, trace=False)
        run = traced(python, extra, dict(env, TRACE_QUIET="1"))
        tag = "%s %s" % (version, name)
        fails.check(run.proc.returncode == bare.proc.returncode == 3, "%s: exit status %s traced, %s bare "
                    "(stderr %s)" % (tag, run.proc.returncode, bare.proc.returncode, run.proc.stderr[-500:]))
        fails.check(run.proc.stdout == bare.proc.stdout, "%s: output changed" % tag)
        fails.check(run.proc.stderr == bare.proc.stderr, "%s: stderr changed: %r" % (tag, run.proc.stderr[-500:]))
        at_line = [e for e in run.of("gc_start") if e["py"] and e["py"][0][1] == collect_line]
        fails.check(len(at_line) == 1, "%s: not attached (%d gc_start at hello.py:%d)"
                    % (tag, len(at_line), collect_line))


def check_not_python():
    run = pt.run_traced(["/bin/sh", "-c", "exit 5"], args.preload, args.pylog)
    fails.check(run.proc.returncode == 5, "sh: exit status %s" % run.proc.returncode)
    fails.check(not run.info("python_version") and not run.info("python"),
                "sh: Python INFO in a non-Python process")
    fails.check(run.header_python == "", "sh: header python_version %r" % run.header_python)


# The allocators' name CPython gives extension modules (_testcapi's
# pymem_getallocatorsname, which test_cmd_line's PYTHONMALLOC and -X dev
# tests print) compares each domain's functions with its own: our wrappers
# made it NULL, a RuntimeError.  An interpreter with a shared libpython gets
# the name it gets bare; a static one's calls cannot be interposed.
NAME_PROGRAM = """
try:
    from _testinternalcapi import pymem_getallocatorsname
except (ImportError, AttributeError):
    from _testcapi import pymem_getallocatorsname
try:
    print(pymem_getallocatorsname())
except RuntimeError as e:
    print("RuntimeError", e)
"""


def check_allocator_name(python, version):
    if pt.is_static(python):
        print("%s (%s): static interpreter, allocator name not checked (known: docs/python.md)" % (version, python))
        return
    for env in ({}, {"PYTHONMALLOC": "malloc"}, {"PYTHONMALLOC": "debug"}, {"PYTHONDEVMODE": "1"}):
        bare = pt.run_traced([python, "-c", NAME_PROGRAM], args.preload, args.pylog, env=env, trace=False)
        for more in ({}, {"TRACE_PY_ALLOCS": "1"}):
            run = pt.run_traced([python, "-c", NAME_PROGRAM], args.preload, args.pylog, env=dict(env, **more))
            fails.check(run.proc.stdout == bare.proc.stdout and "RuntimeError" not in bare.proc.stdout,
                        "%s (%s) %s %s: allocators name %r traced, %r bare"
                        % (version, python, env, more, run.proc.stdout.strip(), bare.proc.stdout.strip()))


# sys._debugmallocstats() prints pymalloc's part only when the object
# domain's functions are CPython's own: our OBJ wrapper (TRACE_PY_ALLOCS)
# made it print none ("Small block threshold" missing), and CPython's
# test_sys.test_debugmallocstats failed traced.  libtrace.so puts the wrapped
# allocator back for that call; a static interpreter's own call cannot be
# interposed (docs/python.md).
STATS_PROGRAM = "import sys; sys._debugmallocstats()"
STATS_LINES = ("Small block threshold", "arenas allocated total", "free PyDictObjects")


def check_debug_malloc_stats(python, version):
    if pt.is_static(python):
        print("%s (%s): static interpreter, sys._debugmallocstats not checked (known: docs/python.md)"
              % (version, python))
        return
    for env in ({}, {"PYTHONMALLOC": "malloc"}, {"PYTHONMALLOC": "debug"}):
        bare = pt.run_traced([python, "-c", STATS_PROGRAM], args.preload, args.pylog, env=env, trace=False)
        said = [line for line in STATS_LINES if line in bare.proc.stderr]
        for more in ({}, {"TRACE_PY_ALLOCS": "1"}, {"TRACE_PY_ALLOCS": "7"}):
            run = pt.run_traced([python, "-c", STATS_PROGRAM], args.preload, args.pylog, env=dict(env, **more))
            got = [line for line in STATS_LINES if line in run.proc.stderr]
            fails.check(run.proc.returncode == bare.proc.returncode == 0 and got == said,
                        "%s (%s) %s %s: sys._debugmallocstats() said %s traced, %s bare (exit %s, %s)"
                        % (version, python, env, more, got, said, run.proc.returncode, bare.proc.returncode))
            if more:
                fails.check(run.of("py_alloc"), "%s %s %s: no py_alloc recorded" % (version, env, more))


# CPython before 3.8 (2.7, 3.6 and 3.7 where installed) has no audit hooks:
# no Python hooks, and the process is told of, not taken for one without
# Python.  The line goes in the log (INFO python, here with a 4 MiB host
# buffer to make one) and on stderr only where the line at exit would be.
OLD_PROGRAM = "import sys; b = bytearray(4 << 20); del b; sys.stdout.write('ok\\n'); sys.exit(3)"


def check_old_pythons():
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    old = [(c, pt.version_of(c)) for c in sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python[23].*")))
           if re.search(r"python[23]\.\d+$", c) and os.access(c, os.X_OK)]
    old = [(c, v) for c, v in old if v and not pt.supported(v) and (v.startswith("2.") or int(v[2:]) < 8)]
    if not old:
        print("no CPython before 3.8 found: its checks skipped")
    for python, version in old:
        tag = "%s (%s)" % (version, python)
        print("==", version, python, "(unsupported)")
        bare = pt.run_traced([python, "-c", OLD_PROGRAM], args.preload, args.pylog, trace=False)
        run = pt.run_traced([python, "-c", OLD_PROGRAM], args.preload, args.pylog,
                            env={"TRACE_HOST_BUFFERS": "1"})
        fails.check((run.proc.returncode, run.proc.stdout, run.proc.stderr) ==
                    (bare.proc.returncode, bare.proc.stdout, bare.proc.stderr) == (3, "ok\n", ""),
                    "%s: traced %r, bare %r" % (tag, (run.proc.returncode, run.proc.stdout, run.proc.stderr),
                                                 (bare.proc.returncode, bare.proc.stdout, bare.proc.stderr)))
        said = "Python hooks off: unsupported Python version %s." % version
        # Under the sanitizer its malloc comes first: no host buffer, no event, no log.
        fails.check("libasan" in args.preload or [i for i in run.info("python") if i.startswith(said)]
                    and not run.of("gc_start") and len(run.of("host_alloc")) == 1,
                    "%s: INFO python %s, %d gc_start, %d host_alloc" % (tag, run.info("python"),
                                                                      len(run.of("gc_start")),
                                                                      len(run.of("host_alloc"))))
        loud = pt.run_traced([python, "-c", OLD_PROGRAM], args.preload, args.pylog, env={"TRACE_EXIT_LINE": "1"})
        fails.check(loud.proc.stderr.startswith("trace: " + said) and loud.proc.stderr.count("\n") == 1
                    and not loud.events, "%s: with TRACE_EXIT_LINE=1, stderr %r, %d events (expected the line, "
                    "and no log)" % (tag, loud.proc.stderr, len(loud.events)))


check_old_pythons()
interpreters = pt.find_interpreters(args.python)
if not interpreters:
    print("no CPython 3.8-3.13 found")
    raise SystemExit(pt.SKIP)
for python, version in interpreters:
    print("==", version, python)
    check_attached(python, version)
    check_before_sitecustomize(python, version)
    check_without_site(python, version)
    check_switched_off(python, version)
    check_debug_allocator(python, version)
    check_allocator_name(python, version)
    check_debug_malloc_stats(python, version)
# Debian's debug builds (python3.X-dbg, installed by scripts/lib/setup.sh):
# python3.11d used to abort at exit under the preload.
debug_builds = [c for c in sorted(glob.glob("/usr/bin/python3.[0-9]*d"))
                if re.search(r"python3\.\d+d$", c) and os.access(c, os.X_OK)]
if not debug_builds:
    print("no debug build (/usr/bin/python3.Xd) found: its checks skipped")
for python in debug_builds:
    version = pt.version_of(python)
    if not pt.supported(version):
        continue
    print("==", version, python, "(debug build)")
    check_attached(python, version)
    check_debug_allocator(python, version + " debug build", DEBUG_BUILD)
check_not_python()
fails.finish()
