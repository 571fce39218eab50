"""Two versions of libpython in one process (a plugin host), each opened
RTLD_LOCAL: two_libpythons.c, in both of its shapes (together: B initialised
while A is; swap: A used, finalised and closed, then B).

Each library's Py_Initialize calls its Py_InitializeEx through its own PLT,
which reaches the preload's; the tracer sent every such call to the first
libpython it had found, so B's initialisation ran A's (B aborted in its
PyEval_SaveThread, "the GIL is released", or crashed once A was finalised).
Now the program runs as it does bare (exit status and output), the log is
whole, A is traced (its collections recorded) and the log says B is not
(not_watched).  Run on pairs of the installed shared interpreters, each
version once first and once second; skipped with fewer than two versions."""
import os
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()
HERE = os.path.dirname(os.path.abspath(__file__))


def run(exe, argv, traced):
    """(CompletedProcess, log path or None) with the preload or bare; the
    libraries find their own homes (no PYTHONHOME: each has its own)."""
    tmp = tempfile.mkdtemp(prefix="twopy-")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACE_") and k not in ("PYTHONHOME", "PYTHONPATH", "LD_PRELOAD")}
    env["TRACE_OUTPUT"] = os.path.join(tmp, "trace-%p.tlog")
    if traced:
        env["LD_PRELOAD"] = args.preload
    done = subprocess.run([exe] + argv, capture_output=True, text=True, env=env, timeout=300)
    logs = [f for f in os.listdir(tmp) if f.endswith(".tlog")]
    return done, (os.path.join(tmp, logs[0]) if len(logs) == 1 else None), tmp


def check_pair(exe, a, b):
    for shape in ("together", "swap"):
        tag = "%s %s (%s) then %s (%s)" % (shape, a[0], a[1], b[0], b[1])
        argv = [shape, a[1], b[1]]
        bare, _, tmp_bare = run(exe, argv, False)
        traced, log, tmp = run(exe, argv, True)
        try:
            if not fails.check(bare.returncode == 0, "%s: fails bare (%d): %s %s"
                               % (tag, bare.returncode, bare.stdout[-300:], bare.stderr[-300:])):
                continue
            fails.check(traced.returncode == 0 and traced.stdout == bare.stdout,
                        "%s: traced exit %d, output %r (bare: %r) %s"
                        % (tag, traced.returncode, traced.stdout, bare.stdout, traced.stderr[-600:]))
            if not fails.check(log is not None, "%s: no log" % tag):
                continue
            summary = subprocess.run([args.dump, "--summary", log], capture_output=True, text=True).stdout
            lines = summary.splitlines()
            fails.check(any(l.split()[:2] == ["end", "clean"] for l in lines if l.strip())
                        and any(l.split()[:2] == ["damage", "none"] for l in lines if l.strip())
                        and "info: ending=exit" in summary,
                        "%s: the log is not whole:\n%s" % (tag, summary))
            events, infos, _ = pt.read_log(args.pylog, log)
            run_ = pt.Run(traced, events, infos, {})
            full = [e for e in run_.of("gc_start") if e["generation"] == 2 and e["py"]
                    and e["py"][0][0] == "<string>"]
            rounds_a = 2 if shape == "together" else 1
            fails.check(len(full) == rounds_a, "%s: %d collections of A's rounds recorded, expected %d"
                        % (tag, len(full), rounds_a))
            versions = run_.info("python_version")
            fails.check(versions and all(v.startswith(a[0] + ".") for v in versions),
                        "%s: traced interpreter %s, expected A's %s" % (tag, versions, a[0]))
            fails.check(any(b[1] in v and "not traced" in v for v in run_.info("not_watched")),
                        "%s: no not_watched for B: %s" % (tag, run_.info("not_watched")))
        finally:
            for d in (tmp, tmp_bare):
                for f in os.listdir(d):
                    os.unlink(os.path.join(d, f))
                os.rmdir(d)


def main():
    libs = {}
    for python, version in pt.find_interpreters(args.python):
        embed = pt.embedding(python)
        if embed and version not in libs:
            libs[version] = os.path.realpath(embed.lib)
    if len(libs) < 2:
        print("skipped: two shared libpythons of different versions are needed, found %s"
              % (sorted(libs) or "none"))
        sys.exit(pt.SKIP)
    order = sorted(libs, key=lambda v: int(v.split(".")[1]))
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "two_libpythons")
        cc = subprocess.run([os.environ.get("CC", "cc"), "-O1", "-I", HERE,
                             os.path.join(HERE, "two_libpythons.c"), "-o", exe, "-ldl"],
                            capture_output=True, text=True)
        if not fails.check(cc.returncode == 0, "cc failed: %s" % cc.stderr[-500:]):
            fails.finish()
        # Each version once as A and once as B: neighbours, and the last
        # with the first.
        pairs = [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]
        if len(order) == 2:
            pairs = pairs[:2]
        for va, vb in pairs:
            print("==", va, "then", vb)
            check_pair(exe, (va, libs[va]), (vb, libs[vb]))
    fails.finish()


main()
