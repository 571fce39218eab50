"""A forked child's log names the process that forked it as its parent (the
header's ppid and INFO `forked`), also when that process has ended before the
child's first instruction: a daemon's double fork (gunicorn --daemon,
python-daemon), where the middle process forks and _exits at once.  The
child's atfork handler used to ask getppid(), which by then could answer 1 or
a subreaper: `trace-replay report` over the logs put the daemon at the root
of the tree instead of under the process that forked it (found with
`gunicorn --daemon` under TRACE_PY_ALLOCS=1: 2 of 2 runs).

The parent ending first is made likely, not certain: every process is kept
on one CPU, where the parent runs on after fork (the kernel's default) and
_exits before the child is scheduled; the test process is the subreaper the
grandchild goes to, and what getppid() would then answer.  Without the fix
4 runs in 5 named the subreaper; the test makes 3 rounds per interpreter."""
import os
import re
import subprocess
import tempfile

import pytrace as pt

SCRIPT = r'''
import ctypes, gc, os, sys, time
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
mid = os.fork()
if mid == 0:
    gc.collect()                       # an event: the middle process has a log too
    if os.fork() == 0:
        time.sleep(0.2)
        gc.collect()                   # the grandchild's log
        os._exit(0)
    os._exit(0)                        # at once, as daemonize does
os.waitpid(mid, 0)
os.wait()                              # the grandchild, reparented to us
print("middle", mid)
'''

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()


def header(path):
    """(pid, ppid) from trace-dump's first line, and INFO forked's pid."""
    out = subprocess.run([args.dump, path], capture_output=True, text=True).stdout
    m = re.search(r"pid (\d+) \(parent (\d+)\)", out)
    f = re.search(r"forked=from pid (\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None, int(f.group(1)) if f else None


def check(python, version):
    tag = "%s (%s)" % (version, python)
    for rnd in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("TRACE_") or k == "TRACE_TEST_PYTHONS"}
            env.update(LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"))
            done = subprocess.run([python, "-S", "-c", SCRIPT], capture_output=True, text=True,
                                  env=env, timeout=120)
            m = re.search(r"middle (\d+)", done.stdout)
            if not fails.check(done.returncode == 0 and m, "%s: rc %d: %s%s" % (
                    tag, done.returncode, done.stdout[-300:], done.stderr[-1000:])):
                return
            mid = int(m.group(1))
            logs = {}
            for name in os.listdir(tmp):
                (pid, ppid), forked = header(os.path.join(tmp, name))
                logs[pid] = (ppid, forked)
            kids = [pid for pid, (ppid, forked) in logs.items() if forked is not None and pid != mid]
            if not fails.check(mid in logs and len(kids) == 1,
                               "%s: round %d: expected the middle process %d and one grandchild "
                               "among the logs: %s" % (tag, rnd, mid, logs)):
                return
            ppid, forked = logs[kids[0]]
            fails.check(ppid == mid and forked == mid,
                        "%s: round %d: the grandchild %d names parent %d (header) and %s (INFO "
                        "forked), not %d, the process that forked it and ended at once"
                        % (tag, rnd, kids[0], ppid, forked, mid))


pt.for_each_interpreter(args.python, check, fails)
