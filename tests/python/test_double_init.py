"""Seed 001, an object initialised twice: the fixture extension's tp_alloc +
PyObject_Init (and PyObject_InitVar) gives exactly one py_double_init per
construction, with both stacks, and the correct patterns give none, also one
PyObject_Init over memory that still holds the header of an object released
with its count at 1 (make_over_stale: a false positive numpy's test suite
met).  The same on a static interpreter (Debian's python3.11), where the
executable's own PyObject_Init wins the symbol lookup and the extension's GOT
slots are redirected instead (the INFO record says which).  The fixture is
built twice: calls through the PLT with lazy binding (JUMP_SLOT), and with
-fno-plt and -z now (GLOB_DAT slots in read-only RELRO pages).  With another
allocator preloaded before libtrace.so (jemalloc, tcmalloc, mimalloc: malloc
is then not ours, and jemalloc leaves a freed block's contents whole),
make_over_stale must still give no event: the Python wrappers clear fresh
blocks' first word themselves, with large host buffers recorded or not
(TRACE_HOST_BUFFERS=0).  A program linked without PIE that embeds a shared
libpython and takes the two functions' addresses (canonical PLT entries)
gets the check, interposed, and ends.  A program that embeds libpython with
its own allocator on the raw and object domains, one that keeps freed blocks
whole (embed_alloc.c), gets no report over a stale block in the object domain
(make_over_stale_obj) and still the real one.  Two copies of libtrace.so in
one LD_PRELOAD: the first records, the second only forwards (they called
each other for ever).  numpy, when installed, must give no event at all."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
FIXTURE = os.path.join(pt.HERE, "..", "fixtures", "double_init", "double_init.c")
N = 7

PROGRAM = """
import double_init as d
for i in range(%d):
    d.make_twice()
    d.make_var_twice()
    d.make_once()
    d.make_from_raw()
reused = sum(d.make_over_stale() for i in range(%d))
print("reused", reused)
""" % (N, N)


BUILDS = {"plt": [], "no-plt, now": ["-fno-plt", "-Wl,-z,relro,-z,now"]}


def build_fixture(python, into, flags):
    cfg = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                          "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                         capture_output=True, text=True, check=True).stdout.split()
    out = os.path.join(into, "double_init" + cfg[1])
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I" + cfg[0], FIXTURE, "-o", out] + flags, check=True)


def check(python, version, build):
    tag = "%s (%s, %s)" % (version, python, build)
    with tempfile.TemporaryDirectory() as tmp:
        build_fixture(python, tmp, BUILDS[build])
        run = pt.run_traced([python, "-c", PROGRAM], args.preload, args.pylog, env={"PYTHONPATH": tmp})
    if not fails.check(run.proc.returncode == 0, "%s: program failed: %s" % (tag, run.proc.stderr[-800:])):
        return
    events = run.of("py_double_init")
    state = run.info("py_double_init")
    how = "redirected" if pt.is_static(python) else "interposed"
    fails.check(state and state[0].startswith("on") and how in state[0],
                "%s: check not on, %s (INFO %s)" % (tag, how, state))
    types = sorted(e["type"] for e in events)
    want = sorted(["double_init.Thing"] * N + ["double_init.VarThing"] * N)
    fails.check(types == want, "%s: expected %d events per buggy constructor, got %s"
                % (tag, N, {t: types.count(t) for t in set(types)}))
    fails.check(all(e["native_depth"] > 0 and e["py"] and e["py"][0][0] == "<string>" for e in events),
                "%s: py_double_init without both stacks" % tag)
    # Keep the check honest: the stale block must have come back (ASan's
    # allocator quarantines freed blocks, so there it never does).
    fails.check("reused %d" % N in run.proc.stdout or "libasan" in args.preload,
                "%s: make_over_stale did not get the stale block back (%s): the check proves nothing"
                % (tag, run.proc.stdout.strip()[-40:]))


# Debian's packages (scripts/lib/setup.sh installs them).
ALLOCATORS = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
              "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"]
STALE = """
import double_init as d
print("reused", sum(d.make_over_stale() for i in range(200)))
"""


def check_foreign_malloc(python, version):
    if "libasan" in args.preload:   # the sanitizer's runtime must come first
        return
    with tempfile.TemporaryDirectory() as tmp:
        build_fixture(python, tmp, [])
        for lib in ALLOCATORS:
            if not os.path.exists(lib):
                print("%s: %s not installed, skipped" % (version, lib))
                continue
            # TRACE_HOST_BUFFERS=0: the raw domain is then wrapped for the
            # check alone (nothing else would clear its fresh blocks).
            for host_buffers in ("1", "0"):
                run = pt.run_traced([python, "-c", STALE], lib + " " + args.preload, args.pylog,
                                    env={"PYTHONPATH": tmp, "TRACE_HOST_BUFFERS": host_buffers})
                tag = "%s, %s before libtrace.so, TRACE_HOST_BUFFERS=%s" % (
                    version, os.path.basename(lib), host_buffers)
                if not fails.check(run.proc.returncode == 0, "%s: program failed: %s"
                                   % (tag, run.proc.stderr[-500:])):
                    continue
                events = run.of("py_double_init")
                if fails.check(not events, "%s: %d false double initialisations over stale blocks"
                               % (tag, len(events))):
                    print("  %s: %s, no report" % (tag, run.proc.stdout.strip()))


EMBED = os.path.join(pt.HERE, "..", "fixtures", "double_init", "embed_plt.c")


def check_canonical_plt(python, version):
    """A program linked without PIE that embeds a shared libpython and takes
    PyObject_Init's and PyObject_InitVar's addresses (canonical PLT entries):
    the check is on, interposed, reports each double initialisation once,
    and the program ends (it used to loop for ever in the first one)."""
    embed = pt.embedding(python)
    if not embed:
        print("%s: no shared libpython, the canonical PLT check skipped" % version)
        return
    home = embed.home
    tag = "%s, non-PIE program embedding libpython" % version
    with tempfile.TemporaryDirectory() as tmp:
        build_fixture(python, tmp, [])
        exe = os.path.join(tmp, "embed_plt")
        failed = embed.build(EMBED, exe, ["-no-pie", "-fno-pie", "-fno-pic"])
        if not fails.check(not failed, "%s: %s" % (tag, failed)):
            return
        syms = subprocess.run(["readelf", "--dyn-syms", "-W", exe], capture_output=True, text=True).stdout
        canonical = [l for l in syms.splitlines() if "PyObject_Init" in l and " UND " in l
                     and not l.split()[1].strip("0") == ""]
        if not fails.check(len(canonical) == 2, "%s: no canonical PLT entries were made (%s): the check "
                           "proves nothing" % (tag, canonical)):
            return
        env = {"PYTHONPATH": tmp, "PYTHONHOME": home}
        # First a bounded run whose log is not read: the loop this guards
        # against writes events without end, and a minute of them takes
        # long to read.
        try:
            subprocess.run([exe, PROGRAM], env=dict(os.environ, LD_PRELOAD=args.preload, TRACE_QUIET="1",
                                                    TRACE_OUTPUT=os.path.join(tmp, "bounded-%p.tlog"), **env),
                           capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            fails.check(False, "%s: still running after 30 s (the PLT entry loop)" % tag)
            return
        run = pt.run_traced([exe, PROGRAM], args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0, "%s: program failed (%d): %s"
                       % (tag, run.proc.returncode, run.proc.stderr[-800:])):
        return
    state = run.info("py_double_init")
    fails.check(state and state[0].startswith("on") and "interposed" in state[0],
                "%s: check not on, interposed (INFO %s)" % (tag, state))
    types = sorted(e["type"] for e in run.of("py_double_init"))
    want = sorted(["double_init.Thing"] * N + ["double_init.VarThing"] * N)
    if fails.check(types == want, "%s: expected %d events per buggy constructor, got %s"
                   % (tag, N, {t: types.count(t) for t in set(types)})):
        print("  %s: %d and %d events, as made" % (tag, N, N))


EMBED_ALLOC = os.path.join(pt.HERE, "..", "fixtures", "double_init", "embed_alloc.c")
ARENA_PROGRAM = """
import double_init as d
d.make_twice()
print("reused", sum(d.make_over_stale_obj() for i in range(200)))
"""


def check_embedder_allocator(python, version):
    """An embedding program's own allocator on the raw and object domains
    (embed_alloc.c), which keeps freed blocks whole: a PyObject_Init over a
    block that held an object released with its count at 1 is no report
    (the wrappers clear fresh blocks' first word: the program's allocator
    does not come through our malloc), and the real bug still is."""
    embed = pt.embedding(python)
    if not embed:
        print("%s: no shared libpython, the embedder's allocator check skipped" % version)
        return
    tag = "%s, embedder's own allocator" % version
    with tempfile.TemporaryDirectory() as tmp:
        build_fixture(python, tmp, [])
        exe = os.path.join(tmp, "embed_alloc")
        failed = embed.build(EMBED_ALLOC, exe)
        if not fails.check(not failed, "%s: %s" % (tag, failed)):
            return
        run = pt.run_traced([exe, ARENA_PROGRAM], args.preload, args.pylog,
                            env={"PYTHONPATH": tmp, "PYTHONHOME": embed.home})
    if not fails.check(run.proc.returncode == 0, "%s: program failed (%d): %s"
                       % (tag, run.proc.returncode, run.proc.stderr[-800:])):
        return
    fails.check("reused 200" in run.proc.stdout or "libasan" in args.preload,
                "%s: the stale block did not come back (%s): the check proves nothing"
                % (tag, run.proc.stdout.strip()[-40:]))
    types = [e["type"] for e in run.of("py_double_init")]
    if fails.check(types == ["double_init.Thing"], "%s: expected the one real double initialisation, got "
                   "%d events (%d false, over stale blocks)" % (tag, len(types), max(0, len(types) - 1))):
        print("  %s: no report over 200 stale blocks, the real one reported" % tag)


def check_two_copies(python, version):
    """Two copies of libtrace.so in one LD_PRELOAD (a pip-installed one and
    a build tree's): the first records, the second only forwards.  Each
    copy's PyObject_Init took the other's for the real one, and the first
    call spun for ever (numpy's import at 100 % CPU)."""
    if "libasan" in args.preload:   # the sanitizer's runtime must come first, once
        return
    tag = "%s, two copies of libtrace.so preloaded" % version
    with tempfile.TemporaryDirectory() as tmp:
        build_fixture(python, tmp, BUILDS["no-plt, now"])   # slots bound at load, as numpy's are
        copy = os.path.join(tmp, "copy", "libtrace.so")
        os.makedirs(os.path.dirname(copy))
        shutil.copy(args.preload, copy)
        has_numpy = subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode == 0
        program = PROGRAM + ("import numpy\nprint('numpy', int(numpy.arange(10).sum()))\n" if has_numpy else "")
        env = {"PYTHONPATH": tmp, "LD_PRELOAD": args.preload + ":" + copy}
        # First a bounded run whose log is not read: the loop this guards
        # against writes events without end.
        try:
            subprocess.run([python, "-c", program], capture_output=True, timeout=60,
                           env=dict(os.environ, TRACE_QUIET="1", TRACE_OUTPUT=os.path.join(tmp, "bounded-%p.tlog"),
                                    **env))
        except subprocess.TimeoutExpired:
            fails.check(False, "%s: still running after 60 s (each copy calling the other)" % tag)
            return
        run = pt.run_traced([python, "-c", program], args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0 and (not has_numpy or "numpy 45" in run.proc.stdout),
                       "%s: program failed or hung (%d): %s" % (tag, run.proc.returncode, run.proc.stderr[-500:])):
        return
    types = sorted(e["type"] for e in run.of("py_double_init") if e["type"].startswith("double_init."))
    fails.check(types == sorted(["double_init.Thing"] * N + ["double_init.VarThing"] * N),
                "%s: expected %d events per buggy constructor, got %d events" % (tag, N, len(types)))


def check_numpy(python, version):
    has = subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode == 0
    if not has:
        print("%s: numpy not installed, its check skipped" % version)
        return
    run = pt.run_traced([python, "-c", "import numpy as np; np.arange(10).sum(); "
                         "[np.dtype('f8') for _ in range(100)]"], args.preload, args.pylog)
    fails.check(run.proc.returncode == 0, "%s numpy: program failed" % version)
    fails.check(not run.of("py_double_init"), "%s numpy: %d py_double_init events"
                % (version, len(run.of("py_double_init"))))


interpreters = pt.find_interpreters(args.python)
if not interpreters:
    raise SystemExit(pt.SKIP)
for python, version in interpreters:
    print("==", version, python)
    for build in BUILDS:
        check(python, version, build)
    check_foreign_malloc(python, version)
    check_canonical_plt(python, version)
    check_embedder_allocator(python, version)
    check_two_copies(python, version)
    check_numpy(python, version)
fails.finish()
