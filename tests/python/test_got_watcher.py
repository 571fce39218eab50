"""A tool that watches the C heap by rewriting the interpreter's GOT slots
for malloc and free at run time (memray's Tracker, `memray run`) must see
Python's raw blocks under the preload as it does bare.  Our raw-domain
wrapper called our malloc hook directly, past libpython's slot (or, in an
interpreter without one, the program's), and memray counted 122
allocations where it counted 555 bare (3.12.1).  got_counter.c rewrites
those slots the way memray does, to counters; the workload's blocks of
1,000 bytes reach PyMem_RawMalloc from pymalloc (anything over 512 bytes
does), so bare each one is counted.  Traced, by default, with
TRACE_PY_ALLOCS=1 and with TRACE_HOST_BUFFERS=0, the counts must be the
bare run's, within a few per cent."""
import pytrace as pt


def options(p):
    p.add_argument("--fixture", required=True)


args = pt.parse_args(options)
fails = pt.Failures()

BLOCKS = 20000
NAMES = ("malloc", "calloc", "realloc", "free")

PROGRAM = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.got_count.restype = ctypes.c_ulong
patched = lib.got_patch()
lib.got_reset()
n = %d
blocks = [b"x" * (1000 + i %% 50) for i in range(n)]     # malloc
zeros = [bytes(1000 + i %% 50) for i in range(n)]        # calloc
for i in range(n):
    grown = bytearray(700)
    grown += b"y" * 700                                 # realloc
del blocks, zeros
counts = [lib.got_count(i) for i in range(4)]
lib.got_restore()
print("patched", patched, "counts", *counts)
""" % BLOCKS


def counts(run):
    words = run.proc.stdout.split()
    if run.proc.returncode != 0 or len(words) != 7 or words[0] != "patched":
        return None
    return int(words[1]), [int(w) for w in words[3:]]


def check(python, version):
    argv = [python, "-c", PROGRAM, args.fixture]
    runtime = args.preload.split(":")[:-1]     # the sanitizer build's runtime, bare too
    env = {"LD_PRELOAD": ":".join(runtime)} if runtime else {}
    bare = pt.run_traced(argv, args.preload, args.pylog, trace=bool(runtime), env=env)
    got = counts(bare)
    if not got or got[0] <= 0 or min(got[1]) < BLOCKS:
        fails.check(False, "%s: bare run: %r %s %s" % (version, got, bare.proc.returncode,
                                                       bare.proc.stderr[-300:]))
        return
    before = got[1]
    print("   bare: %d slots, %s" % (got[0], " ".join("%s %d" % c for c in zip(NAMES, before))))
    for env in ({}, {"TRACE_PY_ALLOCS": "1"}, {"TRACE_HOST_BUFFERS": "0"}):
        tag = "%s %s" % (version, env or "default")
        run = pt.run_traced(argv, args.preload, args.pylog, env=env)
        got = counts(run)
        if not fails.check(got is not None, "%s: run failed: %s %r %s" %
                           (tag, run.proc.returncode, run.proc.stdout, run.proc.stderr[-300:])):
            continue
        print("   %s: %s" % (tag, " ".join("%s %d" % c for c in zip(NAMES, got[1]))))
        for what, n, was in zip(NAMES, got[1], before):
            fails.check(abs(n - was) <= was // 20,
                        "%s: the rewritten %s slot counted %d calls, %d bare" % (tag, what, n, was))


pt.for_each_interpreter(args.python, check, fails)
