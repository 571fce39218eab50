"""Collections whose "stop" never reaches our gc.callbacks entry: a one-shot
callback before ours removes itself in "stop", a finalizer empties the
list, or a program calls our callable by hand.  On every interpreter, with
default settings and with TRACE_PY_ALLOCS=1: every gc_start is closed by a
gc_stop before the thread's next event outside the collection, so nothing
freed by reference counting afterwards is nested in it (a large buffer so
nested is reported as freed only by the collector: a false finding), no
object freed by reference counting is recorded as the collector's
(py_free), a call by hand records no collection, and a list emptied with
ours in it says so (INFO not_watched), in a collection or out of one, with
audit events after it or none.  From 3.10, gc is not imported to put
our callable in the list.  Our callable adds nothing to the young
generation's count beyond what any callback costs (the collector's info
dict): after gc.collect(), gc.get_count() is what it is bare with a Python
callback (it was one more: CPython made an arguments tuple per call)."""
import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
script = pt.workload("gc_callbacks_changed.py")
BLOCK = 10 << 20


def windows(run, tag):
    """(gc_start seq, gc_stop seq) of each collection, checking that they
    pair up on their thread and do not nest."""
    spans, open_start = [], {}
    for e in run.events:
        if e["kind"] == "gc_start":
            fails.check(e["tid"] not in open_start, "%s: gc_start %d while %d is open" %
                        (tag, e["seq"], open_start.get(e["tid"], {}).get("seq", 0)))
            open_start[e["tid"]] = e
        elif e["kind"] == "gc_stop":
            start = open_start.pop(e["tid"], None)
            if fails.check(start is not None, "%s: gc_stop %d without gc_start" % (tag, e["seq"])):
                spans.append((start["seq"], e["seq"]))
    fails.check(not open_start, "%s: collections never closed: %s" %
                (tag, [s["seq"] for s in open_start.values()]))
    return spans


def check_nesting(run, spans, tag):
    """An event nested in a collection lies between its start and stop."""
    starts = {a: b for a, b in spans}
    for e in run.events:
        p = e["parent"]
        if p in starts:
            fails.check(p < e["seq"] < starts[p], "%s: %s %d nested in collection %d, which ended at %d" %
                        (tag, e["kind"], e["seq"], p, starts[p]))
    freed = [e for e in run.of("host_free") if e["parent"] in starts]
    fails.check(not freed, "%s: %d large buffers freed by reference counting nested in a collection" %
                (tag, len(freed)))


def check_py_frees(run, spans, tag):
    """py_free events are the collections' own: each nested in one."""
    starts = {a for a, b in spans}
    outside = [e["seq"] for e in run.of("py_free") if e["parent"] not in starts]
    fails.check(not outside, "%s: %d py_free outside any collection (first %s)" % (tag, len(outside), outside[:3]))


def check_no_import(python, version):
    """The callable goes into the interpreter's own list (on 3.8 and 3.9,
    which make that list when gc is imported, a list the tracer makes there):
    gc is not imported for it (sys.modules, -X importtime and -v would show
    it; before, 3.8 and 3.9 said True)."""
    run = pt.run_traced([python, "-c", "import sys; print('gc' in sys.modules)"], args.preload, args.pylog)
    fails.check(run.proc.stdout.strip() == "False", "%s: gc imported under the preload: %r %s" %
                (version, run.proc.stdout, run.proc.stderr[-300:]))


COUNT = """
import gc, sys
if sys.argv[1] == "with_callback":
    gc.callbacks.append(lambda phase, info: None)
class Node: pass
for i in range(3000):
    a = Node(); b = Node(); a.o = b; b.o = a
gc.collect()
print(gc.get_count())
"""


def check_young_count(python, version):
    bare = pt.run_traced([python, "-c", COUNT, "with_callback"], args.preload, args.pylog, trace=False)
    traced = pt.run_traced([python, "-c", COUNT, "ours_only"], args.preload, args.pylog)
    fails.check(bare.proc.returncode == 0 and traced.proc.stdout == bare.proc.stdout,
                "%s: gc.get_count() after gc.collect(): %r traced, %r bare with a Python callback"
                % (version, traced.proc.stdout.strip(), bare.proc.stdout.strip()))


def check(python, version):
    check_no_import(python, version)
    check_young_count(python, version)
    for mode in ("once", "finalizer", "by_hand", "cleared", "cleared_quiet"):
        for env in ({}, {"TRACE_PY_ALLOCS": "1"}):
            tag = "%s %s%s" % (version, mode, " py_allocs" if env else "")
            run = pt.run_traced([python, script, mode], args.preload, args.pylog, env=env)
            if not fails.check(run.proc.returncode == 0, "%s: exit %d: %s" %
                               (tag, run.proc.returncode, run.proc.stderr[-600:])):
                continue
            spans = windows(run, tag)
            check_nesting(run, spans, tag)
            want = {"once": 10, "finalizer": 8, "by_hand": 6, "cleared": 8, "cleared_quiet": 8}[mode]
            frees = run.of("host_free")
            fails.check(len(frees) >= want, "%s: %d large frees recorded, expected at least %d" %
                        (tag, len(frees), want))
            if env:
                check_py_frees(run, spans, tag)
            if mode in ("once", "finalizer"):
                fails.check(run.info("gc_stop_unseen"), "%s: no gc_stop_unseen info" % tag)
                inferred = [b for a, b in spans if run.by_seq()[b]["duration_ns"] == 0]
                fails.check(inferred, "%s: no gc_stop recorded for the collection whose stop was skipped" % tag)
            removed = [v for v in run.info("not_watched") if "gc.callbacks" in v]
            if mode in ("finalizer", "cleared", "cleared_quiet"):
                fails.check(removed, "%s: no not_watched info for our callback's removal" % tag)
            else:
                fails.check(not removed, "%s: not_watched says our callback went: %s" % (tag, removed))
            if mode == "by_hand":
                lines = {pt.line_of(script, "by_hand"), pt.line_of(script, "by_hand_none")}
                by_hand = [e["seq"] for e in run.of("gc_start")
                           if pt.innermost(e) and pt.innermost(e)[0] == script and pt.innermost(e)[1] in lines]
                fails.check(not by_hand, "%s: calls by hand recorded as collections: %s" % (tag, by_hand))
                fails.check(not run.info("gc_stop_unseen"), "%s: gc_stop_unseen without a skipped stop" % tag)


pt.for_each_interpreter(args.python, check, fails)
