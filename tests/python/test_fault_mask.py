"""A fault on a thread that blocks every signal leaves a whole log.

faulthandler's watchdog thread (dump_traceback_later, pytest's
faulthandler_timeout) blocks every signal, then reads the other threads'
frames without the GIL, which can fault (CPython's own race).  The kernel
does not hold back a fault the thread blocks: it puts SIG_DFL in place and
kills the process, no handler run, ours included.  Such crashes (1 to 2 in
40 traced runs of a dump_traceback_later workload on 3.12) left a log with
no END, and no faulthandler message either.  The tracer now keeps the fault
signals unblocked in the kernel (preload/fault_mask.h) while each thread
reads back the mask it asked for.

The situation is forced rather than waited for: a thread blocks every signal
as the watchdog does (signal.pthread_sigmask, or libc's sigprocmask through
ctypes), checks that it reads its mask back, and faults, while another
thread records events (gc collections) as fast as it can, so the fault
often falls while that one holds the recorder.  With faulthandler.enable()
too: its handler then runs (where bare the kernel killed the process
without it), restores SIG_DFL (ours) and raises again: the log is whole
as well.  The process dies of SIGSEGV either way, as it does bare.  Without
the fix every case ends "ends after event N without an END record"."""
import os
import re
import resource
import signal
import subprocess
import tempfile

import pytrace as pt

SCRIPT = r'''
import ctypes, faulthandler, gc, signal, sys, threading, time
how, enable = sys.argv[1], sys.argv[2] == "1"
if enable:
    faulthandler.enable()
FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE}
gc.collect()
time.sleep(0.25)                     # the log exists: a flush has run

stop = False
def busy():                          # mid-event when the fault comes
    while not stop:
        gc.collect(0)
threading.Thread(target=busy, daemon=True).start()

def block_all():
    if how == "pthread_sigmask":
        signal.pthread_sigmask(signal.SIG_SETMASK, signal.valid_signals())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGFPE])
        if signal.SIGFPE in signal.pthread_sigmask(signal.SIG_BLOCK, []):
            print("SIGFPE unblocked, read back blocked", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGFPE])
        return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    libc = ctypes.CDLL(None, use_errno=True)
    full, old = ctypes.create_string_buffer(128), ctypes.create_string_buffer(128)
    libc.sigfillset(full)
    if libc.sigprocmask(signal.SIG_SETMASK, full, None) != 0:
        raise OSError(ctypes.get_errno(), "sigprocmask")
    libc.sigprocmask(signal.SIG_BLOCK, None, old)
    return {s for s in FAULTS if libc.sigismember(old, s) == 1}

def watchdog_like():
    blocked = set(block_all())
    print("reads back blocked:", sorted(int(s) for s in FAULTS & blocked), flush=True)
    time.sleep(0.05)
    ctypes.string_at(0)              # SIGSEGV on this thread
t = threading.Thread(target=watchdog_like)
t.start()
t.join()
print("survived", flush=True)
'''

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()
FAULTS = sorted(int(s) for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE))


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # no core file left in the build tree


def check(python, version):
    for how in ("pthread_sigmask", "sigprocmask"):
        for enable in ("0", "1"):
            tag = "%s (%s) %s faulthandler.enable=%s" % (version, python, how, enable)
            with tempfile.TemporaryDirectory() as tmp:
                env = {k: v for k, v in os.environ.items()
                       if not k.startswith("TRACE_") or k == "TRACE_TEST_PYTHONS"}
                env.update(LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"))
                done = subprocess.run([python, "-S", "-c", SCRIPT, how, enable], capture_output=True,
                                      text=True, env=env, timeout=120, preexec_fn=no_core)
                fails.check(done.returncode == -signal.SIGSEGV,
                            "%s: rc %d (not death by SIGSEGV): %s%s"
                            % (tag, done.returncode, done.stdout[-300:], done.stderr[-1000:]))
                fails.check("reads back blocked: %s" % FAULTS in done.stdout and
                            "read back blocked" not in done.stdout,
                            "%s: the thread does not read back the fault signals blocked: %s"
                            % (tag, done.stdout[-300:]))
                logs = os.listdir(tmp)
                if not fails.check(len(logs) == 1, "%s: logs %s" % (tag, logs)):
                    continue
                out = subprocess.run([args.dump, "--summary", os.path.join(tmp, logs[0])],
                                     capture_output=True, text=True)
                fails.check(out.returncode == 0 and re.search(r"ending=signal SIGSEGV", out.stdout),
                            "%s: the log is not whole, or does not end 'signal SIGSEGV' (trace-dump "
                            "rc %d): %s %s" % (tag, out.returncode, out.stdout[-600:], out.stderr[-300:]))


pt.for_each_interpreter(args.python, check, fails)
