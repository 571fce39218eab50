"""An embedder that opens a libpython, runs Python, closes it (finalised or
not), then opens another version, or the same one again, and runs Python
there: reload_libpython.c, RTLD_GLOBAL and RTLD_LOCAL, with and without
Py_FinalizeEx before the dlclose, with threads, under the preload by
default and with TRACE_PY_ALLOCS=1.

The tracer kept the first library loaded where bare the dlclose unmaps it
(glibc makes an object that answered a dlsym(RTLD_DEFAULT) of libtrace.so
undeletable; an RTLD_LOCAL one was held open): a second version opened
RTLD_GLOBAL bound to the first one's functions, printed the first one's
version and died of SIGSEGV in Py_FinalizeEx, and the same library opened
again came back with its old state (its builtins counted round 2 where bare
says 1, "still loaded" where bare says "unloaded").  Now the program runs
as it does bare (exit status and output), the log is whole, the first
library is traced and, once it was unloaded, INFO not_watched says so and
names it; the second is not traced.  Pairs of the installed shared
interpreters (neighbours, each once first and once second) and each
version with itself; a variant that fails bare (a library that stays
loaded bare, and a second version bound to it) is only reported."""
import os
import signal
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()
HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = [("global", "fin", ""), ("global", "nofin", ""), ("global", "fin", "threads"),
            ("local", "fin", ""), ("local", "nofin", ""), ("local", "fin", "threads")]


def run(exe, argv, traced, extra_env=None):
    """(CompletedProcess, log path or None, its folder); the libraries find
    their own homes (no PYTHONHOME: each has its own)."""
    tmp = tempfile.mkdtemp(prefix="reloadpy-")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACE_") and k not in ("PYTHONHOME", "PYTHONPATH", "LD_PRELOAD")}
    env["TRACE_OUTPUT"] = os.path.join(tmp, "trace-%p.tlog")
    env.update(extra_env or {})
    if traced:
        env["LD_PRELOAD"] = args.preload
    done = subprocess.run([exe] + argv, capture_output=True, text=True, env=env, timeout=300)
    logs = [f for f in os.listdir(tmp) if f.endswith(".tlog")]
    return done, (os.path.join(tmp, logs[0]) if len(logs) == 1 else None), tmp


def clean(tmp):
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


def status(rc):
    return "signal %s" % signal.Signals(-rc).name if rc < 0 else "exit %d" % rc


def check_log(tag, log, a, b, bare_out):
    summary = subprocess.run([args.dump, "--summary", log], capture_output=True, text=True).stdout
    lines = [l.split() for l in summary.splitlines() if l.strip()]
    if not fails.check(any(l[:2] == ["end", "clean"] for l in lines)
                       and any(l[:2] == ["damage", "none"] for l in lines)
                       and "info: ending=exit" in summary,
                       "%s: the log is not whole:\n%s" % (tag, summary)):
        return
    events, infos, _ = pt.read_log(args.pylog, log)
    run_ = pt.Run(None, events, infos, {})
    versions = run_.info("python_version")
    fails.check(versions and all(v.startswith(a[0] + ".") for v in versions),
                "%s: traced interpreter %s, expected A's %s" % (tag, versions, a[0]))
    unloaded = "A after dlclose: unloaded" in bare_out
    said = [v for v in run_.info("not_watched") if "unloaded by the program" in v]
    if unloaded:
        fails.check(len(said) == 1 and a[1] in said[0],
                    "%s: A was unloaded; no not_watched naming it: %s" % (tag, run_.info("not_watched")))
    else:
        fails.check(not said, "%s: A stayed loaded, yet the log says it was unloaded: %s" % (tag, said))
    # The round's two explicit collections (generation 2, in <string>'s
    # <module>: the threads' are in work()).
    ours = [e for e in run_.of("gc_start") if e["generation"] == 2 and e["py"]
            and e["py"][0][0] == "<string>" and e["py"][0][2] == "<module>"]
    # B's round is traced only where it ran in A's library, still loaded
    # (the same one opened again, or another version bound to it, as bare).
    b_in_a = not unloaded and any(l.split()[:2] == ["B", a[0]] for l in bare_out.splitlines())
    expected = 4 if b_in_a else 2
    fails.check(len(ours) == expected, "%s: %d collections of the rounds recorded, expected %d (%s)"
                % (tag, len(ours), expected, "both rounds" if b_in_a else "only A's"))


def check_pair(exe, a, b, results):
    for mode, fin, threads in VARIANTS:
        argv = [a[1], b[1], mode, fin] + ([threads] if threads else [])
        name = "%s then %s %s %s%s" % (a[0], b[0], mode, fin, " threads" if threads else "")
        bare, _, tmp_bare = run(exe, argv, False)
        clean(tmp_bare)
        if bare.returncode != 0:
            print("%s: fails bare (%s), not compared: %s" % (name, status(bare.returncode),
                                                           " | ".join(bare.stdout.splitlines())))
            continue
        for extra in ({}, {"TRACE_PY_ALLOCS": "1"}):
            tag = name + (" TRACE_PY_ALLOCS=1" if extra else "")
            traced, log, tmp = run(exe, argv, True, extra)
            try:
                same = traced.returncode == 0 and traced.stdout == bare.stdout
                results.append(same)
                if not fails.check(same, "%s: traced %s, output %r (bare: %r) %s"
                                   % (tag, status(traced.returncode), traced.stdout, bare.stdout,
                                      traced.stderr[-600:])):
                    continue
                if fails.check(log is not None, "%s: no log" % tag):
                    check_log(tag, log, a, b, bare.stdout)
            finally:
                clean(tmp)
        print("%s: %s" % (name, " | ".join(bare.stdout.splitlines())))


def main():
    libs = {}
    for python, version in pt.find_interpreters(args.python):
        embed = pt.embedding(python)
        if embed and version not in libs:
            libs[version] = os.path.realpath(embed.lib)
    if not libs:
        print("skipped: no shared libpython found")
        sys.exit(pt.SKIP)
    order = sorted(libs, key=lambda v: int(v.split(".")[1]))
    pairs = [(v, v) for v in order]
    if len(order) >= 2:
        pairs += [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "reload_libpython")
        cc = subprocess.run([os.environ.get("CC", "cc"), "-O1", os.path.join(HERE, "reload_libpython.c"),
                             "-o", exe, "-ldl"], capture_output=True, text=True)
        if not fails.check(cc.returncode == 0, "cc failed: %s" % cc.stderr[-500:]):
            fails.finish()
        for va, vb in pairs:
            print("==", va, "then", vb)
            check_pair(exe, (va, libs[va]), (vb, libs[vb]), results)
    print("%d of %d traced runs as bare" % (sum(results), len(results)))
    fails.finish()


main()
