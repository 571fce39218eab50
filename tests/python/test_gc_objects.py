"""Objects collected by the GC, by allocation site (issue 15, goal 1): with
TRACE_PY_ALLOCS=1 every allocation that may be a GC object is recorded, and
so is every such object the collector frees (py_free, nested under its
gc_start).  A program
makes reference cycles at two known sites, 300 one-object cycles at one line
and 200 two-object cycles whose objects come from two lines, and collects
them: the report (text, JSON and HTML) must charge exactly 300, 200 and 200
collected objects to those three lines, most first.  Cycles are of __slots__
instances: no free list keeps one back, no dict comes with them.  Automatic
collections are off until the one the program asks for, so the counts are
exact; the program's objects freed outside collections (the plain garbage
below) must not be counted.  Blocks that are no objects (dict key tables,
bytearray buffers) and objects without GC are left out, at their
allocation and at their free.  A log kept within a byte budget, whose
segments define the code objects again, names each line as one site."""
import json
import os
import re
import subprocess
import tempfile

import pytrace as pt


def extra(p):
    p.add_argument("--replay", required=True)


args = pt.parse_args(extra)
fails = pt.Failures()

PROGRAM = """\
import gc
gc.disable()
class A:
    __slots__ = ("other",)
class B:
    __slots__ = ("x",)
def site_a(n):
    for _ in range(n):
        a = A()  # LINE:a
        a.other = a
def site_b(n):
    for _ in range(n):
        p = B()  # LINE:b1
        q = B()  # LINE:b2
        p.x = q
        q.x = p
def plain(n):
    for _ in range(n):
        z = A()  # LINE:plain
        z.other = None
site_a(300)
site_b(200)
plain(500)
gc.collect()
"""


# Address reuse: GC objects of eight sizes allocated at line x and freed by
# their counts (not recorded), then strs of many sizes, which CPython's
# allocator places where they were, each held by a one-object cycle made at
# line c.  The collection frees the cycles and their strs.  The strs'
# allocations are left out by default (python_alloc_sites.c), and so must
# their frees be: matched by address, they would be charged to line x.
REUSE = """\
import gc
gc.disable()
classes = [type("X%d" % k, (), {"__slots__": tuple("s%d" % j for j in range(k))}) for k in range(1, 9)]
def churn():
    xs = [c() for c in classes for _ in range(300)]  # LINE:x
    del xs
class C:
    __slots__ = ("other", "text")
def cycles(n):
    for i in range(n):
        c = C()  # LINE:c
        c.other = c
        c.text = ("%d" % i) * (i % 60 + 1)
        del c
churn()
cycles(1000)
gc.collect()
"""


# The same with dict key tables, which are no objects: GC objects of forty
# sizes allocated at line x and freed by their counts, then cycles made at
# line c each holding a dict of 1 to 12 keys made at line d, whose key
# tables CPython's allocator places where the GC objects were.  From the
# 49th on, the tables' allocations are left out (python_alloc_sites.c), and
# so must their frees in the collection be (block_marks.h): a table's block
# cannot say what it is at its free, and matched by address its free would
# be charged to line x.
REUSE_DICTS = """\
import gc
gc.disable()
classes = [type("X%d" % k, (), {"__slots__": tuple("s%d" % j for j in range(k))}) for k in range(1, 41)]
def churn():
    xs = [c() for c in classes for _ in range(300)]  # LINE:x
    del xs
class C:
    __slots__ = ("other", "d")
def cycles(n):
    for i in range(n):
        c = C()  # LINE:c
        c.other = c
        c.d = {"k%d" % j: j for j in range(i % 12 + 1)}  # LINE:d
        del c
churn()
cycles(1000)
gc.collect()
"""


# The same with objects of types without GC, which CPython makes with
# _PyObject_New: range objects and their iterators, whose free says what
# they are (their type word), and hashlib's HASH objects (32 bytes, as are
# the smallest GC objects of line x), whose free does not: their blocks are
# marked, as key tables' are.  Their allocations at lines r, i and h must be
# in the report with TRACE_PY_ALLOC_ALL=1 and not without it.
REUSE_NONGC = """\
import gc, hashlib
gc.disable()
classes = [type("X%d" % k, (), {"__slots__": tuple("s%d" % j for j in range(k))}) for k in range(0, 9)]
def churn():
    xs = [c() for c in classes for _ in range(300)]  # LINE:x
    del xs
class C:
    __slots__ = ("other", "r", "i", "h")
def cycles(n):
    for i in range(n):
        c = C()  # LINE:c
        c.other = c
        c.r = range(i)  # LINE:r
        c.i = iter(c.r)  # LINE:i
        c.h = hashlib.md5()  # LINE:h
        del c
churn()
cycles(1000)
gc.collect()
"""


# Buffers, not objects: each cycle holds a bytearray made at line b, whose
# buffer (200 bytes and more; the bytearray object itself is smaller) comes
# from PyObject_Malloc and PyObject_Realloc up to 3.12.  With
# TRACE_PY_ALLOC_ALL=1 the buffers are recorded; without it none is: no
# allocation of 200 bytes or more at line b, and none of them among the
# objects the collection freed.
BUFFERS = """\
import gc
gc.disable()
class C:
    __slots__ = ("other", "buf")
def cycles(n):
    for i in range(n):
        c = C()
        c.other = c
        c.buf = bytearray(200 + i % 3000)  # LINE:b
        c.buf += b"x" * (i % 50)
        del c
cycles(1000)
gc.collect()
"""


# Kept within a byte budget (TRACE_MAX_BYTES): the log's segments each
# define the program's code objects again, under new ids.  PROGRAM with
# 200,000 cycles made at line a, spread over several segments: still one
# site.  The log takes most of the 64K budget but not all, so no segment is
# usually deleted (one was on a slow machine with 100,000 cycles in format
# 2.6, which took 60K here); should one be, line a is still one site, of
# fewer objects.  Format 2.7's py_allocs records made 80,000 cycles' log
# 26K (36K to 41K before): 3 files, 2 on a slow run under ASan (3.12).
# 120,000 made 33K to 40K, 3 to 5 files, until a faster recorder (session
# 53) let frames grow between the flusher's turns on a loaded machine:
# they compress better, and one run made 2 files.  200,000 make 49K to
# 56K, 5 or 6 files, idle or beside three busy loops (3.11).
SEGMENT_CYCLES = 200000
SEGMENTS = PROGRAM.replace("site_a(300)", "site_a(%d)" % SEGMENT_CYCLES)


def line(marker, program=None):
    for number, text in enumerate((program or PROGRAM).splitlines(), 1):
        if text.endswith("# LINE:" + marker):
            return number
    raise AssertionError(marker)


def program_file(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# Every object allocation recorded (the reference), then with the filter.
ALL_THEN_FILTERED = ({"TRACE_PY_ALLOCS": "1", "TRACE_PY_ALLOC_ALL": "1"}, {"TRACE_PY_ALLOCS": "1"})


def report(log, *more):
    p = subprocess.run([args.replay, "report", log] + list(more), capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise AssertionError("trace-replay report %s: %d %s" % (" ".join(more), p.returncode, p.stderr[-500:]))
    return p.stdout


def check(python, version):
    tag = "%s (%s)" % (version, python)
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "cycles.py", PROGRAM)
        run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            if not fails.check(run.proc.returncode == 0, "%s: program failed: %s" % (tag, run.proc.stderr[-500:])):
                return
            # The log: py_free events, each inside a collection.
            by_seq = run.by_seq()
            frees = run.of("py_free")
            outside = [e for e in frees if by_seq.get(e["parent"], {}).get("kind") != "gc_start"]
            fails.check(len(frees) >= 700 and not outside,
                        "%s: %d py_free events, %d not nested under a gc_start" % (tag, len(frees), len(outside)))
            # Format 2.3: the recorder writes them as py_frees records (kind
            # 49), many frees to a record, and none as a record of its own.
            kinds = pt.record_kinds(log)
            if kinds is None:
                print("%s: no zstd program: the log's records not counted" % tag)
            else:
                fails.check(kinds.get(49, 0) and kinds.get(48, 0) == 0 and len(frees) >= 8 * kinds[49],
                            "%s: %d py_free events in %d py_frees and %d py_free records" %
                            (tag, len(frees), kinds.get(49, 0), kinds.get(48, 0)))
            # Other lines of the program may feed the collector too (a class
            # statement leaves a cycle or two behind): only the marked ones count.
            marked = [line(m) for m in ("a", "b1", "b2", "plain")]
            want = [("cycles.py:%d" % line("a"), 300), ("cycles.py:%d" % line("b1"), 200),
                    ("cycles.py:%d" % line("b2"), 200)]
            # JSON: gc_object_sites in order, with counts and bytes.
            data = json.loads(report(log, "--json"))
            sites = {s["id"]: s for s in data["sites"]}
            ours = []
            for i in data["gc_object_sites"]:
                s = sites[i]
                m = re.match(r"(\S+):(\d+) ", s["python"] or "")   # "file:line (function) <- ..."
                if m and m.group(1) == script and int(m.group(2)) in marked:
                    ours.append(("cycles.py:" + m.group(2), s["gc_object_count"], s["gc_object_bytes"],
                                 s["object_count"]))
            got = [(where, count) for where, count, _, _ in ours]
            fails.check(got == want, "%s: JSON gc_object_sites of the program: %s, expected %s" % (tag, ours, want))
            for where, count, size, allocated in ours:
                fails.check(size >= 16 * count and size % count == 0,
                            "%s: %s: %d objects of %d bytes in all" % (tag, where, count, size))
                fails.check(allocated == count, "%s: %s: %d allocated, %d collected" % (tag, where, allocated, count))
            oc = data["gc"]["objects_collected"]
            fails.check(oc and oc["recorded"] and oc["count"] >= 700,
                        "%s: gc.objects_collected: %s" % (tag, oc))
            # Text: the section, with the three lines in that order.
            text = report(log)
            at = text.find("Objects collected by the GC, by allocation site")
            fails.check(at >= 0, "%s: text report lacks the section:\n%s" % (tag, text[-3000:]))
            rows = re.findall(r"^\s+\S+ \S+\s+(\d+)\s+\S*?cycles\.py:(\d+)", text[at:], re.M)
            rows = [("cycles.py:" + w, int(c)) for c, w in rows if int(w) in marked]
            fails.check(rows == want,
                        "%s: text rows %s, expected %s:\n%s" % (tag, rows, want, text[at:at + 2000]))
            # HTML: the section is there (it draws from the same JSON).
            page = os.path.join(tmp, "r.html")
            report(log, "--html", page)
            html = open(page).read()
            fails.check("Objects collected by the GC, by allocation site" in html and "gc_object_sites" in html,
                        "%s: HTML report lacks the section" % tag)
            # Without every allocation recorded, no frees are.
            tenth = pt.run_traced([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "10"})
            fails.check(tenth.proc.returncode == 0 and tenth.of("py_alloc") and not tenth.of("py_free"),
                        "%s: TRACE_PY_ALLOCS=10: %d py_alloc, %d py_free" % (tag, len(tenth.of("py_alloc")),
                                                                              len(tenth.of("py_free"))))
        finally:
            pt.discard(log)


def check_reuse(python, tag, program, what, left_out=()):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "reuse.py", program)
        # With every allocation recorded nothing can be charged to an older
        # allocation at the same address: that run is the reference (3.8
        # charges one object to line x, its list comprehension's frame).
        got = {}
        for env in ALL_THEN_FILTERED:
            run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env=env)
            try:
                if not fails.check(run.proc.returncode == 0, "%s: reuse program failed with %s: %s"
                                   % (tag, env, run.proc.stderr[-500:])):
                    continue
                data = json.loads(report(log, "--json"))
                sites = {s["id"]: s for s in data["sites"]}
                counts = {}
                for i in data["gc_object_sites"]:
                    m = re.match(r"(\S+):(\d+) ", sites[i]["python"] or "")
                    if m and m.group(1) == script:
                        counts[int(m.group(2))] = counts.get(int(m.group(2)), 0) + sites[i]["gc_object_count"]
                got[len(env)] = (counts.get(line("c", program), 0), counts.get(line("x", program), 0))
                # Allocations at the lines of objects the filter leaves out.
                for marker in left_out:
                    made = sum(s["object_count"] for s in data["sites"]
                               if re.match(r"%s:%d " % (re.escape(script), line(marker, program)),
                                           s["python"] or ""))
                    want = "at least 1000" if len(env) == 2 else "none"
                    fails.check(made >= 1000 if len(env) == 2 else made == 0,
                                "%s: with %s, %d allocations of %s recorded at line %s, expected %s"
                                % (tag, env, made, what, marker, want))
            finally:
                pt.discard(log)
        reference = got.get(2, (None, None))
        fails.check(reference[0] == 1000 and reference[1] is not None and reference[1] <= 1,
                    "%s: with TRACE_PY_ALLOC_ALL=1 the collection's objects charged to the cycles' line and "
                    "to the freed objects' line: %s, expected (1000, 0 or 1)" % (tag, reference))
        fails.check(got.get(1) == reference,
                    "%s: the same with the %s left out: %s, expected %s" % (tag, what, got.get(1), reference))


def check_buffers(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "buffers.py", BUFFERS)
        made = {}
        for env in ALL_THEN_FILTERED:
            run = pt.run_traced([python, "-S", script], args.preload, args.pylog, env=env)
            if not fails.check(run.proc.returncode == 0, "%s: buffers program failed with %s: %s"
                               % (tag, env, run.proc.stderr[-500:])):
                return
            made[len(env)] = sum(1 for e in run.of("py_alloc") if e["size"] >= 200 and pt.innermost(e)
                                 and pt.innermost(e)[0] == script and pt.innermost(e)[1] == line("b", BUFFERS))
        if made.get(2, 0) < 1000:
            print("%s: bytearray buffers are not in the object domain here (%d recorded with "
                  "TRACE_PY_ALLOC_ALL=1): nothing to leave out" % (tag, made.get(2, 0)))
        fails.check(made.get(1) == 0, "%s: %s bytearray buffers recorded as objects at line b (%s with "
                    "TRACE_PY_ALLOC_ALL=1), expected none" % (tag, made.get(1), made.get(2)))


def check_segments(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script, log = program_file(tmp, "segments.py", SEGMENTS), os.path.join(tmp, "segments.tlog")
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_PY_ALLOCS="1",
                   TRACE_MAX_BYTES="64K", TRACE_QUIET="1")
        p = subprocess.run([python, "-S", script], env=env, capture_output=True, text=True, timeout=300)
        files = [f for f in os.listdir(tmp) if f.endswith(".tlog")]
        if not fails.check(p.returncode == 0 and len(files) >= 3, "%s: segments program: exit %d, %d files: %s"
                           % (tag, p.returncode, len(files), p.stderr[-500:])):
            return
        data = json.loads(report(log, "--json"))
        sites = {s["id"]: s for s in data["sites"]}
        rows = [sites[i]["gc_object_count"] for i in data["gc_object_sites"]
                if (sites[i]["python"] or "").startswith("%s:%d " % (script, line("a", SEGMENTS)))]
        deleted = "were deleted" in (data["log"]["damage"] or "")
        fails.check(len(rows) == 1 and (0 < rows[0] <= SEGMENT_CYCLES if deleted else rows[0] == SEGMENT_CYCLES),
                    "%s: line a's objects in %d segment files, as sites: %s, expected one of %s%d"
                    % (tag, len(files), rows, "at most " if deleted else "", SEGMENT_CYCLES))
        fails.check(data["gc"]["objects_collected"]["segments_deleted"] is deleted,
                    "%s: objects_collected.segments_deleted is not %s (damage: %s)"
                    % (tag, deleted, data["log"]["damage"]))


# tracemalloc started at startup (-X tracemalloc) and stopped puts back the
# allocator from before it, without our wrapper on top: object allocations
# are no longer recorded, and the log says so (INFO not_watched) instead of
# going silent.  Started and stopped after attach it puts ours back: nothing
# to say, every free still recorded.
TRACEMALLOC = """\
import gc, sys, tracemalloc
gc.disable()
class A:
    pass
if sys.argv[1] == "later":
    tracemalloc.start()
if sys.argv[1] != "kept":
    tracemalloc.stop()
for i in range(20000):
    a = A()
    a.me = a
    del a
    if i % 2000 == 0:
        gc.collect()
gc.collect()
"""


def check_tracemalloc(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "tm.py", TRACEMALLOC)
        for flags, arg, lost in ((["-X", "tracemalloc"], "stopped", True), (["-X", "tracemalloc"], "kept", False),
                                 ([], "later", False)):
            run = pt.run_traced([python, *flags, script, arg], args.preload, args.pylog,
                                env={"TRACE_PY_ALLOCS": "1"})
            said = [i for i in run.info("not_watched") if "replaced the object allocator" in i]
            frees = len(run.of("py_free"))
            fails.check(run.proc.returncode == 0 and bool(said) == lost and (frees < 1000 if lost else frees >= 20000),
                        "%s: %s %s: exit %d, not_watched %s, %d py_free" % (tag, " ".join(flags), arg,
                                                                          run.proc.returncode, said, frees))


# PYTHONMALLOC=malloc: the object domain's blocks come from malloc, which
# hands out 8-byte blocks (ASan's, and jemalloc's, tcmalloc's and
# mimalloc's at 8-aligned addresses; glibc's smallest holds 24).  Such a block holds no object: its allocation is left out, and its
# free inside a collection (here, by a finalizer) neither recorded nor read
# past (ASan saw the read of its type word).
SMALL_BLOCKS = """\
import ctypes, gc
api = ctypes.pythonapi
api.PyObject_Malloc.restype = ctypes.c_void_p
api.PyObject_Malloc.argtypes = [ctypes.c_size_t]
api.PyObject_Free.argtypes = [ctypes.c_void_p]
gc.disable()
kept = [api.PyObject_Malloc(8) for i in range(200)]
print(" ".join(str(p) for p in kept))
class Node:
    def __del__(self):
        api.PyObject_Free(kept.pop())
for i in range(150):
    n = Node()
    n.me = n
del n
gc.collect()
"""


# Copies of a big dict, each kept by a cycle (PyTorch's optimizers copy
# sys.modules this way, through inspect): the copy's key table is no
# object, though 3.11 and 3.12 give a copy its source's version, and a
# table dropped at once is looked at with its count already 0.  Only the
# dicts and the Cyc instances are objects the collection freed.
DICT_COPIES = """\
import gc
big = {str(i): i for i in range(5000)}
gc.disable()
class Cyc:
    pass
for i in range(200):
    big.copy()                                  # made and dropped
    c = Cyc(); c.me = c
    c.d = big.copy()                            # LINE:copy
    del c
gc.collect()
"""


def check_dict_copies(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "copies.py", DICT_COPIES)
        run, log = pt.run_traced_keep([python, script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            data = json.loads(report(log, "--json")) if run.proc.returncode == 0 else {"sites": []}
            at = [s for s in data["sites"]
                  if (s["python"] or "").startswith("%s:%d " % (script, line("copy", DICT_COPIES)))]
            count = sum(s["gc_object_count"] for s in at)
            size = sum(s["gc_object_bytes"] for s in at)
            # At most the 200 dicts (those not from the free list), 48 to
            # 64 bytes each; each key table is 100 KiB or more.
            fails.check(run.proc.returncode == 0 and count <= 200 and size < 100 << 10,
                        "%s: dict copies kept by cycles: exit %d, %d objects, %d bytes collected at the copy's "
                        "line (expected the dicts alone, no key table)" % (tag, run.proc.returncode, count, size))
        finally:
            pt.discard(log)


# Mallocs whose smallest blocks are 8 bytes at 8-aligned addresses.
OTHER_MALLOCS = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                 "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"]


def check_small_blocks(python, tag):
    asan = "libasan" in args.preload
    # Under ASan its malloc is first already; another one before it cannot be.
    for first in [None] + ([] if asan else [m for m in OTHER_MALLOCS if os.path.exists(m)]):
        with tempfile.TemporaryDirectory() as tmp:
            script = program_file(tmp, "small.py", SMALL_BLOCKS)
            run = pt.run_traced([python, script], first + ":" + args.preload if first else args.preload,
                                args.pylog, env={"TRACE_PY_ALLOCS": "1", "PYTHONMALLOC": "malloc"})
            blocks = set(int(p) for p in run.proc.stdout.split())
            allocs = [e for e in run.of("py_alloc") if e["size"] < 16]
            # the last collection's frees (the addresses may have held
            # recorded objects before: malloc reuses them)
            last = max((e["seq"] for e in run.of("gc_start")), default=0)
            frees = [e for e in run.of("py_free") if e["ptr"] in blocks and e["seq"] > last]
            fails.check(run.proc.returncode == 0 and len(blocks) == 200 and not allocs and not frees,
                        "%s%s: 8-byte object-domain blocks under PYTHONMALLOC=malloc: exit %d (%s), %d blocks, "
                        "%d recorded py_alloc, %d py_free (expected none)"
                        % (tag, ", " + os.path.basename(first) + " first" if first else "", run.proc.returncode,
                           run.proc.stderr[-300:], len(blocks), len(allocs), len(frees)))


# 1.1 million objects alive at once, each at its own address, none freed
# in a collection: the report keeps each address's site, size and seq.
# Three maps of the same keys took 3 x 4M slots x 16 bytes (the report's
# peak 234 MB); one map to 24-byte records about half.
MANY_LIVE = """\
import gc
gc.disable()
keep = [[i] for i in range(1100000)]
"""


def check_report_memory(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "live.py", MANY_LIVE)
        run, log = pt.run_traced_keep([python, script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            mib = pt.peak_rss_mib([args.replay, "report", log])
            fails.check(run.proc.returncode == 0 and 0 < mib < 170,
                        "%s: report's peak memory on 1.1 million live objects: %d MiB (expected under 170)"
                        % (tag, mib))
        finally:
            pt.discard(log)


# Free lists: a dying tuple, list or dict may go to its type's free list
# instead of back to the allocator, whose blocks a collection of the oldest
# generation gives back.  Tuples freed by their count long before, given
# back by gc.collect(), were counted as collected (2,000 of 5,000 at line
# t, old); the lists and tuples of cycles that a collection killed and put
# on the free lists were not counted at all (1,419 of 2,998 at line c).
# A tuple built from a generator grows by resizes (_PyTuple_Resize): one
# object, not one per resize (line r: 11 objects an iteration, old).  Lists
# a free list hands out again, collected again (line y): charged to the
# last allocation recorded at their address.
FREE_LISTS = """\
import gc, sys
gc.disable()
def plain():
    return [(i, -i) for i in range(5000)]  # LINE:t
x = plain()
del x
gc.collect()
for i in range(1500):
    l = []; t = (l, i); l.append(t)  # LINE:c
print(gc.collect(1))
for i in range(1000):
    l = []; r = tuple(l if j == 0 else j for j in range(200)); l.append(r)  # LINE:r
gc.collect()
def rounds():
    for r in range(20):
        for i in range(50):
            a = []; a.append(a)  # LINE:y
        gc.collect(0)
rounds()
"""


def check_free_lists(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "fl.py", FREE_LISTS)
        run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            if not fails.check(run.proc.returncode == 0, "%s: free-list program failed: %s"
                               % (tag, run.proc.stderr[-500:])):
                return
            collected = int(run.proc.stdout.split()[-1])
            data = json.loads(report(log, "--json"))
            sites = {s["id"]: s for s in data["sites"]}
            counts = {}
            for i in data["gc_object_sites"]:
                m = re.match(r"(\S+):(\d+) ", sites[i]["python"] or "")
                if m and m.group(1) == script:
                    counts[int(m.group(2))] = counts.get(int(m.group(2)), 0) + sites[i]["gc_object_count"]
            plain, cycles = counts.get(line("t", FREE_LISTS), 0), counts.get(line("c", FREE_LISTS), 0)
            young = counts.get(line("y", FREE_LISTS), 0)
            # A few deaths in a collection are charged to an older line: an
            # object a free list handed out has no allocation of its own in
            # the log (the caveat the report prints).
            # None: 23 or 24 on 3.10 to 3.13 until the free lists' blocks
            # at a page's end had their type read (check_page_end), which
            # an allowance of 50 here hid.
            fails.check(plain == 0, "%s: %d tuples freed by their count before the collection that emptied "
                                    "the free lists are counted as collected at line t (expected none)"
                        % (tag, plain))
            fails.check(collected == 2998 and cycles >= 0.98 * collected,   # the last cycle is still named
                        "%s: %d collected objects charged to the cycles' line of the %d gc.collect(1) found"
                        % (tag, cycles, collected))
            # 1,000 lists in self-cycles, 50 a round, each round collected
            # by gc.collect(0), which leaves the free list as it is: from
            # the second round the lists come from it, without a py_alloc,
            # and are charged to the last allocation at their address, most
            # of them line y's own (old: 42 of 1,000, the rest "allocated
            # before the log's allocations").
            fails.check(young >= 800, "%s: %d of the 1000 lists collected by gc.collect(0) charged to their line "
                                      "(expected 800 or more)" % (tag, young))
            # A list, a generator, the tuple, and on 3.8 to 3.10 the
            # generator's frame.
            made = sum(s["object_count"] for s in data["sites"]
                       if re.match(r"%s:%d " % (re.escape(script), line("r", FREE_LISTS)), s["python"] or ""))
            fails.check(2900 <= made <= 4050, "%s: %d objects made at the resizing line, 1000 iterations of 3 (4 on "
                                              "3.8 to 3.10)" % (tag, made))
        finally:
            pt.discard(log)


# Lists that died by their count and waited on the list free list, in a
# page's last 16 bytes: the collection that empties the free list gives
# their blocks back, and they are no collected objects.  Their type word
# lies in the next page, which was not read: taken as not watched, they
# were recorded as collected (4 of json_work's 300 py_frees in one address
# layout, none in another).  From 3.10 on a 64-byte pool class has such a
# block in every page; 3.8's and 3.9's one-page pools have none (then the
# check has nothing to look at, and says so).
PAGE_END = """\
import gc
gc.disable()
gc.collect()
made = [[] for i in range(30000)]
edge = [l for l in made if id(l) % 4096 == 0][:60]
edge_ids = set(map(id, edge))
others = [l for l in made if id(l) not in edge_ids]
del made
print(" ".join("%x" % (id(l) - 16) for l in edge))
edge.clear()          # to the free list: it has room for 80 and holds none
others.clear()        # the free list full: back to the allocator
gc.collect()          # empties the free list
"""


def check_page_end(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "page_end.py", PAGE_END)
        run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            if not fails.check(run.proc.returncode == 0, "%s: page-end program failed: %s"
                               % (tag, run.proc.stderr[-500:])):
                return
            blocks = {int(b, 16) for b in run.proc.stdout.split()}
            if not blocks:
                print("%s: no list in a page's last 16 bytes (one-page pools): nothing to check" % tag)
                return
            freed = [e for e in run.of("py_free") if e["ptr"] in blocks]
            if fails.check(not freed, "%s: %d of %d lists that died by their count and waited on the free list "
                                      "in a page's last 16 bytes recorded as freed by the collection that emptied it"
                           % (tag, len(freed), len(blocks))):
                print("%s: %d lists at a page's end on the free list, none recorded as collected" % (tag, len(blocks)))
        finally:
            pt.discard(log)


# A fork's child frees in its collections what the parent allocated: their
# allocations are in the parent's log, and no segment was deleted (the
# report said "in segments deleted to keep the log within its budget", and
# JSON segments_deleted true, of a log without a budget).
FORK = """\
import gc, os
class S:
    __slots__ = ("r",)
gc.disable()
kept = []
for i in range(1000):
    a = S(); a.r = a; kept.append(a)
del kept[:]
pid = os.fork()
if pid == 0:
    gc.collect()
    os._exit(0)
os.waitpid(pid, 0)
"""


def check_fork(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "fork.py", FORK)
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(tmp, "%p.tlog"),
                   TRACE_PY_ALLOCS="1", TRACE_QUIET="1")
        p = subprocess.run([python, "-S", script], env=env, capture_output=True, text=True, timeout=300)
        logs = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".tlog"))
        if not fails.check(p.returncode == 0 and len(logs) == 2, "%s: fork program: exit %d, %d logs: %s"
                           % (tag, p.returncode, len(logs), p.stderr[-500:])):
            return
        said = [json.loads(report(log, "--json"))["gc"]["objects_collected"] for log in logs]
        child = [o for o in said if o["after_fork"]]
        fails.check(len(child) == 1 and child[0]["allocated_before_log"] >= 1000 and
                    not any(o["segments_deleted"] for o in said),
                    "%s: a fork's child's collected objects: %s (expected one log after a fork, 1000 objects "
                    "allocated before it, no segment deleted)" % (tag, said))


# A log that lost a frame (damage) is not one whose segments were deleted:
# the objects a collection freed whose allocations were in the lost frame
# were said to be "in segments deleted to keep the log within its budget"
# (JSON segments_deleted true, old) of a log without a budget.
LOST_FRAME = """\
import gc, time
gc.disable()
class N:
    pass
time.sleep(0.3)
keep = []
for i in range(3000):
    a = N(); b = N(); a.b = b; b.a = a; keep.append(a)  # LINE:m
time.sleep(0.3)
del keep[:]
print(gc.collect())
"""


def zstd_frames(data):
    """(start, end) of each frame of a log, from the frames' own headers and
    block sizes (RFC 8878), without decompressing."""
    frames, at = [], 0
    while at < len(data):
        start = at
        magic = int.from_bytes(data[at:at + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:          # skippable
            at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
            frames.append((start, at))
            continue
        if magic != 0xFD2FB528:
            raise AssertionError("not a zstd frame at %d" % at)
        fhd = data[at + 4]
        single, checksum, dict_flag, fcs_flag = fhd >> 5 & 1, fhd >> 2 & 1, fhd & 3, fhd >> 6
        at += 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
        while True:
            header = int.from_bytes(data[at:at + 3], "little")
            at += 3 + (1 if header >> 1 & 3 == 1 else header >> 3)
            if header & 1:
                break
        at += 4 if checksum else 0
        frames.append((start, at))
    return frames


def check_lost_frame(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "lost.py", LOST_FRAME)
        run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            if not fails.check(run.proc.returncode == 0, "%s: lost-frame program failed: %s"
                               % (tag, run.proc.stderr[-500:])):
                return
            with open(log, "rb") as f:
                data = f.read()
        finally:
            pt.discard(log)
        frames = zstd_frames(data)
        cut = os.path.join(tmp, "cut.tlog")
        said = None
        # The frame with the loop's allocations: the one whose loss leaves
        # most of the 6,000 objects without their allocation.
        for start, end in frames[1:-1]:
            with open(cut, "wb") as f:
                f.write(data[:start] + data[end:])
            o = json.loads(report(cut, "--json"))["gc"]["objects_collected"]
            if o and o["allocated_before_log"] >= 5000:
                said = o
                text = report(cut)
                break
        if not fails.check(said is not None, "%s: no frame of %d held the loop's allocations" % (tag, len(frames))):
            return
        fails.check(said.get("events_missing") is True and said["segments_deleted"] is False,
                    "%s: a log that lost a frame: %s (expected events_missing, no segment deleted)" % (tag, said))
        fails.check("in events the damaged log lost" in text and "segments deleted" not in text,
                    "%s: the text report of a log that lost a frame says: %s"
                    % (tag, [l for l in text.splitlines() if "(no site)" in l]))


# Python code a collection runs (a finalizer, a weakref callback) frees by
# counts what it drops: not objects the collector found.  A __del__ that
# empties a module's cache had the cache's 1,000 lists counted as collected
# at their line (989 of them, old).
FINALIZER = """\
import gc
gc.disable()
class Node:
    def __del__(self):
        CACHE.clear()
CACHE = [[i] for i in range(1000)]  # LINE:k
class S:
    __slots__ = ("r",)
for i in range(100):
    s = S(); s.r = s  # LINE:s
n = Node(); n.me = n; del n
gc.collect()
"""


def check_finalizer(python, tag):
    with tempfile.TemporaryDirectory() as tmp:
        script = program_file(tmp, "fin.py", FINALIZER)
        run, log = pt.run_traced_keep([python, "-S", script], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
        try:
            if not fails.check(run.proc.returncode == 0, "%s: finalizer program failed: %s"
                               % (tag, run.proc.stderr[-500:])):
                return
            data = json.loads(report(log, "--json"))
            sites = {s["id"]: s for s in data["sites"]}
            counts = {}
            for i in data["gc_object_sites"]:
                m = re.match(r"(\S+):(\d+) ", sites[i]["python"] or "")
                if m and m.group(1) == script:
                    counts[int(m.group(2))] = counts.get(int(m.group(2)), 0) + sites[i]["gc_object_count"]
            cache, cycles = counts.get(line("k", FINALIZER), 0), counts.get(line("s", FINALIZER), 0)
            fails.check(cache <= 10 and cycles == 99, "%s: a finalizer's frees counted as collected: %d at the "
                        "cache's line (expected none), %d at the cycles' line (expected 99)" % (tag, cache, cycles))
        finally:
            pt.discard(log)


def check_all(python, version):
    check(python, version)
    check_reuse(python, "%s (%s)" % (version, python), REUSE, "strs")
    check_reuse(python, "%s (%s)" % (version, python), REUSE_DICTS, "dict key tables")
    check_reuse(python, "%s (%s)" % (version, python), REUSE_NONGC, "objects without GC",
                left_out=("r", "i", "h"))
    check_buffers(python, "%s (%s)" % (version, python))
    check_segments(python, "%s (%s)" % (version, python))
    check_tracemalloc(python, "%s (%s)" % (version, python))
    check_small_blocks(python, "%s (%s)" % (version, python))
    check_dict_copies(python, "%s (%s)" % (version, python))
    check_free_lists(python, "%s (%s)" % (version, python))
    check_page_end(python, "%s (%s)" % (version, python))
    check_fork(python, "%s (%s)" % (version, python))
    check_lost_frame(python, "%s (%s)" % (version, python))
    check_finalizer(python, "%s (%s)" % (version, python))
    if version == "3.12" and "libasan" not in args.preload:   # ASan's heap is not the tool's
        check_report_memory(python, "%s (%s)" % (version, python))


pt.for_each_interpreter(args.python, check_all, fails)
