"""The tracer's thread never lives across os.fork(): CPython 3.12+ warns
(DeprecationWarning) when a process with more than one OS thread forks,
counting every thread the kernel sees, so a single-threaded program must not
become a "multi-threaded" one under the preload.  On every interpreter: the
flusher thread (trace-flush) is running before the fork, the fork prints no
such warning (-W always::DeprecationWarning), and the next event starts the
thread again.  On 3.12+ a control run with one Python thread alive must raise
the warning, so the check above can fail.

Processes ending by os._exit (a forked child, then its parent) write their
last frames from the program's own thread, through a descriptor moved up
out of the way of the program's (preload/log_file.c, move_high): within the
descriptor table's present size.  Moved to
1024, it grew the table, which costs an RCU grace period with the flusher
thread sharing it: 10 to 30 ms per ending, a Pool(maxtasksperchild=1) 2.9x
slower.  dupfd_spy.c, preloaded first, notes each F_DUPFD the process asks."""
import os
import tempfile

import pytrace as pt

SCRIPT = r'''
import gc, os, sys, time

def threads():
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % t) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names

def wait_for_flusher():
    deadline = time.monotonic() + 10
    while "trace-flush" not in threads():
        if time.monotonic() > deadline:
            return False
        gc.collect()          # an event: starts the thread if it is not running
        time.sleep(0.01)
    return True

control = sys.argv[1] == "control"
if control:
    import threading
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
print("flusher before fork:", wait_for_flusher())
pid = os.fork()
if pid == 0:
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("forked, child status", status)
print("flusher after fork:", wait_for_flusher())
'''

WARNING = "is multi-threaded, use of fork()"
ENDINGS = r'''
import gc, os
for i in range(3):
    pid = os.fork()
    if pid == 0:
        gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)
gc.collect()
os._exit(0)
'''

args = pt.parse_args(lambda p: p.add_argument("--dupfd-spy", required=True))
fails = pt.Failures()


def check_ending_descriptor(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        spy = os.path.join(tmp, "dupfd")
        parts = args.preload.split(":")   # a sanitizer's runtime stays first
        preload = ":".join(parts[:-1] + [args.dupfd_spy, parts[-1]])
        run = pt.run_traced([python, "-c", ENDINGS], args.preload, args.pylog,
                            env={"LD_PRELOAD": preload, "DUPFD_SPY": spy})
        moves = [tuple(map(int, line.split())) for line in open(spy)] if os.path.exists(spy) else []
        fails.check(run.proc.returncode == 0 and len(moves) >= 4,
                    "%s: rc %d, %d descriptor moves for 4 endings by os._exit (%s)"
                    % (tag, run.proc.returncode, len(moves), run.proc.stderr[-500:]))
        fails.check(all(0 < floor < size for floor, size in moves),
                    "%s: the log's descriptor moved past the descriptor table's size (number asked, "
                    "table size): %s" % (tag, moves))


def check(python, version):
    tag = "%s (%s)" % (version, python)
    check_ending_descriptor(python, tag)
    cmd = [python, "-S", "-W", "always::DeprecationWarning", "-c", SCRIPT]
    run = pt.run_traced(cmd + ["plain"], args.preload, args.pylog)
    out = run.proc.stdout
    if not fails.check(run.proc.returncode == 0, "%s: rc %d: %s%s" % (tag, run.proc.returncode,
                                                                        out[-500:], run.proc.stderr[-1500:])):
        return
    fails.check("flusher before fork: True" in out,
                "%s: the flusher thread never showed up before the fork: %s" % (tag, out))
    fails.check(WARNING not in run.proc.stderr,
                "%s: os.fork() warned of threads under the preload: %s" % (tag, run.proc.stderr[-500:]))
    fails.check("forked, child status 0" in out, "%s: the child did not exit 0: %s" % (tag, out))
    fails.check("flusher after fork: True" in out,
                "%s: the flusher thread did not start again after the fork: %s" % (tag, out))
    fails.check(len(run.of("gc_start")) >= 2, "%s: the parent's log lacks its collections" % tag)
    if tuple(map(int, version.split("."))) >= (3, 12):
        control = pt.run_traced(cmd + ["control"], args.preload, args.pylog)
        fails.check(control.proc.returncode == 0 and WARNING in control.proc.stderr,
                    "%s: control with a Python thread alive did not warn (the check above cannot fail): "
                    "rc %d %s%s" % (tag, control.proc.returncode, control.proc.stdout[-500:],
                                    control.proc.stderr[-500:]))
    else:
        print("  %s has no fork-with-threads warning: thread checks only" % version)


pt.for_each_interpreter(args.python, check, fails)
