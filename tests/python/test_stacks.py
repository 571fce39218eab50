"""Python stacks: every event carries the Python stack of the thread that
recorded it (file, line, function, innermost first), whether that thread holds
the GIL or released it around the call (ctypes' CDLL, extensions that wrap
cudaMalloc in Py_BEGIN_ALLOW_THREADS), and never another thread's, even while
the main thread holds the GIL (3.8-3.11 keep one global "current" thread
state).  A double free made from Python through ctypes names the Python line
in trace-replay's report.  Code compiled where dead code lived (exec of
compile() in a loop) is named as it is, not as the dead code was, also when
another tool wraps the code type's deallocator after ours and when other
threads' code dies between a thread's events.  More distinct stacks than the
recorder keeps are each named in full, and defined a frame at a time
(PY_STACK_PUSH), never as whole stacks.  An allocation in __init__ of a class
called in a loop names __init__, then its caller's line: 3.13's specialised
class call runs __init__ over a trampoline frame (_Py_InitCleanup, file and
function "__init__", line 0) that CPython's tracebacks leave out, and so
must the stacks.  Code run in a subinterpreter with the GIL released (ctypes)
never gets the main interpreter's stack (3.8 to 3.11 gave it the line that
called run_string)."""
import os
import subprocess
import tempfile

import pytrace as pt


def extra(p):
    p.add_argument("--cuda-doubles")
    p.add_argument("--replay")
    p.add_argument("--code-dealloc-wrapper")
    p.add_argument("--dump")


args = pt.parse_args(extra)
fails = pt.Failures()
script = pt.workload("gil_marks.py")
held_line = pt.line_of(script, "held")
outer_line = pt.line_of(script, "outer")
thread_line = pt.line_of(script, "held-thread")
released_line = pt.line_of(script, "released")
released_thread_line = pt.line_of(script, "released-thread")
double_free = pt.workload("ctypes_double_free.py")
code_reuse = pt.workload("code_reuse.py")
code_reuse_threads = pt.workload("code_reuse_threads.py")
many_stacks = pt.workload("many_stacks.py")
MANY_LINES = {k: pt.line_of(many_stacks, k) for k in ("bottom", "one", "zero", "top")}
deep_stack = pt.workload("deep_stack.py")
DEEP_LINES = {k: pt.line_of(deep_stack, k) for k in ("bottom", "call", "top", "free")}
# The recorder keeps this many frames of a stack; a deeper one keeps one
# less and ends with the frame standing for the rest (FORMAT.md section 6).
ROOM = 128
CUT = ("", 0, "<outer frames not recorded>")


def marks(run, text):
    return [e for e in run.of("mark") if e["text"] == text]


def check(python, version):
    tag = "%s (%s)" % (version, python)
    run = pt.run_traced([python, script], args.preload, args.pylog)
    if not fails.check(run.proc.returncode == 0, "%s: workload failed: %s" % (tag, run.proc.stderr[-800:])):
        return
    held = marks(run, "held")
    if fails.check(len(held) == 1, "%s: %d 'held' marks" % (tag, len(held))):
        frames = [(f[0].rsplit("/", 1)[-1], f[1], f[2]) for f in held[0]["py"][:3]]
        fails.check(frames == [("gil_marks.py", held_line, "inner_with_gil"),
                               ("gil_marks.py", outer_line, "outer_with_gil"),
                               ("gil_marks.py", frames[2][1] if len(frames) > 2 else 0, "<module>")],
                    "%s: wrong stack for the 'held' mark: %s" % (tag, frames))
    released = marks(run, "released")
    fails.check(len(released) == 1 and released[0]["py"] and
                released[0]["py"][0][1] == released_line and released[0]["py"][0][2] == "<module>",
                "%s: the mark made with the GIL released lacks its stack: %s"
                % (tag, [e["py"][:1] for e in released]))
    on_worker = marks(run, "released-thread")
    fails.check(len(on_worker) == 300, "%s: %d marks on the worker with the GIL released"
                % (tag, len(on_worker)))
    wrong = [e["py"][:1] for e in on_worker
             if not (e["py"] and e["py"][0][1] == released_thread_line and e["py"][0][2] == "worker")]
    fails.check(not wrong, "%s: %d worker marks made without the GIL lack the worker's own stack, "
                "e.g. %s" % (tag, len(wrong), wrong[:2]))
    on_thread = marks(run, "held-thread")
    if fails.check(len(on_thread) == 1, "%s: %d 'held-thread' marks" % (tag, len(on_thread))):
        top = on_thread[0]["py"][:1]
        fails.check(top and top[0][1] == thread_line and top[0][2] == "worker",
                    "%s: worker thread's stack wrong: %s" % (tag, top))

    check_double_free(python, tag)
    check_init_caller(python, tag)
    check_code_reuse(python, tag, {})
    check_code_reuse(python, tag, {"TRACE_PY_ALLOCS": "1"})
    if args.code_dealloc_wrapper:
        check_code_reuse(python, tag, {}, [args.code_dealloc_wrapper])
    check_code_reuse_threads(python, tag, {})
    check_code_reuse_threads(python, tag, {"TRACE_PY_ALLOCS": "1"})
    check_many_stacks(python, tag)
    check_deep_stack(python, tag, {})
    check_deep_stack(python, tag, {"TRACE_PY_ALLOCS": "1"})


INIT_CALLER = """
class Leaf: pass
class Node:
    def __init__(self):
        self.kid = Leaf()                   # line 5: a GC object (no free list), in __init__
def make():
    return [Node() for i in range(300)]     # line 7: the class called, specialised after a few
made = make()
"""


def check_init_caller(python, tag):
    run = pt.run_traced([python, "-c", INIT_CALLER], args.preload, args.pylog, env={"TRACE_PY_ALLOCS": "1"})
    if not fails.check(run.proc.returncode == 0, "%s: program failed: %s" % (tag, run.proc.stderr[-800:])):
        return
    in_init = [e["py"] for e in run.of("py_alloc") if e["py"] and e["py"][0][2].endswith("__init__")
               and e["py"][0][0] == "<string>"]
    wrong = [p[:3] for p in in_init if len(p) < 2 or (p[1][0], p[1][1]) != ("<string>", 7)]
    fails.check(len(in_init) >= 300 and not wrong,
                "%s: %d allocations in __init__, %d without their caller's line next (a trampoline "
                "frame between?), e.g. %s" % (tag, len(in_init), len(wrong), wrong[:1]))


def check_code_reuse(python, tag, env, argv=()):
    """Code compiled where dead code was (workloads/code_reuse.py): every
    round's mark names that round's file and lines, never an earlier one's."""
    what = "%s %s%s" % (tag, " ".join("%s=%s" % kv for kv in env.items()) or "default",
                        ", code type's deallocator wrapped after ours" if argv else "")
    run = pt.run_traced([python, code_reuse] + list(argv), args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0, "%s: code_reuse.py failed: %s"
                       % (what, run.proc.stderr[-800:])):
        return
    seen, wrong = 0, []
    for e in run.of("mark"):
        naming, i = e["text"].split()
        i = int(i)
        period = {"two": 2, "five": 5, "unique": 0}[naming]
        name = "gen%d.py" % (i % period if period else i)
        before, inside = i % 3, (i // 3) % 2
        want = [(name, before + 3 + inside, "f"), (name, before + 4 + inside, "<module>")]
        got = [tuple(f[:3]) for f in e["py"][:2]]
        seen += 1
        if got != want:
            wrong.append((e["text"], got, want))
    fails.check(seen == 900, "%s: %d of 900 marks from code_reuse.py" % (what, seen))
    fails.check(not wrong, "%s: %d of %d marks name another round's code (text, got, wanted), "
                "e.g. %s" % (what, len(wrong), seen, wrong[:2]))


def check_code_reuse_threads(python, tag, env):
    """code_reuse.py on four threads switching at every round
    (workloads/code_reuse_threads.py): a thread's stack is looked at after
    other threads' code died where its previous stack's was."""
    what = "%s %s" % (tag, " ".join("%s=%s" % kv for kv in env.items()) or "default")
    run = pt.run_traced([python, code_reuse_threads], args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0, "%s: code_reuse_threads.py failed: %s"
                       % (what, run.proc.stderr[-800:])):
        return
    seen, wrong = 0, []
    for e in run.of("mark"):
        t, i = (int(x) for x in e["text"].split())
        name = "thread%d_%d.py" % (t, i % 2)
        before, inside = i % 3, (i // 3) % 2
        want = [(name, before + 4 + inside, "f"), (name, before + 5 + inside, "<module>")]
        got = [tuple(f[:3]) for f in e["py"][:2]]
        seen += 1
        if got != want:
            wrong.append((e["text"], got, want))
    fails.check(seen == 1200, "%s: %d of 1200 marks from code_reuse_threads.py" % (what, seen))
    fails.check(not wrong, "%s: %d of %d marks from code_reuse_threads.py name another round's "
                "code (text, got, wanted), e.g. %s" % (what, len(wrong), seen, wrong[:2]))


def check_many_stacks(python, tag):
    """More distinct stacks than the recorder keeps (workloads/many_stacks.py),
    each met twice: every mark names its own stack, frame by frame."""
    run = pt.run_traced([python, many_stacks], args.preload, args.pylog)
    if not fails.check(run.proc.returncode == 0, "%s: many_stacks.py failed: %s"
                       % (tag, run.proc.stderr[-800:])):
        return
    depth, seen, wrong = 14, 0, []
    for e in run.of("mark"):
        rnd, i = (int(x) for x in e["text"].split())
        want = [("many_stacks.py", MANY_LINES["bottom"], "walk")]
        want += [("many_stacks.py", MANY_LINES["one" if i >> (depth - p) & 1 else "zero"], "walk")
                 for p in range(1, depth + 1)]
        want.append(("many_stacks.py", MANY_LINES["top"], "<module>"))
        got = [(f[0].rsplit("/", 1)[-1], f[1], f[2]) for f in e["py"]]
        seen += 1
        if got != want:
            wrong.append((e["text"], got[:3], len(got)))
    fails.check(seen == 2 * 2 ** depth, "%s: %d of %d marks from many_stacks.py"
                % (tag, seen, 2 * 2 ** depth))
    fails.check(not wrong, "%s: %d of %d marks from many_stacks.py with a wrong stack "
                "(text, innermost frames, depth), e.g. %s" % (tag, len(wrong), seen, wrong[:2]))
    check_stack_definitions(python, tag)


def check_deep_stack(python, tag, env):
    """Marks made 2 to 2000 frames deep (workloads/deep_stack.py): a stack
    that fits is whole, down to <module>; a deeper one has its innermost
    ROOM - 1 frames, each right, and then the frame that says the outer ones
    were not recorded, instead of ending as if its last frame were the
    outermost.  The report names the cut as such."""
    what = "%s %s" % (tag, " ".join("%s=%s" % kv for kv in env.items()) or "default")
    argv, env = [], dict(env)
    if args.cuda_doubles and args.replay:
        argv, env["LD_LIBRARY_PATH"] = [args.cuda_doubles], args.cuda_doubles
    run, log = pt.run_traced_keep([python, deep_stack] + argv, args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0, "%s: deep_stack.py failed: %s"
                       % (what, run.proc.stderr[-800:])):
        pt.discard(log)
        return
    seen, wrong = 0, []
    for e in run.of("mark"):
        total = int(e["text"])
        want = [("deep_stack.py", DEEP_LINES["bottom"], "rec")]
        want += [("deep_stack.py", DEEP_LINES["call"], "rec")] * (total - 2)
        want.append(("deep_stack.py", DEEP_LINES["top"], "<module>"))
        if total > ROOM:
            want = want[:ROOM - 1] + [CUT]
        got = [(f[0].rsplit("/", 1)[-1], f[1], f[2]) for f in e["py"]]
        seen += 1
        if got != want:
            wrong.append((total, len(got), got[-2:], len(want), want[-2:]))
    fails.check(seen == 16, "%s: %d of 16 marks from deep_stack.py" % (what, seen))
    fails.check(not wrong, "%s: %d of %d marks from deep_stack.py with a wrong stack "
                "(depth, frames got, outermost got, frames wanted, outermost wanted), e.g. %s"
                % (what, len(wrong), seen, wrong[:2]))
    if env.get("TRACE_PY_ALLOCS"):
        cut = [e for e in run.of("py_alloc") if e["py"] and tuple(e["py"][-1][:3]) == CUT]
        fails.check(len(cut) >= 2 * (2000 - ROOM), "%s: %d allocations end with the cut, "
                    "expected at least %d" % (what, len(cut), 2 * (2000 - ROOM)))
    if argv:
        out = subprocess.run([args.replay, "check", log], capture_output=True, text=True)
        fails.check(out.returncode == 1 and "double_free" in out.stdout and
                    "deep_stack.py:%d" % DEEP_LINES["free"] in out.stdout and
                    out.stdout.count("... outer frames not recorded") == 1 and
                    out.stdout.count("[the frame above repeated %d more times]" % (ROOM - 2 - 3)) == 1 and
                    "<outer frames not recorded>" not in out.stdout,
                    "%s: trace-replay check does not show the double free's deep stack as cut "
                    "(exit %d):\n%s" % (what, out.returncode, out.stdout[-2500:]))
    pt.discard(log)


def record_kinds(log):
    """{kind: (records, bytes)} of a log written as records (TRACE_COLUMNS=0),
    and the number of stacks its PY_STACK_PUSH and PY_STACK_CHAIN records
    define."""
    records = pt.log_records(log)
    if records is None:
        raise AssertionError("no zstd program to read the log's records with")
    kinds, pushed = {}, 0
    for kind, payload in records:
        if kind == 14:  # 2.1's PY_STACK_PUSH: id, outer, one frame
            pushed += 1
        elif kind == 15:  # 2.2's PY_STACK_CHAIN: gap, back, n frames
            _, pos = pt.get_uv(payload, 0)
            _, pos = pt.get_uv(payload, pos)
            pushed += pt.get_uv(payload, pos)[0]
        head = len(pt.uv_bytes(kind)) + len(pt.uv_bytes(len(payload)))
        count, size = kinds.get(kind, (0, 0))
        kinds[kind] = (count + 1, size + head + len(payload))
    return kinds, pushed


def check_stack_definitions(python, tag):
    """The recorder defines Python stacks a frame at a time (PY_STACK_PUSH,
    FORMAT.md section 6): many_stacks.py's 2**14 stacks, 16 frames deep,
    share their outer frames, so their definitions are one pushed frame per
    node of the tree they make (49,151: 1 + 2 + ... + 2**14 calls and 2**14
    marking frames), never a whole stack, and one PY_STACK_CHAIN record for
    each new stack's frames: about 2**14 records, under 5 bytes a frame
    (2.1's PY_STACK_PUSH, a record a frame, took 9)."""
    run, log = pt.run_traced_keep([python, many_stacks], args.preload, args.pylog,
                                  env={"TRACE_COLUMNS": "0"})
    try:
        if not fails.check(run.proc.returncode == 0, "%s: many_stacks.py (records) failed: %s"
                           % (tag, run.proc.stderr[-800:])):
            return
        kinds, pushed = record_kinds(log)
        whole, push, chain = kinds.get(8, (0, 0)), kinds.get(14, (0, 0)), kinds.get(15, (0, 0))
        fails.check(whole[0] == 0, "%s: %d Python stacks defined whole (PY_STACK)" % (tag, whole[0]))
        nodes = 1 + sum(2 ** p for p in range(1, 15)) + 2 ** 14
        fails.check(nodes <= pushed <= nodes + 2000 and push[0] == 0
                    and chain[0] <= 2 ** 14 + 2000 and chain[1] <= 5 * pushed,
                    "%s: %d PY_STACK_PUSH and %d PY_STACK_CHAIN records of %d bytes defining %d"
                    " stacks, for %d nodes of many_stacks.py"
                    % (tag, push[0], chain[0], push[1] + chain[1], pushed, nodes))
    finally:
        pt.discard(log)


def check_double_free(python, tag):
    if not args.cuda_doubles or not args.replay:
        return
    free_line = pt.line_of(double_free, "free")
    second_line = pt.line_of(double_free, "second")
    run, log = pt.run_traced_keep([python, double_free, args.cuda_doubles], args.preload, args.pylog,
                                  env={"LD_LIBRARY_PATH": args.cuda_doubles})
    try:
        frees = run.of("cuda_free")
        fails.check(len(frees) == 2 and all(e["py"] and e["py"][0][1] == free_line for e in frees),
                    "%s: cudaFree through ctypes without its Python line: %s"
                    % (tag, [e["py"][:2] for e in frees]))
        out = subprocess.run([args.replay, "check", log], capture_output=True, text=True)
        fails.check(out.returncode == 1 and "double_free" in out.stdout and
                    "ctypes_double_free.py:%d" % free_line in out.stdout and
                    "ctypes_double_free.py:%d" % second_line in out.stdout,
                    "%s: trace-replay check does not name the Python lines of the double free "
                    "(exit %d):\n%s" % (tag, out.returncode, out.stdout[-1500:]))
    finally:
        pt.discard(log)


# Deep stacks that differ in one frame or another, one allocation each: the
# readers resolve each distinct frame once.  trace-dump --json once kept
# every stack's frames as text of their own, and ran out of memory on a
# 2 MB log of 300,000 such stacks (PyTorch's training loop, 12 MB, too).
DEEP_DISTINCT = """\
import sys
sys.setrecursionlimit(1000)
class O:
    pass
def walk(d, k):
    if d == 0:
        return O()
    if k & 1:
        return walk(d - 1, k >> 1)
    return walk(d - 1, k >> 1)
for k in range(int(sys.argv[1])):
    walk(100, k)
"""



def check_dump_memory(python, tag):
    if not args.dump:
        return
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "deep_distinct.py")
        with open(prog, "w") as f:
            f.write(DEEP_DISTINCT)
        run, log = pt.run_traced_keep([python, prog, "20000"], args.preload, args.pylog,
                                      env={"TRACE_PY_ALLOCS": "1"})
        try:
            mib = {mode: pt.peak_rss_mib([args.dump, mode, log]) for mode in ("--summary", "--json")}
            # 20,000 stacks of 101 frames: about 8 MiB of frame numbers,
            # against 270 MiB when each stack's frames had their own text
            extra = mib["--json"] - mib["--summary"]
            fails.check(run.proc.returncode == 0 and mib["--summary"] > 0 and extra < 100,
                        "%s: trace-dump --json takes %d MiB more than --summary on 20,000 distinct 101-frame "
                        "stacks (expected under 100)" % (tag, extra))
        finally:
            pt.discard(log)


SUBINTERP = pt.workload("subinterp_released.py")


def check_subinterpreter_released(python, version, tag):
    """Code run in a subinterpreter that released the GIL (ctypes) was given
    the main interpreter's stack on 3.8 to 3.11 (the run_string line): the
    thread's GIL-state key holds its main-interpreter state there, and
    nothing says which state the thread released.  Its allocation now has
    the subinterpreter's own stack (3.12+) or none (3.8 to 3.11, while a
    subinterpreter exists), never the main interpreter's; with the GIL held
    it is the subinterpreter's, and the main interpreter's own allocation
    made once the subinterpreters are gone keeps its stack."""
    if "libasan" in args.preload:
        # The sanitizer build leaves malloc to the sanitizer: ctypes'
        # mallocs, the events this check reads, are not recorded there.
        print("   subinterpreter stacks: the sanitizer build records no malloc; skipped")
        return
    run = pt.run_traced([python, SUBINTERP], args.preload, args.pylog)
    if run.proc.returncode == 77:
        print("   subinterpreter stacks: %s has no subinterpreter module; skipped" % tag)
        return
    if not fails.check(run.proc.returncode == 0, "%s: subinterp_released.py failed: %s"
                       % (tag, run.proc.stderr[-800:])):
        return
    with open(SUBINTERP) as f:
        sub_at = next(n for n, text in enumerate(f, 1) if text.startswith("SUB = "))
    in_sub = lambda marker: pt.line_of(SUBINTERP, marker) - sub_at + 1
    base = 3 << 20
    by_size = {}
    for e in run.of("host_alloc"):
        if base < e["size"] <= base + 32:
            by_size.setdefault(e["size"] - base, []).append(e)
    frames = lambda e: [(f[0].rsplit("/", 1)[-1], f[1], f[2]) for f in e["py"][:2]]
    minor = int(version.split(".")[1])
    for k, where in ((1, "main thread"), (2, "its own thread")):
        got = by_size.get(k, [])
        if not fails.check(len(got) == 1, "%s: %d allocations of 3 MiB + %d, expected 1"
                           % (tag, len(got), k)):
            continue
        stack = frames(got[0])
        outer = stack[1][1] if len(stack) > 1 else 0
        right = [("<string>", in_sub("sub-released"), "sub_alloc"), ("<string>", outer, "sub_outer")]
        fails.check(stack == right or (minor < 12 and stack == []),
                    "%s: allocation with the GIL released in a subinterpreter (%s) has the stack %s, "
                    "expected %s%s" % (tag, where, stack, right, " or none" if minor < 12 else ""))
    for k, where in ((11, "main thread"), (21, "its own thread")):
        got = by_size.get(k, [])
        if not fails.check(len(got) == 1, "%s: %d allocations of 3 MiB + %d, expected 1"
                           % (tag, len(got), k)):
            continue
        stack = frames(got[0])
        fails.check(stack[:1] == [("<string>", in_sub("sub-held"), "sub_held")],
                    "%s: allocation with the GIL held in a subinterpreter (%s) has the stack %s"
                    % (tag, where, stack))
    got = by_size.get(3, [])
    if fails.check(len(got) == 1, "%s: %d allocations of 3 MiB + 3, expected 1" % (tag, len(got))):
        main_line = pt.line_of(SUBINTERP, "main-released")
        fails.check(frames(got[0])[:1] == [("subinterp_released.py", main_line, "main_alloc")],
                    "%s: the main interpreter's allocation with the GIL released has the stack %s"
                    % (tag, frames(got[0])))


def check_all(python, version):
    check(python, version)
    check_subinterpreter_released(python, version, "%s (%s)" % (version, python))
    if version == "3.12":
        check_dump_memory(python, "%s (%s)" % (version, python))


pt.for_each_interpreter(args.python, check_all, fails)
