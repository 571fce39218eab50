"""Tests of `trace-replay report` over several logs (a process tree): real
process trees traced under the preload, and logs built with the test log
builder (trace-replay import).

    tree_test.py CASE --preload LIB --replay BIN [--cuda-doubles DIR] [--workdir DIR]

Cases: multiprocessing (a Pool's workers through the CUDA doubles, fork and
spawn: the tree, per-process findings, totals, the worst verdict naming the
worker with the double free; a directory and a list of logs), exec (a child
that exec's another program, which starts a grandchild: the exec'd image
under the image that exec'd it), ranks (a job run four times with RANK=i, one
rank reserving far more: ranked by peak, that rank listed as differing),
verdicts (built logs: violation > inconclusive > clean, exit statuses,
unreadable and non-log files, logs joined with cat, pid reuse, the JSON
members documented in docs/report-json.md), html (the page renders the tree
in headless Chromium), trace_run (scripts/trace-run prints one merged
report for a multiprocessing run), segments (a log's segment files named
together are one process).  Exit status 77: skipped.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from report_test import MiB, ROOT, SKIP, fail, find_chromium  # noqa: E402


def need_doubles(args):
    if not args.cuda_doubles:
        print("SKIP: no CUDA test doubles in this build")
        sys.exit(SKIP)


def fresh(work, name):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run_traced(args, argv, output, env_extra=None):
    env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=output, TRACE_QUIET="1")
    if args.cuda_doubles:
        env["LD_LIBRARY_PATH"] = args.cuda_doubles
    env.update(env_extra or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (argv, p.returncode, p.stderr[-3000:]))
    return p.stdout


def report(args, paths, *extra, status=None):
    p = subprocess.run([args.replay, "report"] + list(paths) + list(extra), capture_output=True, text=True,
                       timeout=300)
    if status is not None and p.returncode != status:
        fail("trace-replay report %s exited %d, not %d: %s\n%s" % (" ".join(paths + list(extra)), p.returncode, status,
                                                                  p.stderr, p.stdout[-3000:]))
    return p


def single_status(args, log):
    return report(args, [log]).returncode


def by_pid(doc):
    out = {}
    for p in doc["processes"]:
        out.setdefault(p["pid"], []).append(p)
    return out


def check_tree_shape(doc):
    """Every process's parent and children agree, and order is a depth-first
    walk of the roots."""
    procs = doc["processes"]
    for p in procs:
        for k in p["children"]:
            if procs[k]["parent"] != p["index"]:
                fail("child %d of %d names parent %r" % (k, p["index"], procs[k]["parent"]))
        if p["parent"] is None and p["index"] not in doc["roots"]:
            fail("process %d has no parent but is not a root" % p["index"])
        if p["parent"] is not None:
            up = procs[p["parent"]]
            want = p["pid"] if p["relation"] == "exec" else p["ppid"]
            if up["pid"] != want:
                fail("process %d (%s) hangs under pid %d" % (p["pid"], p["relation"], up["pid"]))
    walk = []

    def visit(i):
        walk.append(i)
        for k in procs[i]["children"]:
            visit(k)
    for r in doc["roots"]:
        visit(r)
    if walk != doc["order"] or sorted(walk) != list(range(len(procs))):
        fail("order %r is not the tree's walk %r" % (doc["order"], walk))


def multiprocessing_case(args, work):
    need_doubles(args)
    prog = os.path.join(HERE, "workloads", "mp_pool.py")
    for method, tasks, bad in (("fork", 6, 4), ("spawn", 4, 1)):
        d = fresh(work, method)
        out = run_traced(args, [sys.executable, prog, args.cuda_doubles, method, str(tasks), str(bad)],
                         os.path.join(d, "mp-%p.tlog"))
        ran = json.loads(out.strip().splitlines()[-1])
        root, bad_pid = ran["root"], ran["tasks"][str(bad)]
        logs = sorted(glob.glob(os.path.join(d, "*.tlog")))
        workers = set(ran["tasks"].values())
        if len(logs) < 1 + len(workers):
            fail("%s: %d logs for a root and %d workers" % (method, len(logs), len(workers)))
        # A directory and the list of its logs give the same report.
        text = report(args, [d], status=1).stdout
        print(text)
        doc = json.loads(report(args, [d], "--json", status=1).stdout)
        listed = json.loads(report(args, logs, "--json", status=1).stdout)
        if [p["pid"] for p in listed["processes"]] != [p["pid"] for p in doc["processes"]] or \
                listed["verdict"]["text"] != doc["verdict"]["text"]:
            fail("%s: a directory and the list of its logs differ" % method)
        check_tree_shape(doc)
        if len(doc["processes"]) != len(logs) or doc["unreadable"]:
            fail("%s: %d processes from %d logs, unreadable %r" % (method, len(doc["processes"]), len(logs),
                                                                    doc["unreadable"]))
        pids = by_pid(doc)
        top = [doc["processes"][i] for i in doc["roots"]]
        if len(top) != 1 or top[0]["pid"] != root:
            fail("%s: roots %r, expected only the pool's parent %d" % (method, [p["pid"] for p in top], root))
        for w in workers:
            if w not in pids or pids[w][0]["parent"] != top[0]["index"] or pids[w][0]["relation"] != "child":
                fail("%s: worker %d is not a child of the root: %r" % (method, w, pids.get(w)))
        # The verdict is the worst process's, and names it: the worker that
        # ran the bad task, whose own report says violation; the others' say clean.
        v = doc["verdict"]
        worst = doc["processes"][v["process"]]
        if v["result"] != "violation" or v["exit_status"] != 1 or worst["pid"] != bad_pid:
            fail("%s: verdict %r names pid %d, the double free was in %d" % (method, v, worst["pid"], bad_pid))
        if "double_free" not in v["text"] or "in pid %d (" % bad_pid not in v["text"]:
            fail("%s: verdict text %r" % (method, v["text"]))
        for p in doc["processes"]:
            want = 1 if p["pid"] == bad_pid else 0
            if p["verdict"]["exit_status"] != want or single_status(args, p["log"]) != want:
                fail("%s: pid %d verdict %r, its own report %d, expected %d" % (
                    method, p["pid"], p["verdict"], single_status(args, p["log"]), want))
            if p["report"]["schema"] != "trace-replay-report/2" or p["report"]["process"]["pid"] != p["pid"]:
                fail("%s: process %d carries no report of its own" % (method, p["pid"]))
        # Per-process findings and the totals: 4 MiB per task freed only by
        # a collection, each charged to the worker that ran it.
        gc_by_worker = {w: 0 for w in workers}
        for t, w in ran["tasks"].items():
            gc_by_worker[w] += 4 * MiB
        for w, b in gc_by_worker.items():
            p = pids[w][0]
            if p["freed_in_collections_device_bytes"] != b:
                fail("%s: worker %d: %d bytes freed by collections, expected %d" % (
                    method, w, p["freed_in_collections_device_bytes"], b))
            if not any(f.startswith("freed only by garbage collections: device %.1f MiB" % (b / MiB))
                       for f in p["findings"]):
                fail("%s: worker %d findings %r" % (method, w, p["findings"]))
        t = doc["totals"]
        if t["freed_in_collections_device_bytes"] != 4 * MiB * tasks or t["processes"] != len(logs) or \
                t["verdicts"] != {"violation": 1, "inconclusive": 0, "clean": len(logs) - 1} or \
                t["events"] != sum(p["events"] for p in doc["processes"]) or \
                t["peak_reserved_sum"] != sum(p["peak_reserved"] for p in doc["processes"]):
            fail("%s: totals %r" % (method, t))
        if not max(p["peak_reserved"] for p in doc["processes"]) <= t["peak_reserved_at_once"] <= \
                t["peak_reserved_sum"]:
            fail("%s: held at once %d, not between the largest peak and the sum" % (method, t["peak_reserved_at_once"]))
        if pids[root][0]["peak_reserved"] < 8 * MiB:
            fail("%s: the root's 8 MiB is not in its peak: %r" % (method, pids[root][0]["peak_reserved"]))
        # The text: the tree with the workers under the root, each process's
        # findings and verdict, the totals, one verdict line naming the worker.
        tree = text[text.index("\nProcess tree"):text.index("\nProcesses\n")]
        if not re.search(r"\n  %d python" % root, tree) or \
                len(re.findall(r"\n  [|`]- \d+ ", tree)) < len(workers):
            fail("%s: the tree does not show the workers under the root:\n%s" % (method, tree))
        block = text[text.index("\n  pid %d (parent %d)" % (bad_pid, root)):]
        block = block[:block.index("\n  pid ", 5) if "\n  pid " in block[5:] else block.index("\nTotals")]
        if "[double_free]" not in block or "mp_pool.py:" not in block or "verdict: VIOLATION" not in block:
            fail("%s: the bad worker's block lacks its violation with its stack:\n%s" % (method, block))
        if "\nTotals over %d processes on 1 host\n" % len(logs) not in text:
            fail("%s: no totals" % method)
        last = text.rstrip("\n").splitlines()[-1]
        if not last.startswith("verdict: VIOLATION double_free") or "in pid %d" % bad_pid not in last:
            fail("%s: last line %r" % (method, last))


def exec_case(args, work):
    d = fresh(work, "exec")
    prog = os.path.join(HERE, "workloads", "exec_chain.py")
    ran = json.loads(run_traced(args, [sys.executable, prog], os.path.join(d, "x-%p.tlog")).strip().splitlines()[-1])
    if ran["child"] != ran["before_exec"]:
        fail("exec changed the pid: %r" % ran)
    image_log = os.path.join(d, "x-%d.1.tlog" % ran["child"])
    if not os.path.exists(image_log):
        fail("no log of the exec'd image: %r" % os.listdir(d))
    text = report(args, [d], status=0).stdout
    print(text)
    doc = json.loads(report(args, [d], "--json", status=0).stdout)
    check_tree_shape(doc)
    pids = by_pid(doc)
    images = sorted(pids[ran["child"]], key=lambda p: p["mono_start_ns"])
    if len(images) != 2:
        fail("expected two images of pid %d: %r" % (ran["child"], images))
    first, second = images
    if not (first["ending"] or "").startswith("exec ") or first["relation"] != "child" or \
            doc["processes"][first["parent"]]["pid"] != ran["root"]:
        fail("the image before the exec: %r" % {k: first[k] for k in ("ending", "relation", "parent")})
    if second["relation"] != "exec" or second["parent"] != first["index"] or second["log"] != image_log:
        fail("the exec'd image: %r" % {k: second[k] for k in ("relation", "parent", "log")})
    g = pids[ran["grandchild"]][0]
    if g["parent"] != second["index"]:
        fail("the grandchild hangs under %r, not under the exec'd image" % g["parent"])
    if [doc["processes"][i]["pid"] for i in doc["order"]] != [ran["root"], ran["child"], ran["child"],
                                                              ran["grandchild"]]:
        fail("order %r" % doc["order"])
    if second["peak_host"] < 6 * MiB or first["peak_host"] >= 6 * MiB:
        fail("each image has its own figures: %d, %d" % (first["peak_host"], second["peak_host"]))
    tree = text[text.index("\nProcess tree"):text.index("\nProcesses\n")].splitlines()
    want = [r"^  %d " % ran["root"], r"^  `- %d .*python" % ran["child"],
            r"^     `- %d .*\(exec'd image\)" % ran["child"], r"^        `- %d " % ran["grandchild"]]
    for line, pattern in zip(tree[2:], want):
        if not re.search(pattern, line):
            fail("tree line %r does not match %r" % (line, pattern))


def ranks_case(args, work):
    need_doubles(args)
    d = fresh(work, "ranks")
    prog = os.path.join(HERE, "workloads", "rank_job.py")
    sizes = {"0": 64, "1": 64, "2": 1024, "3": 72}
    for rank, mib in sizes.items():
        run_traced(args, [sys.executable, prog, args.cuda_doubles, str(mib)], os.path.join(d, "job-%r.tlog"),
                   {"RANK": rank})
    if sorted(os.listdir(d)) != ["job-%s.tlog" % r for r in sorted(sizes)]:
        fail("TRACE_OUTPUT %%r: %r" % os.listdir(d))
    text = report(args, [d], status=0).stdout
    print(text)
    doc = json.loads(report(args, [d], "--json", status=0).stdout)
    k = doc["ranks"]
    if k["ordered_by"] != "peak_reserved" or [r["rank"] for r in k["list"]] != ["2", "3", "0", "1"]:
        fail("ranks not by peak: %r" % [(r["rank"], r["peak_reserved"]) for r in k["list"]])
    if k["differ"] != ["2"] or not k["list"][0]["differs"] or "peak device reserved 1.0 GiB" not in k["list"][0]["why"]:
        fail("rank 2 should be the one that differs: %r" % k)
    if any(r["differs"] for r in k["list"][1:]) or k["median"]["peak_reserved"] != 68 * MiB:
        fail("only rank 2 differs, median 68 MiB: %r" % k)
    if any(r["peak_reserved"] != sizes[r["rank"]] * MiB for r in k["list"]):
        fail("rank peaks: %r" % [(r["rank"], r["peak_reserved"]) for r in k["list"]])
    section = text[text.index("\nRanks (4, by peak device reserved"):]
    if not re.search(r"\n  2 +1\.0 GiB .*DIFFERS\n", section) or \
            "    rank 2: peak device reserved 1.0 GiB, 15.1x the median 68.0 MiB" not in section:
        fail("the text's ranks section:\n" + section)
    # Four equal ranks: none differs; two ranks: which is odd cannot be told.
    same = fresh(work, "same")
    for rank in "0123":
        run_traced(args, [sys.executable, prog, args.cuda_doubles, "64"], os.path.join(same, "job-%r.tlog"),
                   {"RANK": rank})
    k = json.loads(report(args, [same], "--json", status=0).stdout)["ranks"]
    if k["differ"] or len(k["list"]) != 4:
        fail("equal ranks: %r" % k)
    two = [os.path.join(d, "job-0.tlog"), os.path.join(d, "job-2.tlog")]
    k = json.loads(report(args, two, "--json", status=0).stdout)["ranks"]
    if k["differ"] or [r["rank"] for r in k["list"]] != ["2", "0"]:
        fail("two ranks: %r" % k)


def import_log(args, out, lines):
    p = subprocess.run([args.replay, "import", "-o", out, "-"], input="\n".join(json.dumps(x) for x in lines) + "\n",
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("import exited %d: %s" % (p.returncode, p.stderr))


def built(args, out, pid, ppid, start, events, info=(), host="node1", cmd="python job.py", end=True):
    lines = [{"kind": "header", "pid": pid, "ppid": ppid, "hostname": host, "cmdline": cmd,
              "mono_start_ns": start, "wall_start_ns": 1700000000 * 10**9 + start}]
    lines += [{"kind": "info", "key": k, "value": v} for k, v in info]
    t = start
    for e in events:
        t = e.pop("at") if "at" in e else t + 1000
        lines.append(dict(e, tid=pid, t_ns=t))
    if end:
        lines.append({"kind": "end", "tid": pid, "t_ns": t + 1000})
    import_log(args, out, lines)
    return out


def alloc(ptr, size):
    return {"kind": "cuda_alloc", "api": "cudaMalloc", "ptr": ptr, "size": size, "device": 0, "result": 0}


def free(ptr):
    return {"kind": "cuda_free", "api": "cudaFree", "ptr": ptr, "device": 0, "result": 0}


def documented_keys():
    with open(os.path.join(ROOT, "docs", "report-json.md")) as f:
        doc = f.read()
    section = doc[doc.index("## Several logs"):]
    # Members are named in code spans: `name`, or `{a, b, c}` for an object's.
    return {w for span in re.findall(r"`([^`]+)`", section) for w in re.findall(r"[a-z_]+", span)}


def verdicts_case(args, work):
    """Built logs: what links, what the verdict is, what the exit status is."""
    d = fresh(work, "built")
    clean = built(args, os.path.join(d, "a.tlog"), 500, 1, 10**9, [alloc(1 << 30, MiB), free(1 << 30)])
    bad = built(args, os.path.join(d, "b.tlog"), 501, 500, 2 * 10**9,
                [alloc(1 << 31, MiB), free(1 << 31), free(1 << 31)])
    # pid 502 ran and exited; later a new process got pid 502 again: not an
    # exec'd image of the first (that one did not end with an exec).
    first = built(args, os.path.join(d, "c.tlog"), 502, 500, 3 * 10**9, [], info=[("ending", "exit")])
    again = built(args, os.path.join(d, "d.tlog"), 502, 500, 4 * 10**9, [])
    other_host = built(args, os.path.join(d, "e.tlog"), 501, 500, 5 * 10**9, [], host="node2")
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a log\n")
    doc = json.loads(report(args, [d], "--json", status=1).stdout)
    check_tree_shape(doc)
    if len(doc["processes"]) != 5 or doc["unreadable"]:
        fail("a text file is not a log, and is passed over: %r" % doc["unreadable"])
    pr = {os.path.basename(p["log"]): p for p in doc["processes"]}
    if pr["d.tlog"]["relation"] != "child" or pr["d.tlog"]["parent"] != pr["a.tlog"]["index"]:
        fail("a reused pid is not an exec: %r" % pr["d.tlog"])
    if pr["e.tlog"]["parent"] is not None or pr["e.tlog"]["relation"] != "root":
        fail("a process of another host is not linked to this host's: %r" % pr["e.tlog"])
    if doc["processes"][doc["verdict"]["process"]]["log"] != bad or "in pid 501 (b.tlog)" not in doc["verdict"]["text"]:
        fail("the verdict names %r" % doc["verdict"])
    # Inconclusive (the fake CuPy pool under the cupy model) beats clean,
    # and a violation beats both; the status is the worst process's.
    inc_dir = fresh(work, "inconclusive")
    inc = os.path.join(inc_dir, "pool.tlog")
    env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=inc, TRACE_QUIET="1",
               PYTHONPATH=os.path.join(ROOT, "tests", "python", "fake_cupy"))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "python", "workloads", "cupy_pool.py")], env=env,
                   check=True, capture_output=True, timeout=300)
    if single_status(args, inc) != 3:
        fail("the fake pool's log should be inconclusive on its own")
    v = json.loads(report(args, [clean, inc], "--json", status=3).stdout)["verdict"]
    if v["result"] != "inconclusive" or not v["text"].startswith("INCONCLUSIVE") or "(pool.tlog)" not in v["text"]:
        fail("clean + inconclusive: %r" % v)
    v = json.loads(report(args, [inc, bad, clean], "--json", status=1).stdout)["verdict"]
    if v["result"] != "violation" or "(b.tlog)" not in v["text"]:
        fail("violation wins: %r" % v)
    text = report(args, [clean, first], status=0).stdout
    if not text.rstrip().splitlines()[-1].startswith("verdict: clean (2 processes: 0 violation, 0 inconclusive, 2 clean"):
        fail("two clean logs: %r" % text.rstrip().splitlines()[-1])
    # Two logs joined with cat are two processes; a broken log is named, and
    # it makes the status 2 unless some process had a violation.
    joined = os.path.join(d, "joined.tlog")
    with open(joined, "wb") as f:
        for part in (clean, bad):
            with open(part, "rb") as g:
                f.write(g.read())
    doc = json.loads(report(args, [joined, first], "--json", status=1).stdout)
    runs = sorted((p["run"], p["pid"]) for p in doc["processes"] if p["log"] == joined)
    if runs != [(1, 500), (2, 501)]:
        fail("logs joined with cat: %r" % runs)
    broken = os.path.join(d, "broken.tlog")
    with open(broken, "wb") as f:
        f.write(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    p = report(args, [clean, broken], "--json", status=2)
    doc = json.loads(p.stdout)
    if [os.path.basename(b["log"]) for b in doc["unreadable"]] != ["broken.tlog"] or doc["verdict"]["exit_status"] != 2:
        fail("an unreadable log: %r" % doc["unreadable"])
    report(args, [bad, broken], status=1)
    text = report(args, [clean, broken], status=2).stdout
    if "unreadable                 " + broken not in text or "1 log could not be read" not in text:
        fail("the text does not name the unreadable log:\n" + text)
    # A whole log without END (a killed process) is not a damaged one: the
    # totals count it apart (they counted it damaged, and no log without an
    # end record).  A log cut inside its last frame is damaged (a traced
    # run flushed twice: its first frame reads).
    killed = built(args, os.path.join(d, "killed.tlog"), 510, 500, 6 * 10**9, [alloc(1 << 29, MiB)], end=False)
    whole, cut = os.path.join(d, "two-frames.tlog"), os.path.join(d, "cut.tlog")
    run_traced(args, [sys.executable, "-c", "import gc, time; gc.collect(); time.sleep(0.3); gc.collect()"], whole)
    with open(whole, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:-7])
    os.remove(whole)
    t = json.loads(report(args, [clean, killed, cut], "--json", status=None).stdout)["totals"]
    text = report(args, [clean, killed, cut], status=None).stdout
    if (t["damaged_logs"], t["logs_without_end"]) != (1, 1) or "1 damaged, 1 without an end record" not in text:
        fail("a killed process's whole log and a cut one: damaged %d, without end %d:\n%s"
             % (t["damaged_logs"], t["logs_without_end"], text[text.index("\nTotals"):]))
    os.remove(killed)
    os.remove(cut)
    # Usage: --run is for one log; a path that does not exist.
    p = report(args, [clean, bad], "--run", "2", status=2)
    if "--run" not in p.stderr:
        fail("--run over several logs: %r" % p.stderr)
    p = report(args, [clean, os.path.join(d, "missing.tlog")], status=2)
    if "missing.tlog" not in p.stderr:
        fail("a missing log: %r" % p.stderr)
    empty = fresh(work, "empty")
    p = report(args, [empty], status=2)
    if "no log in this directory" not in p.stderr:
        fail("an empty directory: %r" % p.stderr)
    # What the tree held at once: A holds 10 MiB from 1 s to 5 s, B 20 MiB
    # from 6 s to 8 s, C 20 MiB from 3 s to 4 s (inside A's); D on another
    # host 5 MiB (hosts' clocks differ: added).
    s = 10**9
    at_once = fresh(work, "at_once")
    a = built(args, os.path.join(at_once, "a.tlog"), 600, 1, 0, [dict(alloc(1 << 30, 10 * MiB), at=1 * s),
                                                                 dict(free(1 << 30), at=5 * s)])
    b = built(args, os.path.join(at_once, "b.tlog"), 601, 600, 5 * s + s // 2,
              [dict(alloc(1 << 31, 20 * MiB), at=6 * s), dict(free(1 << 31), at=8 * s)])
    c = built(args, os.path.join(at_once, "c.tlog"), 602, 600, 2 * s + s // 2,
              [dict(alloc(1 << 32, 20 * MiB), at=3 * s), dict(free(1 << 32), at=4 * s)])
    e = built(args, os.path.join(at_once, "e.tlog"), 603, 1, 0, [alloc(1 << 33, 5 * MiB), free(1 << 33)],
              host="node9")
    for logs, want, total in (([a, b], 20, 30), ([a, b, c], 30, 50), ([a, b, c, e], 35, 55)):
        t = json.loads(report(args, logs, "--json", status=0).stdout)["totals"]
        if t["peak_reserved_at_once"] != want * MiB or t["peak_reserved_sum"] != total * MiB:
            fail("held at once by %s: %d MiB (sum of peaks %d MiB), expected %d (%d)" % (
                [os.path.basename(x) for x in logs], t["peak_reserved_at_once"] // MiB, t["peak_reserved_sum"] // MiB,
                want, total))
    text = report(args, [a, b, c], status=0).stdout
    if "  held at once, at most      device reserved 30.0 MiB" not in text:
        fail("the text's totals lack what was held at once:\n" + text[text.index("\nTotals"):])
    # Every member of the JSON is documented.
    doc = json.loads(report(args, [d, inc], "--json", status=None).stdout)
    ranked = built(args, os.path.join(fresh(work, "ranked"), "r.tlog"), 7, 1, 1, [], info=[("rank", "0")])
    ranked2 = ranked[:-5] + "-copy.tlog"   # one file named twice is read once
    shutil.copyfile(ranked, ranked2)
    rdoc = json.loads(report(args, [ranked, ranked2], "--json", status=0).stdout)
    keys = set(doc) | set(doc["verdict"]) | set(doc["totals"]) | set(doc["totals"]["verdicts"])
    for p in doc["processes"]:
        keys |= set(p) | set(p["verdict"])
    keys |= set(rdoc["ranks"]) | set(rdoc["ranks"]["rule"]) | set(rdoc["ranks"]["median"])
    for r in rdoc["ranks"]["list"]:
        keys |= set(r)
    for b in doc["unreadable"]:
        keys |= set(b)
    missing = sorted(keys - documented_keys())
    if missing:
        fail("JSON members not in docs/report-json.md's 'Several logs': %r" % missing)


def html_case(args, work):
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium (Debian package 'chromium')")
        sys.exit(SKIP)
    d = fresh(work, "exec")
    prog = os.path.join(HERE, "workloads", "exec_chain.py")
    ran = json.loads(run_traced(args, [sys.executable, prog], os.path.join(d, "x-%p.tlog")).strip().splitlines()[-1])
    bad = built(args, os.path.join(d, "z-bad.tlog"), 4000000, ran["root"], 1,
                [alloc(1 << 31, MiB), free(1 << 31), free(1 << 31)], cmd="</script><b>x</b>")
    page = os.path.join(work, "tree.html")
    report(args, [d], "--html", page, status=1)
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=" + os.path.join(work, "profile"),
           "--virtual-time-budget=5000", "--dump-dom", "file://" + page]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = p.stdout
    m = re.search(r'id="status" data-status="(\w+)">([^<]*)', dom)
    if not m or m.group(1) != "rendered":
        fail("page status: %r (chromium exit %d) %s" % (m and m.groups(), p.returncode, p.stderr[-2000:]))
    tree = dom[dom.index('id="tree"'):]
    tree = tree[:tree.index('id="processes"')]
    # Nested lists: the grandchild's item inside the exec'd image's, inside
    # the child's, inside the root's.
    pos = [tree.find('data-pid="%d"' % pid) for pid in (ran["root"], ran["child"], ran["grandchild"])]
    if min(pos) < 0 or not pos[0] < pos[1] < pos[2] or tree.count("<ul") < 3:
        fail("the tree is not drawn as nested lists: %r" % pos)
    if "exec'd image" not in tree or "VIOLATION" not in dom or "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" not in dom:
        fail("the page lacks the exec'd image, the verdict or the escaped command line")
    if 'id="detail-' not in dom or "[double_free] at seq" not in dom:
        fail("the page lacks the processes' details")
    del bad


def trace_run_case(args, work):
    need_doubles(args)
    d = fresh(work, "trace_run")
    script = os.path.join(ROOT, "scripts", "trace-run")
    env = dict(os.environ, TRACE_LIB=args.preload, TRACE_REPLAY=args.replay, LD_LIBRARY_PATH=args.cuda_doubles)
    env.pop("LD_PRELOAD", None)
    prog = os.path.join(HERE, "workloads", "mp_pool.py")
    p = subprocess.run([script, "--output", os.path.join(d, "run-%p.tlog"), "--report-lines", "400", "--",
                        sys.executable, prog, args.cuda_doubles, "fork", "4", "2"],
                       env=env, capture_output=True, text=True, timeout=300)
    print(p.stderr)
    if p.returncode != 0:
        fail("trace-run exited %d" % p.returncode)
    logs = glob.glob(os.path.join(d, "run-*.tlog"))
    # A worker that got no task may have recorded nothing, and then it
    # leaves no log: count the workers that ran tasks.
    workers = set(json.loads(p.stdout.strip().splitlines()[-1])["tasks"].values())
    if len(logs) < 1 + len(workers):
        fail("expected the root's and %d workers' logs: %r" % (len(workers), logs))
    if p.stderr.count("trace-replay report: ") != 1 or \
            "trace-replay report: %d processes (%d logs)" % (len(logs), len(logs)) not in p.stderr:
        fail("trace-run must print one merged report, not one per process")
    if "Process tree" not in p.stderr or not re.search(r"\n  verdict: VIOLATION double_free .* in pid \d+", p.stderr):
        fail("the merged report lacks the tree or the verdict")
    if p.stderr.count("log written to") != 0 or "%d logs written to %s" % (len(logs), d) not in p.stderr:
        fail("trace-run should say where the logs went, once")
    # A cut report still ends with its verdict line.
    os.makedirs(os.path.join(d, "cut"))
    p = subprocess.run([script, "--output", os.path.join(d, "cut", "run-%p.tlog"), "--report-lines", "5", "--",
                        sys.executable, prog, args.cuda_doubles, "fork", "3", "-1"],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not p.stderr.rstrip().splitlines()[-1].startswith("  verdict: clean ("):
        fail("a cut merged report must end with its verdict: %r" % p.stderr[-600:])


SEGMENTED = r"""
import os, sys
class Node:
    def __init__(self):
        self.me = self
pid = os.fork()
for i in range(int(sys.argv[1])):
    Node()
if pid:
    os.waitpid(pid, 0)
"""


def segments_case(args, work):
    """One log's segment files, named together (a shell's `trace-*.tlog`),
    or a directory with a file in it, are one process, not one per name."""
    d = fresh(work, "segments")
    prog = os.path.join(d, "cycles.py")
    with open(prog, "w") as f:
        f.write(SEGMENTED)
    run_traced(args, [sys.executable, prog, "200000"], os.path.join(d, "t-%p.tlog"),
               {"TRACE_MAX_BYTES": "64K", "TRACE_PY_ALLOCS": "1"})
    names = sorted(glob.glob(os.path.join(d, "t-*.tlog")))
    firsts = [n for n in names if ".seg" not in n]
    segs = [n for n in names if ".seg" in n]
    if len(firsts) != 2 or len(segs) < 3:
        fail("expected two logs cut into segments, got %r" % names)
    for paths, want in ((names, 2), (list(reversed(names)), 2), ([d, firsts[0]], 2), ([d] + segs, 2)):
        p = report(args, paths, "--json", status=0)
        doc = json.loads(p.stdout)
        got = len(doc.get("processes", []))
        if got != want:
            fail("report %s: %d processes, not %d (old: one per file name)" % (" ".join(paths), got, want))
        if "same log as" not in p.stderr:
            fail("report %s does not say which names were the same log: %r" % (" ".join(paths), p.stderr))
        logs = sorted(os.path.basename(q["log"]) for q in doc["processes"])
        if logs != sorted(os.path.basename(n) for n in firsts):
            fail("report %s: the processes are read as %r, not through their first files" % (" ".join(paths), logs))
    # Segments of one log only: that log's single report.
    one = [n for n in segs if os.path.basename(n).startswith(os.path.basename(firsts[0])[:-5])]
    p = report(args, one, status=0)
    if not p.stdout.startswith("trace-replay report: %s\n" % one[0]) or "process tree" in p.stdout.lower():
        fail("report of one log's segments %r is not that log's single report: %r" % (one, p.stdout[:300]))
    # Its segments before these were deleted: the peaks say they are partial
    # (a pool's allocated could read above its reserved, with no word why).
    if "peaks of the kept events only" not in p.stdout:
        fail("report of a log whose first segments were deleted does not say its peaks are partial: %r"
             % p.stdout[:1500])


CASES = {"segments": segments_case, "multiprocessing": multiprocessing_case, "exec": exec_case, "ranks": ranks_case, "verdicts": verdicts_case,
         "html": html_case, "trace_run": trace_run_case}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--preload", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--cuda-doubles")
    p.add_argument("--gen")
    p.add_argument("--workdir")
    args = p.parse_args()
    work = args.workdir or os.path.join(os.getcwd(), "tree-" + args.case)
    os.makedirs(work, exist_ok=True)
    CASES[args.case](args, work)
    print("PASS")


if __name__ == "__main__":
    main()
