"""CuPy's memory pool through its MemoryHook, against a stand-in cupy package
(fake_cupy/) that calls the hooks as CuPy does: every request gives
pool_op_begin / pool_alloc or pool_free / pool_op_end with requested and
granted sizes and pointers, on every thread that allocates (one started before
the import too, from its first collection on), with no change to the program;
a collection that frees pooled memory during a malloc is nested
in that malloc.  A thread that ran before the import and frees a block before
its first collection (cupy_unwatched_free.py) is not watched: the log says so
(INFO pool_unwatched), and trace-replay's verdict on the overlap this leaves
is INCONCLUSIVE, not a VIOLATION of a pool that did nothing wrong.  Two
devices' pools (cupy_two_devices.py) are two pools in the log, each followed
by the model."""
import os
import subprocess

import pytrace as pt

def extra(p):
    p.add_argument("--replay", required=True)
    p.add_argument("--cuda-doubles", required=True)


args = pt.parse_args(extra)
fails = pt.Failures()
script = pt.workload("cupy_pool.py")
early = pt.workload("cupy_early_thread.py")
unwatched = pt.workload("cupy_unwatched_free.py")
two_devices = pt.workload("cupy_two_devices.py")
FAKE = os.path.join(pt.HERE, "fake_cupy")
ALLOC, FREE = 1, 2


def ops(run):
    """[(begin, [events inside], end)] for every pool operation."""
    by_seq = run.by_seq()
    ends = {e["begin"]: e for e in run.of("pool_op_end")}
    out = []
    for b in run.of("pool_op_begin"):
        inside = [e for e in run.events if e["parent"] == b["seq"]]
        out.append((b, inside, ends.get(b["seq"])))
    return out, by_seq


def check_unwatched(python, tag):
    run, log = pt.run_traced_keep([python, unwatched], args.preload, args.pylog, env={"PYTHONPATH": FAKE})
    try:
        if not fails.check(run.proc.returncode == 0 and "reused: True" in run.proc.stdout,
                           "%s: cupy_unwatched_free failed or the block did not come back: %r %s"
                           % (tag, run.proc.stdout, run.proc.stderr[-500:])):
            return
        fails.check(any(v.startswith("cupy: 1 other thread") for v in run.info("pool_unwatched")),
                    "%s: no INFO pool_unwatched for the thread running before the import: %s"
                    % (tag, run.info("pool_unwatched")))
        out = subprocess.run([args.replay, "check", log], capture_output=True, text=True)
        fails.check(out.returncode == 3 and "VIOLATION" not in out.stdout and
                    "not every thread's pool requests were recorded" in out.stdout,
                    "%s: check of an unwatched thread's free (exit %d): %s" % (tag, out.returncode, out.stdout[-900:]))
    finally:
        pt.discard(log)


def check_two_devices(python, tag):
    """A pool per device, as CuPy keeps them: each device's requests go to a
    pool of their own ("cupy device 1"), and the model follows both (with
    one pool for both it left the log on half its answers)."""
    env = {"PYTHONPATH": FAKE, "LD_LIBRARY_PATH": args.cuda_doubles,
           "FAKE_CUPY_CUDART": os.path.join(args.cuda_doubles, "libcudart.so.13")}
    run, log = pt.run_traced_keep([python, two_devices], args.preload, args.pylog, env=env)
    try:
        if not fails.check(run.proc.returncode == 0, "%s: cupy_two_devices failed: %s" % (tag, run.proc.stderr[-500:])):
            return
        names = sorted(run.pools.values()) if isinstance(run.pools, dict) else sorted(run.pools)
        fails.check(names == ["cupy", "cupy device 1"], "%s: pools %s, expected one per device" % (tag, names))
        out = subprocess.run([args.replay, "check", "--model", "cupy", log], capture_output=True, text=True)
        fails.check(out.returncode == 0 and " 0 diverged" in out.stdout,
                    "%s: two devices' pools (exit %d): %s" % (tag, out.returncode, out.stdout[-600:]))
    finally:
        pt.discard(log)


def check(python, version):
    tag = "%s (%s)" % (version, python)
    check_unwatched(python, tag)
    check_two_devices(python, tag)
    env = {"PYTHONPATH": FAKE}
    bare = pt.run_traced([python, script], args.preload, args.pylog, env=env, trace=False)
    run = pt.run_traced([python, script], args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0 and run.proc.stdout == bare.proc.stdout,
                       "%s: program changed: rc %d, %r vs %r, %s" % (tag, run.proc.returncode, run.proc.stdout,
                                                                     bare.proc.stdout, run.proc.stderr[-600:])):
        return
    fails.check(any(v.startswith("on") for v in run.info("cupy")), "%s: no 'cupy on' INFO: %s" % (tag, run.info("cupy")))
    fails.check("cupy" in run.pools.values(), "%s: no pool named cupy: %s" % (tag, run.pools))
    all_ops, by_seq = ops(run)
    mallocs = [o for o in all_ops if o[0]["op"] == ALLOC]
    frees = [o for o in all_ops if o[0]["op"] == FREE]
    fails.check(len(mallocs) == 10, "%s: %d malloc operations, expected 10" % (tag, len(mallocs)))
    fails.check(len(frees) == 10, "%s: %d free operations, expected 10" % (tag, len(frees)))
    fails.check(all(end is not None and end["tid"] == b["tid"] for b, _, end in all_ops),
                "%s: an operation without its pool_op_end" % tag)
    for b, inside, _ in mallocs:
        got = [e for e in inside if e["kind"] == "pool_alloc"]
        if fails.check(len(got) == 1, "%s: malloc %d holds %d pool_alloc" % (tag, b["seq"], len(got))):
            a = got[0]
            fails.check(a["requested"] == b["arg"] and a["granted"] == (a["requested"] + 511) // 512 * 512
                        and a["ptr"] != 0, "%s: pool_alloc fields wrong: %s (begin arg %d)" % (tag, a, b["arg"]))
    for b, inside, _ in frees:
        got = [e for e in inside if e["kind"] == "pool_free"]
        fails.check(len(got) == 1 and got[0]["ptr"] == b["arg"] and got[0]["granted"] > 0,
                    "%s: free %d: %s" % (tag, b["seq"], got))
    nested = [b for b, _, _ in frees
              if by_seq.get(b["parent"], {}).get("kind") == "gc_start"
              and by_seq.get(by_seq[b["parent"]]["parent"], {}).get("kind") == "pool_op_begin"]
    fails.check(len(nested) == 6, "%s: %d frees nested in a collection inside a malloc, expected 6"
                % (tag, len(nested)))
    ladder = pt.line_of(script, "ladder")
    outer = [by_seq[by_seq[b["parent"]]["parent"]] for b in nested]
    fails.check(all(o["py"] and o["py"][-1][1] == ladder for o in outer),
                "%s: the malloc holding the collection is not at cupy_pool.py:%d" % (tag, ladder))
    threads = {b["tid"] for b, _, _ in mallocs}
    fails.check(len(threads) == 2, "%s: mallocs recorded on %d threads, expected 2" % (tag, len(threads)))
    # A thread that predates the import and raises no audit event: its
    # requests are recorded from its first collection on.
    run = pt.run_traced([python, early], args.preload, args.pylog, env=env)
    if not fails.check(run.proc.returncode == 0, "%s: cupy_early_thread failed: %s"
                       % (tag, run.proc.stderr[-600:])):
        return
    all_ops, _ = ops(run)
    by_thread = {}
    for b, _, _ in all_ops:
        by_thread.setdefault(b["tid"], []).append(b["op"])
    worker = [ops_ for tid, ops_ in by_thread.items() if tid != run.of("pool_op_begin")[0]["tid"]]
    fails.check(worker == [[ALLOC, FREE] * 3], "%s: the early thread's requests: %s, expected 3 mallocs "
                "and 3 frees" % (tag, worker))


pt.for_each_interpreter(args.python, check, fails)
