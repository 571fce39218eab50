"""gc_start/gc_stop against the interpreter's own statistics: on every
interpreter, the collections recorded while the workload runs are exactly those
gc.get_stats() counts, per generation, with the same collected and
uncollectable totals; each gc_start opens an operation closed by its gc_stop,
carries both stacks and the allocation counters."""
import json
import os
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
script = pt.workload("gc_cycles.py")


def in_workload(event):
    """Collections run while main() measures (not while modules import)."""
    return any(frame[0].endswith("gc_cycles.py") and frame[2] in ("main", "churn") for frame in event["py"])


def check_pairs(run, tag):
    """Every gc_start is followed, on its thread, by its gc_stop."""
    starts = {}
    for e in run.events:
        if e["kind"] == "gc_start":
            fails.check(e["tid"] not in starts, "%s: gc_start %d inside another collection" % (tag, e["seq"]))
            starts[e["tid"]] = e
        elif e["kind"] == "gc_stop":
            start = starts.pop(e["tid"], None)
            if not fails.check(start is not None, "%s: gc_stop %d without gc_start" % (tag, e["seq"])):
                continue
            fails.check(start["generation"] == e["generation"], "%s: generations differ %d" % (tag, e["seq"]))
            fails.check(e["parent"] == start["parent"], "%s: gc_stop %d not at its start's level" % (tag, e["seq"]))
            fails.check(e["duration_ns"] > 0, "%s: gc_stop %d has no duration" % (tag, e["seq"]))


def check_against_stats(run, stats, tag):
    recorded = [e for e in run.of("gc_start") if in_workload(e)]
    stop_of = {}
    open_start = {}
    for e in run.events:
        if e["kind"] == "gc_start":
            open_start[e["tid"]] = e
        elif e["kind"] == "gc_stop" and e["tid"] in open_start:
            stop_of[open_start.pop(e["tid"])["seq"]] = e
    for g in range(3):
        before, after = stats["before"][g], stats["after"][g]
        mine = [e for e in recorded if e["generation"] == g]
        want = after["collections"] - before["collections"]
        fails.check(len(mine) == want, "%s gen %d: %d collections recorded, get_stats says %d"
                    % (tag, g, len(mine), want))
        for field in ("collected", "uncollectable"):
            got = sum(stop_of[e["seq"]][field] for e in mine if e["seq"] in stop_of)
            want = after[field] - before[field]
            fails.check(got == want, "%s gen %d: %s %d recorded, get_stats says %d"
                        % (tag, g, field, got, want))
    fails.check(all(e["native_depth"] > 0 for e in recorded), "%s: gc_start without native stack" % tag)
    fails.check(all(e["py"][0][2] for e in recorded), "%s: gc_start without function name" % tag)


def check_alloc_counters(run, stats, tag):
    """Automatic young collections come after at least threshold[0] GC
    allocations; older generations count at least as many as younger ones;
    the explicit gc.collect(0) sees the count gc.get_count() gave just before
    (give or take the tuple it returned).  The first collection after
    attaching is left out (counting began then)."""
    starts = [e for e in run.of("gc_start") if in_workload(e)][1:]
    explicit = [e for e in starts if e["generation"] == 0 and e["py"][0][2] == "main"]
    if fails.check(len(explicit) == 1, "%s: %d explicit gc.collect(0)" % (tag, len(explicit))):
        got, want = explicit[0]["allocs"][0], stats["young_before_collect0"]
        fails.check(abs(got - want) <= 2, "%s: gc.collect(0) after %d allocations, gc.get_count() said %d"
                    % (tag, got, want))
    auto = [e for e in starts if e["generation"] == 0 and e["py"][0][2] == "churn"]
    fails.check(len(auto) > 0, "%s: no automatic young collection" % tag)
    low = [e["allocs"][0] for e in auto if e["allocs"][0] < stats["threshold"][0]]
    fails.check(not low, "%s: young collections after fewer allocations than the threshold: %s"
                % (tag, low[:5]))
    fails.check(all(e["allocs"][0] <= e["allocs"][1] <= e["allocs"][2] for e in starts),
                "%s: allocation counters not ordered by generation" % tag)


interpreters = pt.find_interpreters(args.python)
if not interpreters:
    raise SystemExit(pt.SKIP)
for python, version in interpreters:
    tag = "%s (%s)" % (version, python)
    print("==", tag)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stats.json")
        run = pt.run_traced([python, script, out], args.preload, args.pylog)
        if not fails.check(run.proc.returncode == 0 and os.path.exists(out),
                           "%s: workload failed: %s" % (tag, run.proc.stderr[-800:])):
            continue
        with open(out) as f:
            stats = json.load(f)
    check_pairs(run, tag)
    check_against_stats(run, stats, tag)
    check_alloc_counters(run, stats, tag)
    fails.check(not run.of("py_double_init"), "%s: py_double_init on an ordinary program" % tag)
fails.finish()
