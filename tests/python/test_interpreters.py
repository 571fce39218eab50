"""Interpreters other than the one python starts (issue 12, point 7).

- Subinterpreters (3.12, 3.13): each one's collections are recorded, with its
  interpreter id, and the 3 MiB buffer its collection frees is nested in that
  collection.  3.8 to 3.11 through _testcapi.run_in_subinterp: the same, each
  collection recorded once (3.8 shares one gc.callbacks among interpreters).
- A subinterpreter ended 150 ms after its last Python code, from the main
  thread and a thread of its own: the program exits normally (3.8 aborted,
  the thread's name looked up after the interpreter's modules were gone).
- Embedding: a program that calls Py_Initialize / Py_FinalizeEx three times
  (embed_rounds.c, built here against each shared interpreter) is traced in
  every round: its gc.collect() and the buffer that collection frees; with
  PYTHONMALLOC=debug too (the audit hook's entry, re-registered each round,
  goes back to the allocator that made it).
- A program that opens libpython with dlopen (embed_dlopen.c), RTLD_LOCAL
  (no global lookup reaches the library: the tracer's Py_InitializeEx found
  no real one and the program crashed) and RTLD_GLOBAL: it runs as it does
  bare, and both rounds are traced as embed_rounds' are; or, where the
  library's Py_Initialize does not reach ours (Debian's), the first, and the
  log says the second was not (not_watched).
- Rounds leave nothing of ours behind: embed_live.c counts the object blocks
  still allocated after each of four rounds; from the second on they stay
  as many as bare (our interned strings kept 6 blocks per round on 3.11)."""
import os
import subprocess
import sys
import sysconfig
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
HERE = os.path.dirname(os.path.abspath(__file__))
BUF = 3 << 20


def buffers(run):
    return [e for e in run.of("host_alloc") if BUF <= e["size"] <= BUF + 64]


def freed_in(run, alloc):
    later = [f for f in run.of("host_free") if f["ptr"] == alloc["ptr"] and f["seq"] > alloc["seq"]]
    if not later:
        return None
    parent = run.by_seq().get(min(later, key=lambda f: f["seq"])["parent"])
    return parent if parent and parent["kind"] == "gc_start" else None


def check_capi_subinterpreters(python, version, tag):
    """3.8 to 3.11, through _testcapi: each subinterpreter's collection is
    recorded once, naming it (3.8's collector and gc.callbacks are the
    runtime's, shared by every interpreter: one callable of ours in the list,
    not one more per subinterpreter, each called per collection), and frees
    its buffer.  3.9 makes no callbacks list for a subinterpreter (its gc
    module is a copy of the main one's): not_watched says so, and nothing is
    added to the main interpreter's list."""
    run = pt.run_traced([python, pt.workload("subinterpreters_capi.py")], args.preload, args.pylog)
    if run.proc.returncode == 77:
        print("   subinterpreters: %s has no _testcapi; skipped" % version)
        return
    if not fails.check(run.proc.returncode == 0, "%s: subinterpreters failed: %s"
                       % (tag, run.proc.stderr[-800:])):
        return
    fails.check(run.proc.stdout.strip() == "1", "%s: gc.callbacks holds %s callables, expected 1"
                % (tag, run.proc.stdout.strip()))
    open_start = {}
    for e in run.events:
        if e["kind"] == "gc_start":
            fails.check(e["tid"] not in open_start, "%s: gc_start %d inside collection %d"
                        % (tag, e["seq"], open_start.get(e["tid"], 0)))
            open_start[e["tid"]] = e["seq"]
        elif e["kind"] == "gc_stop":
            open_start.pop(e["tid"], None)
    fails.check(not run.info("gc_stop_unseen"), "%s: collections whose stop was not seen" % tag)
    bufs = buffers(run)
    fails.check(len(bufs) == 2, "%s: %d buffers, expected 2" % (tag, len(bufs)))
    if version == "3.9":
        # Its subinterpreters' collectors have no callbacks list to call:
        # their collections cannot be seen, and the log says so.
        fails.check(any("subinterpreter" in v for v in run.info("not_watched")),
                    "%s: no not_watched for subinterpreters' collections" % tag)
        return
    owners = [freed_in(run, b)["interp"] for b in bufs if freed_in(run, b)]
    fails.check(len(owners) == 2 and all(i > 0 for i in owners),
                "%s: buffers freed by collections of interpreters %s, expected two subinterpreters"
                % (tag, owners))


def check_subinterpreters(python, version, tag):
    if int(version.split(".")[1]) < 12:
        check_capi_subinterpreters(python, version, tag)
        return
    run = pt.run_traced([python, pt.workload("subinterpreters.py")], args.preload, args.pylog)
    if not fails.check(run.proc.returncode == 0, "%s: subinterpreters failed: %s"
                       % (tag, run.proc.stderr[-800:])):
        return
    ids = [int(x) for x in run.proc.stdout.split()]
    for interp in ids:
        starts = [e for e in run.of("gc_start") if e["interp"] == interp]
        fails.check(starts, "%s: no collection recorded for subinterpreter %d" % (tag, interp))
    fails.check(any(e["interp"] == 0 for e in run.of("gc_start")),
                "%s: the main interpreter's collections lost" % tag)
    bufs = buffers(run)
    fails.check(len(bufs) == len(ids), "%s: %d buffers, expected %d" % (tag, len(bufs), len(ids)))
    owners = sorted(freed_in(run, b)["interp"] for b in bufs if freed_in(run, b))
    fails.check(owners == sorted(ids), "%s: buffers freed by collections of interpreters %s, "
                "expected %s" % (tag, owners, ids))
    # Every GC allocation recorded, with the filter learning call sites
    # while subinterpreters allocate (python_alloc_sites.c).
    run = pt.run_traced([python, pt.workload("subinterpreters.py")], args.preload, args.pylog,
                        env={"TRACE_PY_ALLOCS": "1"})
    fails.check(run.proc.returncode == 0 and run.of("py_alloc"),
                "%s: subinterpreters with TRACE_PY_ALLOCS=1: exit %d, %d py_alloc: %s"
                % (tag, run.proc.returncode, len(run.of("py_alloc")), run.proc.stderr[-800:]))


def check_subinterpreter_end(python, version, tag):
    """A subinterpreter ended long after its last Python code ran (the
    thread's name looked up at its "cpython.PyInterpreterState_Clear"): on
    3.8 that lookup aborted the program once the interpreter's modules were
    gone (subinterp_end_late.py)."""
    run = pt.run_traced([python, pt.workload("subinterp_end_late.py")], args.preload, args.pylog)
    if run.proc.returncode == 77:
        print("   subinterpreter end: %s has no subinterpreter module; skipped" % tag)
        return
    fails.check(run.proc.returncode == 0 and run.proc.stdout == "ok\n",
                "%s: subinterp_end_late.py failed (%d): %s" % (tag, run.proc.returncode, run.proc.stderr[-500:]))
    fails.check(run.info("ending") == ["exit"], "%s: subinterp_end_late.py's log ends with %s"
                % (tag, run.info("ending")))


def check_embedding(python, version, tag):
    embed = pt.embedding(python)
    if not embed:
        print("   embedding: %s has no shared libpython; skipped" % tag)
        return
    home = embed.home
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "embed_rounds")
        failed = embed.build(os.path.join(HERE, "embed_rounds.c"), exe)
        if not fails.check(not failed, "%s: %s" % (tag, failed)):
            return
        run = pt.run_traced([exe], args.preload, args.pylog, env={"PYTHONHOME": home})
        if not fails.check(run.proc.returncode == 0, "%s: embed_rounds failed (%d): %s"
                           % (tag, run.proc.returncode, run.proc.stderr[-800:])):
            return
        full = [e for e in run.of("gc_start") if e["generation"] == 2 and e["py"]
                and e["py"][0][0] == "<string>"]
        fails.check(len(full) == 3, "%s: %d of 3 rounds' gc.collect() recorded" % (tag, len(full)))
        bufs = buffers(run)
        in_gc = [b for b in bufs if freed_in(run, b)]
        fails.check(len(bufs) == 3 and len(in_gc) == 3,
                    "%s: %d buffers, %d freed by a collection; expected 3 and 3" % (tag, len(bufs), len(in_gc)))
        fails.check(all(b["py"] and b["py"][0][0] == "<string>" for b in bufs),
                    "%s: a round's buffer lacks its Python line: %s" % (tag, [b["py"][:1] for b in bufs]))
        # The debug allocator frees the audit hook's entry at every round's end.
        run = pt.run_traced([exe], args.preload, args.pylog,
                            env={"PYTHONHOME": home, "PYTHONMALLOC": "debug"})
        fails.check(run.proc.returncode == 0, "%s: embed_rounds with PYTHONMALLOC=debug failed (%d): %s"
                    % (tag, run.proc.returncode, run.proc.stderr[-500:]))


def check_embedding_dlopen(python, version, tag):
    embed = pt.embedding(python)
    if not embed:
        print("   embedding with dlopen: %s has no shared libpython; skipped" % tag)
        return
    lib, home = embed.lib, embed.home
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "embed_dlopen")
        cc = subprocess.run(["cc", "-O1", os.path.join(HERE, "embed_dlopen.c"), "-o", exe, "-ldl"],
                            capture_output=True, text=True)
        if not fails.check(cc.returncode == 0, "%s: cc failed: %s" % (tag, cc.stderr[-500:])):
            return
        for mode in ("local", "global"):
            what = "%s: embed_dlopen %s" % (tag, mode)
            run = pt.run_traced([exe, lib, mode], args.preload, args.pylog, env={"PYTHONHOME": home})
            if not fails.check(run.proc.returncode == 0 and run.proc.stdout == "rounds done\n",
                               "%s failed (%d): %s %s" % (what, run.proc.returncode, run.proc.stdout[-200:],
                                                          run.proc.stderr[-800:])):
                continue
            # A libpython whose Py_Initialize calls Py_InitializeEx directly
            # (Debian's) starts its second round without our hook: the log
            # must say so.  The first is traced through the dlopen.
            again = [v for k, v in run.infos if k == "not_watched" and "initialised again" in v]
            rounds = 1 if again else 2
            full = [e for e in run.of("gc_start") if e["generation"] == 2 and e["py"]
                    and e["py"][0][0] == "<string>"]
            fails.check(len(full) == rounds, "%s: %d of %d rounds' gc.collect() recorded (%s)"
                        % (what, len(full), rounds, again))
            bufs = [b for b in buffers(run) if freed_in(run, b)]
            fails.check(len(bufs) == rounds, "%s: %d buffers freed by a collection; expected %d"
                        % (what, len(bufs), rounds))
            # pymalloc's arenas (1 MiB from 3.10) are the interpreter's
            # object memory, not buffers: its arena allocator is known in
            # a library opened RTLD_LOCAL too (old: 7 recorded on 3.12).
            arenas = [e for e in run.of("host_alloc") if e["api"] == "mmap" and e["size"] == 1 << 20]
            fails.check(not arenas, "%s: %d of pymalloc's arenas recorded as host buffers"
                        % (what, len(arenas)))


def check_rounds_leave_nothing(python, version, tag):
    """embed_live.c: the object blocks still allocated after each of four
    rounds stay as many from the second on, as they do bare."""
    embed = pt.embedding(python)
    if not embed:
        print("   rounds' leftovers: %s has no shared libpython; skipped" % tag)
        return
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "embed_live")
        failed = embed.build(os.path.join(HERE, "embed_live.c"), exe)
        if not fails.check(not failed, "%s: %s" % (tag, failed)):
            return
        bare = pt.run_traced([exe], args.preload, args.pylog, env={"PYTHONHOME": embed.home}, trace=False)
        run = pt.run_traced([exe], args.preload, args.pylog, env={"PYTHONHOME": embed.home})
    counts = {}
    for what, r in (("bare", bare), ("traced", run)):
        if not fails.check(r.proc.returncode == 0, "%s: embed_live %s failed (%d): %s"
                           % (tag, what, r.proc.returncode, r.proc.stderr[-500:])):
            return
        counts[what] = [int(l.split()[1]) for l in r.proc.stdout.splitlines() if l.startswith("live ")]
    grew = lambda c: [b - a for a, b in zip(c[1:], c[2:])]
    fails.check(len(counts["traced"]) == 4 and grew(counts["traced"]) == grew(counts["bare"]),
                "%s: object blocks left after each round: %s traced, %s bare" % (tag, counts["traced"],
                                                                                  counts["bare"]))


def check(python, version):
    tag = "%s (%s)" % (version, python)
    check_rounds_leave_nothing(python, version, tag)
    check_subinterpreters(python, version, tag)
    check_subinterpreter_end(python, version, tag)
    check_embedding(python, version, tag)
    check_embedding_dlopen(python, version, tag)


pt.for_each_interpreter(args.python, check, fails)
