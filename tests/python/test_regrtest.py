"""The application does not notice: CPython's own regression tests for the
areas we touch (test_gc, test_weakref, test_ctypes, test_threading,
test_audit) give the same result, test by test, with the preload as without
it, on 3.11 and 3.13 (or the interpreters given with --python)."""
import re
import subprocess

import pytrace as pt

MODULES = ["test_gc", "test_weakref", "test_ctypes", "test_threading", "test_audit"]
RESULT = re.compile(r"^(\w+) \(([\w.]+)\)(?:\n.*?)?\s\.\.\.\s*(ok|FAIL|ERROR|skipped|expected failure|"
                    r"unexpected success)", re.M)

args = pt.parse_args()
fails = pt.Failures()


def results(run):
    """{test id: outcome} from `python -m test -v` output.  The id in
    parentheses is module.Class.test from 3.11 on, module.Class before."""
    out = {}
    for name, where, outcome in RESULT.findall(run.proc.stdout + run.proc.stderr):
        out[where if where.endswith("." + name) else where + "." + name] = outcome
    return out


def check(python, version):
    cmd = [python, "-m", "test", "-v"] + MODULES
    bare = pt.run_traced(cmd, args.preload, args.pylog, trace=False, timeout=600)
    # TRACE_QUIET: the tests compare their subprocesses' stderr with b"", and
    # every traced process says where its log went at exit.
    traced = pt.run_traced(cmd, args.preload, args.pylog, env={"TRACE_QUIET": "1"}, timeout=600)
    want, got = results(bare), results(traced)
    tag = "%s (%s)" % (version, python)
    fails.check(len(want) > 300, "%s: only %d results parsed from the bare run" % (tag, len(want)))
    fails.check(traced.proc.returncode == bare.proc.returncode,
                "%s: exit status %d traced, %d bare" % (tag, traced.proc.returncode, bare.proc.returncode))
    differ = sorted(t for t in set(want) | set(got) if want.get(t) != got.get(t))
    fails.check(not differ, "%s: %d tests differ: %s" % (tag, len(differ),
                ["%s: %s -> %s" % (t, want.get(t), got.get(t)) for t in differ[:10]]))
    fails.check(traced.of("gc_start"), "%s: nothing was traced" % tag)
    print("%s: %d tests compared, %d gc collections recorded" % (tag, len(want), len(traced.of("gc_start"))))


chosen = pt.find_interpreters(args.python)
if not args.python:
    chosen = [(p, v) for p, v in chosen if v in ("3.11", "3.13") and not pt.is_static(p)]
if not chosen:
    raise SystemExit(pt.SKIP)
for python, version in chosen:
    check(python, version)
fails.finish()
