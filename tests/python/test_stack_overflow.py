"""A stack overflow leaves a whole log (preload/alt_stack.h).

Python with sys.setrecursionlimit raised, recursing in C: the repr of a
list nested 100,000 deep.  On 3.8 to 3.11 that runs off any stack; 3.12
and 3.13 stop C recursion at a fixed count (RecursionError), which fits in
8 MiB, so the stacks here are small: the main thread's by RLIMIT_STACK
(128 KiB), a thread's by threading.stack_size (128 KiB).  Each overflows
into the page below its stack: SIGSEGV, with no stack for a handler unless
the thread has an alternate signal stack.  Before, the process died as the
kernel's default (our handler never ran): the log had no END and lacked
the last events (or there was no log at all: nothing flushed yet).

Checked, on the main thread and on another: the traced status is the bare
one (SIGSEGV; under the sanitizer build's runtime, which handles SIGSEGV
itself, its report's status), the output the same, the log whole (END,
`ending` naming the signal, or `sanitizer`), and the mark recorded just
before the overflow (on the overflowing thread) is in it; a thread that
records nothing of its own before it overflows is covered too (what the
interpreter records as the thread starts gives it its stack).  With
faulthandler enabled (-X faulthandler: its own alternate stack on the main
thread, its handler in front of ours) its report on the main thread is the
same traced as bare, and the log is whole; on another thread it reports
traced where bare it could not (no stack to run on).  3.8 sets
faulthandler's alternate stack on the main thread at start, enabled or
not: its main thread was covered before."""
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()
RUNTIME = args.preload.split(":")[:-1]   # the sanitizer build's runtime, or nothing
MARK = "overflow next"
SMALL = 128 * 1024

PROGRAM = r"""
import sys, threading
sys.setrecursionlimit(10 ** 6)

def overflow():
    x = []
    for i in range(100000):
        x = [x]
    if sys.argv[1] != "quiet":
        sys.audit("gputrace.mark", "%s")
    repr(x)
    print("no overflow")

if sys.argv[1] == "main":
    overflow()
else:
    threading.stack_size(%d)
    t = threading.Thread(target=overflow, name="deep")
    t.start()
    t.join()
""" % (MARK, SMALL)


def limits(where):
    def set_them():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if where == "main":
            hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
            resource.setrlimit(resource.RLIMIT_STACK, (SMALL, hard))
    return set_them


def run(python, where, traced, flags=()):
    """(status, stdout, stderr, log path or None); the caller removes the log's directory."""
    tmp = tempfile.mkdtemp(prefix="overflow-")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACE_") and k != "PYTHONFAULTHANDLER"}
    env["TRACE_OUTPUT"] = os.path.join(tmp, "trace-%p.tlog")
    preload = RUNTIME + [args.preload.split(":")[-1]] if traced else RUNTIME
    env["LD_PRELOAD"] = ":".join(preload)
    if not preload:
        del env["LD_PRELOAD"]
    p = subprocess.run([python] + list(flags) + ["-c", PROGRAM, where], capture_output=True,
                       text=True, env=env, timeout=300, preexec_fn=limits(where))
    logs = [f for f in os.listdir(tmp) if f.endswith(".tlog")]
    if len(logs) != 1:
        shutil.rmtree(tmp, ignore_errors=True)
        return p.returncode, p.stdout, p.stderr, None
    return p.returncode, p.stdout, p.stderr, os.path.join(tmp, logs[0])


def status(rc):
    return "signal %s" % signal.Signals(-rc).name if rc < 0 else "exit %d" % rc


def same_report(text):
    """faulthandler's report without what differs from run to run (thread ids)."""
    return re.sub(r"0x[0-9a-f]+", "0x?", text)


def check_case(python, tag, where, flags=(), same_output=True):
    rc0, out0, err0, log0 = run(python, where, False, flags)
    if log0:
        pt.discard(log0)
    if not fails.check(rc0 != 0 and "no overflow" not in out0,
                       "%s: the bare run did not overflow (%s, %r)" % (tag, status(rc0), out0)):
        return
    rc, out, err, log = run(python, where, True, flags)
    fails.check(rc == rc0, "%s: traced %s, bare %s (stderr %s)" % (tag, status(rc), status(rc0), err[-300:]))
    # A sanitizer's report (its runtime handling SIGSEGV) differs from run to run.
    same_output = same_output and rc0 == -signal.SIGSEGV
    fails.check(out == out0 and (same_report(err) == same_report(err0) or not same_output),
                "%s: output traced %r %r, bare %r %r" % (tag, out, err[-400:], out0, err0[-400:]))
    if not fails.check(log is not None, "%s: no log" % tag):
        return
    summary = subprocess.run([args.dump, "--summary", log], capture_output=True, text=True).stdout
    ending = "signal SIGSEGV" if rc == -signal.SIGSEGV else "sanitizer"
    whole = fails.check("clean (END record read)" in summary and "damage      none" in summary
                        and "info: ending=%s" % ending in summary,
                        "%s: log not whole, or not ending %r:\n%s" % (tag, ending, summary[-600:]))
    if whole:
        events = pt.read_log(args.pylog, log)[0]
        marks = [e for e in events if e["kind"] == "mark" and e.get("text") == MARK]
        fails.check(len(marks) == (where != "quiet"), "%s: %d marks %r in the log" % (tag, len(marks), MARK))
        if marks and where == "thread":
            pid = int(re.search(r"trace-(\d+)\.tlog$", log).group(1))
            fails.check(marks[0]["tid"] != pid, "%s: the mark is on the main thread" % tag)
    pt.discard(log)


def check(python, version):
    check_case(python, version + " main", "main")
    check_case(python, version + " thread", "thread")
    # No mark: what the interpreter records as a thread starts gives it its stack.
    check_case(python, version + " thread, no mark", "quiet")
    check_case(python, version + " main, -X faulthandler", "main", ["-X", "faulthandler"])
    # faulthandler's handler (SA_ONSTACK) on a thread: bare, with no
    # alternate stack there, it cannot run and the process dies silent;
    # traced it runs on ours and prints its report (docs/guarantees.md).
    check_case(python, version + " thread, -X faulthandler", "thread", ["-X", "faulthandler"],
               same_output=False)


pt.for_each_interpreter(args.python, check, fails)
