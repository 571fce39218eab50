"""The recorder's address space: a program that runs bare under `ulimit -v`
(RLIMIT_AS) runs the same traced.

The recorder's two threads had the default stacks (RLIMIT_STACK, 8 MiB
each), and the flusher, which made the other thread, got a malloc arena of
its own from that one allocation (glibc callocs a new thread's TLS vector on
the creating thread): 64 MiB of address space, 128 MiB at its peak while
glibc aligns it.  A traced python with a collection behind it had a VmPeak
of 166 MB against 16.5 MB bare (3.11), and under `ulimit -v` at 170 to 180 MB
could not start a thread ("can't start new thread") where bare could.

Each interpreter runs a program that collects (an event: the flusher starts),
waits for a flush, reports VmPeak, then starts four threads.  Bare first, to
learn its own VmPeak; then bare and traced under a limit 48 MiB above that
(four thread stacks of 8 MiB and some room): both must print the same and exit
0.  Without a limit, the traced VmPeak must be within 24 MiB of the bare one
(the recorder's buffers, its two small stacks and its libraries: 8.4 MB on
3.8 to 3.13; it was 150 MB).  Under the limit the old recorder failed on
3.8; the other versions got by, glibc falling back to the main arena when it
could not map a new one."""
import os
import re
import resource
import subprocess
import tempfile

import pytrace as pt

SCRIPT = r'''
import gc, threading, time
gc.collect()
time.sleep(0.3)                      # a flush: the flusher and its helper run
peak = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmPeak")][0]
print("peak", peak, flush=True)
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("threads", sorted(out))
'''

MIB = 1024 * 1024
ROOM = 48 * MIB
OURS_MAX = 24 * MIB

args = pt.parse_args(lambda p: p.add_argument("--big-tls"))
fails = pt.Failures()


def run(python, tmp, traced, limit):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACE_") or k == "TRACE_TEST_PYTHONS"}
    env.pop("LD_PRELOAD", None)
    if traced:
        env.update(LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"))

    def cap():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run([python, "-S", "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=120, preexec_fn=cap)
    m = re.search(r"peak (\d+)", done.stdout)
    return done, int(m.group(1)) * 1024 if m else None


def check(python, version):
    tag = "%s (%s)" % (version, python)
    with tempfile.TemporaryDirectory() as tmp:
        bare, peak = run(python, tmp, False, 0)
        if not fails.check(bare.returncode == 0 and peak, "%s: bare run: rc %d: %s" % (
                tag, bare.returncode, bare.stderr[-800:])):
            return
        limit = peak + ROOM
        capped, _ = run(python, tmp, False, limit)
        if capped.returncode != 0:
            print("  %s: bare fails under a limit of %d MiB; not checked" % (tag, limit // MIB))
            return
        traced, _ = run(python, tmp, True, limit)
        expect = capped.stdout.split("\n", 1)[1]
        fails.check(traced.returncode == 0 and traced.stdout.split("\n", 1)[-1] == expect,
                    "%s: under `ulimit -v %d` (bare VmPeak %d KiB + 48 MiB) bare runs, traced: "
                    "rc %d, stdout %r, stderr %s" % (tag, limit // 1024, peak // 1024,
                                                     traced.returncode, traced.stdout[-300:],
                                                     traced.stderr[-600:]))
        logs = [n for n in os.listdir(tmp) if n.endswith(".tlog")]
        fails.check(len(logs) == 1, "%s: expected the traced run's log, found %s" % (tag, logs))
        # The recorder's share, measured without a limit (under one, glibc
        # falls back to the main arena when it cannot map a new one).
        free, traced_peak = run(python, tmp, True, 0)
        if fails.check(free.returncode == 0 and traced_peak, "%s: traced run: rc %d: %s" % (
                tag, free.returncode, free.stderr[-800:])):
            print("  %s: VmPeak bare %d KiB, traced %d KiB (+%d)" % (
                tag, peak // 1024, traced_peak // 1024, (traced_peak - peak) // 1024))
            fails.check(traced_peak - peak <= OURS_MAX,
                        "%s: the traced VmPeak is %d KiB above bare (%d against %d), more than "
                        "%d MiB" % (tag, (traced_peak - peak) // 1024, traced_peak // 1024,
                                    peak // 1024, OURS_MAX // MIB))


def big_tls():
    """A program whose 4 MiB of static TLS does not fit in the recorder's
    smaller stacks (glibc carves it out of each thread's stack): both threads
    start with the default stacks instead, and its log is whole."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
        env.update(LD_PRELOAD=args.preload, TRACE_HOST_BUFFERS="1",
                   TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"))
        done = subprocess.run([args.big_tls], capture_output=True, text=True, env=env, timeout=60)
        fails.check(done.returncode == 0 and "block 1 threads 3" in done.stdout,
                    "big static TLS: rc %d, %r (expected the program's thread, the flusher and "
                    "trace-files: 3 threads)" % (done.returncode, done.stdout))
        logs = [n for n in os.listdir(tmp) if n.endswith(".tlog")]
        fails.check(len(logs) == 1, "big static TLS: expected one log, found %s" % logs)


if args.big_tls:
    big_tls()
pt.for_each_interpreter(args.python, check, fails)
