"""Large host blocks from every allocator (issue 12, point 1 and 2).

- host_allocs (C), also built without PIE holding malloc's address: malloc, calloc, realloc (grow, move, shrink), reallocarray,
  posix_memalign, aligned_alloc, memalign, valloc, pvalloc, anonymous mmap,
  munmap of a middle page, mremap; exactly the events it expects, in order,
  and none for small blocks, PROT_NONE reservations or file mappings.
- Plain C programs record large blocks only with TRACE_HOST_BUFFERS=1: by
  default a process that is neither Python nor CUDA leaves no log.
- own_malloc (C): a program that defines malloc itself; the log says the
  malloc family was not watched (INFO not_watched) instead of showing nothing.
- Other allocators (jemalloc, tcmalloc, mimalloc where installed): preloaded
  after libtrace.so, host_allocs' events are exactly those under glibc's and
  none of the allocator's own arena mappings appear; preloaded before it, the
  program runs, its log (if any) says the malloc family was not watched, and
  no malloc-family block is recorded, not even from an entry point that
  allocator lacks (tcmalloc's reallocarray: its free would go unseen).
  Python under each of them, both orders: Python's raw domain (which calls
  our malloc family directly when malloc is ours, python_alloc.c) serves
  millions of medium blocks through malloc, realloc and calloc, with
  tracemalloc started and stopped on top of it; the program ends well and
  each large bytearray is recorded once, as RAW.
- fork_blocks (C): a block allocated before fork and freed in the child is
  not in the child's log; the child's own block is.
- Python: a bytearray (PyMem RAW on top of malloc) is recorded once, as RAW;
  mmap.mmap(-1, n) as an mmap block with its Python line; pymalloc's arenas
  are not blocks; NumPy arrays kept by cycles (seed 002) are freed inside
  collections and carry the user's line in their Python stack, on every
  interpreter with numpy; the same with PyTorch CPU tensors where torch is
  installed (skipped with a message otherwise)."""
import json
import os
import subprocess
import tempfile

import pytrace as pt


def extra(p):
    p.add_argument("--host-allocs", required=True)
    p.add_argument("--host-allocs-nopie", required=True)
    p.add_argument("--own-malloc", required=True)
    p.add_argument("--fork-blocks", required=True)
    p.add_argument("--replay", required=True)


args = pt.parse_args(extra)
fails = pt.Failures()
MALLOC, MMAP, RAW = 4, 5, 1
# Under the sanitizer build the ASan runtime is preloaded first and owns malloc.
SANITIZED = "libasan" in args.preload


def host_events(run):
    return [e for e in run.events if e["kind"] in ("host_alloc", "host_free")]


# Plain C programs (no Python, no CUDA) record large blocks only when
# TRACE_HOST_BUFFERS=1 says so: by default a helper process run under the
# preload leaves no log.
FORCE = {"TRACE_HOST_BUFFERS": "1"}


def expected_of(stdout):
    """The events host_allocs says it made, in order."""
    expected = []
    for line in stdout.split("\n"):
        w = line.split()
        if not w or w[0] == "none":
            continue
        if w[0] == "free":
            expected.append(("host_free", w[1], int(w[2]), None))
        else:
            expected.append(("host_alloc", w[1], int(w[2]), int(w[3])))
    return expected


def got_of(run):
    return [(e["kind"], e["api"], e["ptr"], e["size"] if e["kind"] == "host_alloc" else None)
            for e in host_events(run)]


def check_entry_points(program):
    run = pt.run_traced([program], args.preload, args.pylog)
    fails.check(run.proc.returncode == 0 and not run.events and not SANITIZED or SANITIZED,
                "host_allocs without TRACE_HOST_BUFFERS=1 (not a Python or CUDA program) recorded %d "
                "events" % len(run.events))
    run = pt.run_traced([program], args.preload, args.pylog, env=FORCE)
    name = os.path.basename(program)
    if not fails.check(run.proc.returncode == 0, "%s failed: %s" % (name, run.proc.stderr[-500:])):
        return
    if SANITIZED:
        # The sanitizer build hooks neither malloc nor mmap (the sanitizer
        # owns them): a C program records nothing, so has no log.  The
        # not_watched records are checked on the Python runs below.
        return
    expected = expected_of(run.proc.stdout)
    # Exactly these, nothing else: the "none" blocks (small, PROT_NONE, file)
    # and the C library's own buffers must not appear.
    got = got_of(run)
    fails.check(got == expected, "%s: events differ\n  expected %s\n  got      %s"
                % (name, expected, got))
    fails.check(all(e["native_depth"] > 0 for e in host_events(run)),
                "%s: an event without a native stack" % name)
    fails.check(all(e["domain"] in (MALLOC, MMAP) for e in host_events(run)),
                "%s: unexpected domains %s" % (name, {e["domain"] for e in host_events(run)}))
    fails.check(not run.info("not_watched"), "%s: not_watched %s" % (name, run.info("not_watched")))
    # A heap an allocator maps for itself (MAP_NORESERVE, as jemalloc and
    # mimalloc inside pyarrow do): no event, and the log says that what is
    # handed out of it is not watched, once.
    run = pt.run_traced([program, "noreserve"], args.preload, args.pylog, env=FORCE)
    if fails.check(run.proc.returncode == 0, "%s noreserve failed: %s" % (name, run.proc.stderr[-500:])):
        fails.check(got_of(run) == expected_of(run.proc.stdout), "%s noreserve: events differ\n  expected %s\n"
                    "  got      %s" % (name, expected_of(run.proc.stdout), got_of(run)))
        gaps = run.info("not_watched")
        fails.check(len(gaps) == 1 and gaps[0].startswith("memory in mappings made with MAP_NORESERVE: ")
                    and "ARROW_DEFAULT_MEMORY_POOL=system" in gaps[0],
                    "%s noreserve: not_watched %s, expected one for MAP_NORESERVE" % (name, gaps))
    # Off: no blocks, and the log says what was not watched.
    run = pt.run_traced([program], args.preload, args.pylog,
                        env={"TRACE_HOST_BUFFERS": "0", "TRACE_PY_ALLOCS": "0"})
    fails.check(not host_events(run), "TRACE_HOST_BUFFERS=0 still records blocks")


# Other allocators, preloaded after us (our malloc forwards to theirs) or
# before us (theirs wins the symbol; ours never runs).  Debian's packages;
# scripts/test installs them.
ALLOCATORS = [os.path.join(d, name) for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                              "/usr/lib64", "/usr/lib")
              for name in ("libjemalloc.so.2", "libtcmalloc_minimal.so.4", "libmimalloc.so.2")]


def check_cut_report(program):
    """What is left of a mapping after a cut (munmap of a part, MAP_FIXED
    over a part) is the mapping's, not a new block of the cutting call's:
    one site allocated 64 MiB.  Before map_rest the report had 152 MiB
    allocated at three sites (56 MiB at the munmap, 32 at the MAP_FIXED)."""
    if SANITIZED:
        return
    run, log = pt.run_traced_keep([program, "cut"], args.preload, args.pylog, env=FORCE)
    try:
        if not fails.check(run.proc.returncode == 0, "host_allocs cut failed: %s" % run.proc.stderr[-500:]):
            return
        rests = [e for e in host_events(run) if e["kind"] == "host_alloc" and e["api"] == "map_rest"]
        fails.check(len(rests) == 4, "host_allocs cut: %d map_rest pieces, expected 4 (two per cut)" % len(rests))
        p = subprocess.run([args.replay, "report", "--json", log], capture_output=True, text=True)
        if not fails.check(p.returncode == 0, "report on the cut log: exit %d %s" % (p.returncode, p.stderr[-500:])):
            return
        rep = json.loads(p.stdout)
        sites = [s for s in rep["sites"] if s["host_bytes"]]
        got = sorted((s["host_bytes"], s["host_count"], s["native"] or "") for s in sites)
        fails.check(len(got) == 1 and got[0][:2] == (64 << 20, 1) and "cut_map_whole" in got[0][2],
                    "host_allocs cut: sites allocating host memory %s, expected 64 MiB once at cut_map_whole"
                    % got)
        fails.check(rep["memory"]["peak_host"]["bytes"] == 64 << 20,
                    "host_allocs cut: peak %s, expected 64 MiB" % rep["memory"]["peak_host"])
    finally:
        pt.discard(log)


def check_other_allocators():
    if SANITIZED:
        return
    found = [a for a in ALLOCATORS if os.path.exists(a)]
    if not found:
        print("   no jemalloc, tcmalloc or mimalloc installed: other allocators skipped "
              "(scripts/test installs them)")
    for lib in found:
        name = os.path.basename(lib)
        # jemalloc has no pvalloc: glibc's would serve it, and jemalloc's free
        # then crash on its block, traced or not.
        argv = [args.host_allocs] + (["no-pvalloc"] if "jemalloc" in name else [])
        # After us: every large block exactly as under glibc, and none of the
        # mappings the allocator makes for its own arenas.
        run = pt.run_traced(argv, args.preload + ":" + lib, args.pylog, env=FORCE)
        if fails.check(run.proc.returncode == 0, "host_allocs under %s failed: %s"
                       % (name, run.proc.stderr[-500:])):
            expected, got = expected_of(run.proc.stdout), got_of(run)
            fails.check(got == expected, "host_allocs with %s after libtrace: events differ\n"
                        "  expected %s\n  got      %s" % (name, expected, got))
            # The allocator's own arenas (jemalloc's and mimalloc's are
            # MAP_NORESERVE) serve our malloc calls: nothing is unwatched.
            fails.check(not run.info("not_watched"), "host_allocs with %s after libtrace: not_watched %s"
                        % (name, run.info("not_watched")))
        # Before us: the program runs, and its log (if it recorded anything:
        # tcmalloc owns mmap too, and a process that records nothing leaves
        # no log) says malloc was not watched.
        run = pt.run_traced(argv, lib + ":" + args.preload, args.pylog, env=FORCE)
        fails.check(run.proc.returncode == 0, "host_allocs with %s before libtrace failed: %s"
                    % (name, run.proc.stderr[-500:]))
        fails.check(not run.events or
                    any(g.startswith("large blocks from malloc") for g in run.info("not_watched")),
                    "%s before libtrace: no not_watched record for the malloc family: %s"
                    % (name, run.info("not_watched")))
        # Not even from the entry points that allocator lacks (tcmalloc has
        # no reallocarray): their blocks go back through a free we never see.
        fails.check(not [e for e in run.of("host_alloc") if e["domain"] == MALLOC],
                    "%s before libtrace: a malloc-family block was recorded: %s"
                    % (name, [e for e in run.of("host_alloc") if e["domain"] == MALLOC]))
        print("   %s: after libtrace %d events as expected; before it, %d events, not watched: %s"
              % (name, len(got), len(run.events), bool(run.info("not_watched"))))


# Medium blocks (over pymalloc's 512 bytes: Python's raw domain) by the
# hundred thousand through malloc, realloc (str growth) and calloc
# (bytearray(n) of zeros), with tracemalloc's hooks put on top of ours and
# taken off again, and three large bytearrays.
PY_RAW = r'''
import tracemalloc
keep = []
for i in range(3):
    keep.append(bytearray(5 << 20))
for round in range(2):
    if round:
        tracemalloc.start(3)
    words = ["w%d" % i * 90 for i in range(40000)]
    text = ""
    for w in words[:4000]:
        text += w
    zeros = [bytearray(700 + i % 300) for i in range(20000)]
    if round:
        tracemalloc.stop()
    del words, text, zeros
del keep
print("raw ok")
'''


def check_python_other_allocators(python, tag):
    if SANITIZED:
        return
    found = [a for a in ALLOCATORS if os.path.exists(a)]
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "raw.py")
        with open(script, "w") as f:
            f.write(PY_RAW)
        for lib in found:
            name = os.path.basename(lib)
            for order, preload in (("after", args.preload + ":" + lib), ("before", lib + ":" + args.preload)):
                run = pt.run_traced([python, script], preload, args.pylog)
                if not fails.check(run.proc.returncode == 0 and "raw ok" in run.proc.stdout,
                                   "%s with %s %s libtrace failed (%d): %s"
                                   % (tag, name, order, run.proc.returncode, run.proc.stderr[-500:])):
                    continue
                arrays = [e for e in run.of("host_alloc") if 5 << 20 <= e["size"] <= (5 << 20) + 64]
                fails.check(len(arrays) == 3 and all(e["domain"] == RAW for e in arrays),
                            "%s with %s %s libtrace: bytearrays not recorded once each as RAW: %s"
                            % (tag, name, order, arrays))
                print("   %s %s libtrace: ends well, %d large blocks" % (name, order, len(arrays)))


def check_own_malloc():
    if SANITIZED:
        return
    run = pt.run_traced([args.own_malloc], args.preload, args.pylog, env=FORCE)
    fails.check(run.proc.returncode == 0, "own_malloc failed: %s" % run.proc.stderr[-500:])
    gaps = run.info("not_watched")
    fails.check(any(g.startswith("large blocks from malloc") for g in gaps),
                "own_malloc: no not_watched record for the malloc family: %s" % gaps)
    fails.check(not [e for e in run.of("host_alloc") if e["size"] == 4 << 20],
                "own_malloc: its malloc was seen")


def read(path):
    events, infos, _ = pt.read_log(args.pylog, path)
    return events


def check_fork():
    if SANITIZED:
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(tmp, "t-%p.tlog"))
        for k in list(env):
            if k.startswith("TRACE_") and k not in ("TRACE_OUTPUT", "TRACE_TEST_PYTHONS"):
                del env[k]
        env.update(FORCE)
        p = subprocess.run([args.fork_blocks], env=env, capture_output=True, text=True)
        if not fails.check(p.returncode == 0, "fork_blocks failed: %s" % p.stderr[-500:]):
            return
        block, child = (int(x) for x in p.stdout.split())
        logs = {int(f[2:-5]): read(os.path.join(tmp, f)) for f in os.listdir(tmp)}
        child_events = logs.get(child, [])
        parent_events = [ev for pid, ev in logs.items() if pid != child]
        fails.check(not [e for e in child_events if e["kind"] == "host_free" and e["ptr"] == block],
                    "fork: the child's log shows the release of the parent's block")
        fails.check(any(e["kind"] == "host_alloc" and e["size"] == 3 << 20 for e in child_events),
                    "fork: the child's own block is missing from its log")
        fails.check(len(parent_events) == 1 and
                    [e["kind"] for e in parent_events[0] if e.get("ptr") == block] ==
                    ["host_alloc", "host_free"], "fork: the parent's log lacks its block's life")


PY_CHECKS = r'''
import mmap, sys
m = mmap.mmap(-1, 3 << 20)                                  # LINE:mmap
m[0:1] = b"x"
m.close()
b = bytearray(5 << 20)                                      # LINE:bytearray
del b
x = [object() for i in range(400000)]                        # arenas
del x
'''


# Shared memory between processes (PyTorch's DataLoader batches travel this
# way) is a file's pages, not recorded: the log says so, once.  A file read
# through a mapping, or mapped copy-on-write, is no buffer: nothing said.
SHARED = """\
import mmap, sys, tempfile
from multiprocessing import shared_memory
if sys.argv[1] == "shared":
    s = shared_memory.SharedMemory(create=True, size=4 << 20)
    s.buf[0] = 1
    s.close()
    s.unlink()
else:
    with tempfile.TemporaryFile() as f:
        f.write(b"x" * (4 << 20))
        f.flush()
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ).close()
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY).close()
"""


def check_shared_mappings(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "shared.py")
        with open(script, "w") as f:
            f.write(SHARED)
        for case, said in (("shared", True), ("file", False)):
            run = pt.run_traced([python, script, case], args.preload, args.pylog)
            gaps = [g for g in run.info("not_watched") if g.startswith("memory in writable shared mappings")]
            fails.check(run.proc.returncode == 0 and len(gaps) == (1 if said else 0),
                        "%s: %s mapping: exit %d, not_watched %s (expected %s)"
                        % (tag, case, run.proc.returncode, run.info("not_watched"), "one" if said else "none"))


def check_python(python, version):
    tag = "%s (%s)" % (version, python)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "blocks.py")
        with open(script, "w") as f:
            f.write(PY_CHECKS)
        run = pt.run_traced([python, script], args.preload, args.pylog,
                            env={"TRACE_HOST_THRESHOLD": "200000"})
        if not fails.check(run.proc.returncode == 0, "%s: failed: %s" % (tag, run.proc.stderr[-500:])):
            return
        allocs = run.of("host_alloc")
        if SANITIZED:
            # ASan's runtime owns malloc and mmap: only Python's allocators
            # are seen, and the log says what is not.
            gaps = run.info("not_watched")
            fails.check(any("malloc" in g for g in gaps) and any("mmap" in g for g in gaps),
                        "%s: sanitized run without not_watched records: %s" % (tag, gaps))
            arrays = [e for e in allocs if 5 << 20 <= e["size"] <= (5 << 20) + 64]
            fails.check(len(arrays) == 1 and arrays[0]["domain"] == RAW,
                        "%s: bytearray not recorded once as PyMem RAW: %s" % (tag, arrays))
            return
        maps = [e for e in allocs if e["size"] == 3 << 20]
        fails.check(len(maps) == 1 and maps[0]["domain"] == MMAP and maps[0]["api"] == "mmap"
                    and pt.innermost(maps[0]) and pt.innermost(maps[0])[1] == pt.line_of(script, "mmap"),
                    "%s: mmap.mmap(-1) not one mmap block at its line: %s" % (tag, maps))
        arrays = [e for e in allocs if 5 << 20 <= e["size"] <= (5 << 20) + 64]
        fails.check(len(arrays) == 1 and arrays[0]["domain"] == RAW,
                    "%s: bytearray not recorded once as PyMem RAW: %s" % (tag, arrays))
        arenas = [e for e in allocs if e["domain"] == MMAP and e["size"] in (256 << 10, 1 << 20)]
        fails.check(not arenas, "%s: pymalloc arenas recorded as blocks: %d" % (tag, len(arenas)))
    check_python_other_allocators(python, tag)
    check_shared_mappings(python, tag)
    check_numpy(python, tag)
    check_torch(python, tag)


def gc_freed(run, allocs):
    by_seq = run.by_seq()
    frees = {}
    for e in run.of("host_free"):
        frees.setdefault(e["ptr"], []).append(e)
    ends = []
    for a in allocs:
        later = [f for f in frees.get(a["ptr"], []) if f["seq"] > a["seq"]]
        ends.append(min(later, key=lambda f: f["seq"]) if later else None)
    under = [f for f in ends if f and by_seq.get(f["parent"], {}).get("kind") == "gc_start"]
    return ends, under


def check_cycles(python, tag, script, size, count, what):
    line = pt.line_of(script, "alloc")
    for mode in ("cycle", "nocycle"):
        run = pt.run_traced([python, script, mode], args.preload, args.pylog)
        t = "%s %s %s" % (tag, what, mode)
        if not fails.check(run.proc.returncode == 0, "%s: failed: %s" % (t, run.proc.stderr[-800:])):
            return
        allocs = [e for e in run.of("host_alloc") if e["size"] == size]
        if not fails.check(len(allocs) == count, "%s: %d blocks of %d bytes, expected %d"
                           % (t, len(allocs), size, count)):
            continue
        user = [a for a in allocs if any(f[0] == script and f[1] == line for f in a["py"])]
        fails.check(len(user) == count, "%s: %d of %d blocks without %s:%d in their Python stack"
                    % (t, count - len(user), count, os.path.basename(script), line))
        ends, under = gc_freed(run, allocs)
        fails.check(all(ends), "%s: %d blocks never freed" % (t, sum(1 for e in ends if not e)))
        if mode == "cycle":
            fails.check(len(under) >= count - 2, "%s: only %d of %d blocks freed inside a collection"
                        % (t, len(under), count))
        else:
            fails.check(not under, "%s: %d blocks freed inside a collection without cycles"
                        % (t, len(under)))


def has_module(python, name):
    return subprocess.run([python, "-c", "import " + name], capture_output=True).returncode == 0


def check_numpy(python, tag):
    if not has_module(python, "numpy"):
        print("   numpy not installed for %s: seed 002 with NumPy skipped (scripts/test installs it)" % tag)
        return
    check_cycles(python, tag, pt.workload("np_cycles.py"), 2 << 20, 30, "numpy")


def check_torch(python, tag):
    if not has_module(python, "torch"):
        print("   torch not installed for %s: seed 002 with PyTorch CPU tensors skipped" % tag)
        return
    script = pt.workload("torch_cycles.py")
    check_cycles(python, tag, script, 4 << 20, 20, "torch")


check_entry_points(args.host_allocs)
check_cut_report(args.host_allocs)
# Without PIE, holding malloc's address: dlsym gives the program's PLT stub,
# whose calls still reach our hooks (a false not_watched before).
check_entry_points(args.host_allocs_nopie)
check_own_malloc()
check_other_allocators()
check_fork()
pt.for_each_interpreter(args.python, check_python, fails)
