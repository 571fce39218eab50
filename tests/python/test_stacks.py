"""Python stacks: events recorded on a thread that holds the GIL carry its
Python stack (file, line, function, innermost first); a call made with the GIL
released carries none, and never another thread's, even while the main thread
holds the GIL (3.8-3.11 keep one global "current" thread state)."""
import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
script = pt.workload("gil_marks.py")
held_line = pt.line_of(script, "held")
outer_line = pt.line_of(script, "outer")
thread_line = pt.line_of(script, "held-thread")


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
    released = marks(run, "released") + marks(run, "released-thread")
    fails.check(len(released) == 301, "%s: %d marks with the GIL released" % (tag, len(released)))
    fails.check(all(not e["py"] for e in released), "%s: %d marks made without the GIL have a Python "
                "stack, e.g. %s" % (tag, sum(1 for e in released if e["py"]),
                                    [e["py"][:1] for e in released if e["py"]][:2]))
    on_thread = marks(run, "held-thread")
    if fails.check(len(on_thread) == 1, "%s: %d 'held-thread' marks" % (tag, len(on_thread))):
        top = on_thread[0]["py"][:1]
        fails.check(top and top[0][1] == thread_line and top[0][2] == "worker",
                    "%s: worker thread's stack wrong: %s" % (tag, top))


pt.for_each_interpreter(args.python, check, fails)
