"""Seed 002, the ctypes.cast story: with the cast line, the 10 MiB bytearrays
are freed inside collections (host_free nested under a gc_start), each
host_alloc traced to the line that allocated it; without it, reference
counting frees them (no collection parent).  The same with PYTHONMALLOC=malloc
(where the MEM and OBJ domains no longer pass large blocks to RAW).
TRACE_HOST_THRESHOLD above the buffer size records none."""
import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
script = pt.workload("ctypes_cast.py")
alloc_line = pt.line_of(script, "alloc")
BUF = 10485760


def buffers(run):
    allocs = [e for e in run.of("host_alloc") if e["size"] >= BUF]
    frees = {}
    for e in run.of("host_free"):
        frees.setdefault(e["ptr"], []).append(e)
    return allocs, frees


def freed_by(run, alloc, frees):
    """The host_free that ends this allocation (the first one after it)."""
    later = [f for f in frees.get(alloc["ptr"], []) if f["seq"] > alloc["seq"]]
    return min(later, key=lambda f: f["seq"]) if later else None


def check(python, version):
    tag = "%s (%s)" % (version, python)
    for mode, env in (("cast", {}), ("nocast", {}), ("cast", {"PYTHONMALLOC": "malloc"})):
        run = pt.run_traced([python, script, mode], args.preload, args.pylog, env=env)
        t = "%s %s %s" % (tag, mode, env)
        if not fails.check(run.proc.returncode == 0, "%s: workload failed: %s" % (t, run.proc.stderr[-800:])):
            continue
        by_seq = run.by_seq()
        allocs, frees = buffers(run)
        fails.check(len(allocs) == 40, "%s: %d host_alloc of 10 MiB, expected 40" % (t, len(allocs)))
        wrong_line = [a for a in allocs if not (a["py"] and a["py"][0][0].endswith("ctypes_cast.py")
                                               and a["py"][0][1] == alloc_line)]
        fails.check(not wrong_line, "%s: host_alloc not traced to ctypes_cast.py:%d: %s"
                    % (t, alloc_line, [a["py"][:1] for a in wrong_line[:3]]))
        fails.check(all(a["native_depth"] > 0 for a in allocs), "%s: host_alloc without native stack" % t)
        ends = [freed_by(run, a, frees) for a in allocs]
        fails.check(all(ends), "%s: %d buffers never freed" % (t, sum(1 for e in ends if not e)))
        under_gc = [f for f in ends if f and by_seq.get(f["parent"], {}).get("kind") == "gc_start"]
        if mode == "cast":
            fails.check(len(under_gc) >= 38, "%s: only %d of 40 buffers freed inside a collection"
                        % (t, len(under_gc)))
        else:
            fails.check(not under_gc, "%s: %d buffers freed inside a collection without cycles"
                        % (t, len(under_gc)))
            fails.check(all(f and f["parent"] == 0 for f in ends), "%s: refcount frees are nested" % t)
    run = pt.run_traced([python, script, "cast"], args.preload, args.pylog,
                        env={"TRACE_HOST_THRESHOLD": str(BUF * 2)})
    fails.check(not run.of("host_alloc"), "%s: host_alloc below TRACE_HOST_THRESHOLD" % tag)


pt.for_each_interpreter(args.python, check, fails)
