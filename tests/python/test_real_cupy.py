"""Real CuPy (13+, e.g. cupy-cuda13x 14.2) traced on the CUDA doubles, no GPU.

CuPy links the CUDA runtime statically into cupy_backends.cuda.api.runtime,
and that runtime needs the real driver's private export tables, which the
driver double cannot give.  real_cupy/_cupy_doubles.c swaps the capsules of
that module's __pyx_capi__ (what every other CuPy module calls the runtime
through) for stand-ins that reach the driver double as the static runtime
reaches a driver (cuGetProcAddress_v2, cuMemAlloc_v2); CuPy's own pool code
(cupy/cuda/memory.pyx, as built in the wheel) runs unchanged.  Kernels cannot
run: the workload (workloads/real_cupy_train.py) makes none.

Checked, per run: exit 0; the pool is found (INFO cupy on, cupy_version, a
pool named cupy, pool requests on the four threads that allocate, Python
stacks at the workload's lines); trace-replay check with the automatic
choice, cupy-next and cupy: clean, every answer matched; at each of the
workload's marks, CuPy's own used_bytes()/total_bytes() equal the figures
the log's events give and each model's (the log cut there, imported again);
report: exit 0, the allocation sites at the workload's lines.  Runs: plain;
gc.set_threshold(5) (collections nested in pool operations); a thread started
before the import (its requests are not recorded: INFO pool_unwatched; the
replay and the figures still hold); CUPY_GPU_MEMORY_LIMIT (the limit was written inside CuPy's
first operation and the models never followed it); and the per-thread
default stream, whose arenas CuPy keys by id() of a per-thread object that a
later thread can get again (the recorder keys them by thread id): the model
may leave the log there, but the verdict must not be a VIOLATION.  And a
MemoryPool dropped while its array lives (workloads/real_cupy_pool_gone.py):
the array's free is unseen, its segment's is not; a warning unseen_free, not
the false VIOLATION segment_in_use it was.

Skips (77) where no Python with CuPy is found: set TRACE_CUPY_PYTHON to the
interpreters (':'-separated) of virtual environments with cupy-cuda13x
installed; otherwise the venv scripts/test makes (TRACE_CUPY_VENV, by default
~/.cache/gputrace/cupy-venv) and python3 on PATH are tried.  ctest alone never
installs CuPy; scripts/test does, where PyPI can be reached.

    test_real_cupy.py --preload LIBTRACE --replay TRACE_REPLAY --dump TRACE_DUMP --cuda-doubles DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "real_cupy")
WORKLOAD = os.path.join(HERE, "workloads", "real_cupy_train.py")
POOL_GONE = os.path.join(HERE, "workloads", "real_cupy_pool_gone.py")
MARK_BASE = 3 << 20
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)
    return cond


def candidates():
    env = os.environ.get("TRACE_CUPY_PYTHON")
    if env:
        return [p for p in env.split(":") if p]
    # Where scripts/test puts it (scripts/lib/setup.sh, ensure_cupy).
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    venv = os.environ.get("TRACE_CUPY_VENV") or os.path.join(cache, "gputrace", "cupy-venv")
    found = [p for p in (os.path.join(venv, "bin", "python"), shutil.which("python3")) if p and os.access(p, os.X_OK)]
    return found


def cupy_version(python):
    try:
        p = subprocess.run([python, "-c", "import cupy, sysconfig; print(cupy.__version__); "
                            "print(sysconfig.get_paths()['include']); "
                            "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode:
        return None
    lines = p.stdout.split()
    return lines if len(lines) == 3 else None


def build_shim(python, include, suffix, out):
    so = os.path.join(out, "_cupy_doubles" + suffix)
    cc = os.environ.get("CC", "cc")
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-g", "-I" + include, "-o", so,
                        os.path.join(SHIM, "_cupy_doubles.c"), "-ldl"], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("building the shim for %s failed: %s" % (python, p.stderr[-1000:]))
    shutil.copy(os.path.join(SHIM, "cupy_doubles.py"), out)


def events(args, log):
    p = subprocess.run([args.dump, "--json", log], capture_output=True, text=True)
    lines = p.stdout.splitlines()
    return lines, [json.loads(line) for line in lines]


def marks_said(out):
    said = {}
    for line in out.splitlines():
        m = re.match(r"MARK (\d+) used=(\d+) total=(\d+)", line)
        if m:
            said[int(m[1])] = (int(m[2]), int(m[3]))
    return said


def model_at(args, tmp, lines, recs, seq, model):
    """The model's (allocated, reserved) after event seq: the log cut there."""
    cut = os.path.join(tmp, "cut.jsonl")
    with open(cut, "w") as f:
        for line, r in zip(lines, recs):
            if "seq" not in r or r["seq"] <= seq:
                f.write(line + "\n")
    tlog = os.path.join(tmp, "cut.tlog")
    subprocess.run([args.replay, "import", "-o", tlog, cut], check=True, capture_output=True)
    p = subprocess.run([args.replay, "stats", tlog, "--model", model, "--json"], capture_output=True, text=True)
    os.unlink(cut)
    os.unlink(tlog)
    try:
        pools = json.loads(p.stdout).get("pools") or []
    except ValueError:
        return None
    return (pools[0].get("allocated"), pools[0].get("reserved")) if pools else (0, 0)


def run_case(args, python, shim_dir, tmp, tag, env_extra, strict=True):
    log = os.path.join(tmp, tag + ".tlog")
    env = dict(os.environ)
    env.update({"PYTHONPATH": shim_dir, "LD_LIBRARY_PATH": args.cuda_doubles, "LD_PRELOAD": args.preload,
                "TRACE_OUTPUT": log})
    env.update(env_extra)
    p = subprocess.run([python, WORKLOAD], capture_output=True, text=True, env=env, timeout=600)
    if not check(p.returncode == 0 and "MARK 10" in p.stdout, "%s: the workload failed (exit %d): %s %s"
                 % (tag, p.returncode, p.stdout[-300:], p.stderr[-1500:])):
        return
    lines, recs = events(args, log)
    info = {}
    for r in recs:
        if r.get("kind") == "info":
            info.setdefault(r["key"], []).append(r["value"])
    check(any(v.startswith("on") for v in info.get("cupy", [])), "%s: no INFO cupy on: %s" % (tag, info.get("cupy")))
    check(bool(info.get("cupy_version")), "%s: no INFO cupy_version" % tag)
    pools = {r["pool"]: r["name"] for r in recs if r.get("kind") == "pool"}
    check("cupy" in pools.values(), "%s: no pool named cupy: %s" % (tag, pools))
    allocs = [r for r in recs if r.get("kind") == "pool_alloc"]
    threads = {r["tid"] for r in allocs}
    check(len(threads) == 4, "%s: pool requests on %d threads, expected 4" % (tag, len(threads)))
    if env_extra.get("EARLY_THREAD") == "1":
        # Its loop keeps a few arrays live: no collection, no audit event,
        # so it never registers the hook, and the log says so.
        check(any(v.startswith("cupy: 1 other thread") for v in info.get("pool_unwatched", [])),
              "%s: no INFO pool_unwatched: %s" % (tag, info.get("pool_unwatched")))
    at_line = [r for r in allocs if any(f["file"] == WORKLOAD for f in r.get("py_stack") or [])]
    check(len(at_line) >= len(allocs) * 9 // 10, "%s: %d of %d pool_alloc events have the workload's lines "
          "in their Python stacks" % (tag, len(at_line), len(allocs)))
    for model in ("auto", "cupy-next", "cupy"):
        c = subprocess.run([args.replay, "check", log, "--model", model], capture_output=True, text=True)
        verdict = c.stdout.strip().splitlines()[-1] if c.stdout.strip() else c.stderr
        if strict:
            check(c.returncode == 0 and "none diverged" in verdict, "%s: check --model %s (exit %d): %s"
                  % (tag, model, c.returncode, verdict))
        else:
            check(c.returncode != 1 and "VIOLATION" not in c.stdout, "%s: check --model %s found a violation "
                  "(exit %d): %s" % (tag, model, c.returncode, verdict))
    if not strict:
        return
    said = marks_said(p.stdout)
    blocks, dev, derived, seqs = {}, {}, {}, {}
    for r in recs:
        k = r.get("kind")
        if k == "pool_alloc":
            blocks[r["ptr"]] = r["granted"]
        elif k == "pool_free":
            blocks.pop(r["ptr"], None)
        elif k == "cuda_alloc" and r.get("result", 0) == 0 and "Host" not in r.get("api", ""):
            dev[r["ptr"]] = r["size"]
        elif k == "cuda_free":
            dev.pop(r["ptr"], None)
        elif k == "host_alloc" and (r["size"] - 1 - MARK_BASE) % 4096 == 0 and \
                0 <= r["size"] - 1 - MARK_BASE < 64 * 4096:
            n = (r["size"] - 1 - MARK_BASE) // 4096   # bytearray(n): n + 1 bytes
            seqs[n] = r["seq"]
            derived[n] = (sum(blocks.values()), sum(dev.values()))
    check(sorted(said) == list(range(11)), "%s: marks printed: %s" % (tag, sorted(said)))
    for n in sorted(said):
        if not check(n in seqs, "%s: mark %d not in the log" % (tag, n)):
            continue
        check(derived[n] == said[n], "%s: mark %d: CuPy said used/total %s, the log's events give %s"
              % (tag, n, said[n], derived[n]))
        for model in ("cupy-next", "cupy"):
            got = model_at(args, tmp, lines, recs, seqs[n], model)
            check(got == said[n], "%s: mark %d (seq %d): CuPy said used/total %s, model %s has %s"
                  % (tag, n, seqs[n], said[n], model, got))
    r = subprocess.run([args.replay, "report", log], capture_output=True, text=True)
    check(r.returncode == 0 and "real_cupy_train.py:" in r.stdout and "-> cupy empty" in r.stdout,
          "%s: report (exit %d): %s" % (tag, r.returncode, r.stdout[-800:]))
    # A device site's native frame is CuPy's pool code, which called our
    # MemoryHook through the interpreter, not the interpreter's frame that
    # called the hook (every site said `cfunction_call`).
    natives = [l.strip() for l in r.stdout.split("Top device allocation sites", 1)[-1].splitlines()
               if l.strip().startswith("native:")][:3]
    check(natives and all("memory.cpython" in l and "libpython" not in l for l in natives),
          "%s: device sites' native frames: %s" % (tag, natives))


def run_pool_gone(args, python, shim_dir, tmp):
    log = os.path.join(tmp, "gone.tlog")
    env = dict(os.environ)
    env.update({"PYTHONPATH": shim_dir, "LD_LIBRARY_PATH": args.cuda_doubles, "LD_PRELOAD": args.preload,
                "TRACE_OUTPUT": log})
    p = subprocess.run([python, POOL_GONE], capture_output=True, text=True, env=env, timeout=300)
    if not check(p.returncode == 0 and p.stdout == "ok\n", "pool gone: the workload failed (exit %d): %s"
                 % (p.returncode, p.stderr[-1000:])):
        return
    c = subprocess.run([args.replay, "check", log], capture_output=True, text=True)
    check(c.returncode == 0 and "unseen_free" in c.stdout and "VIOLATION" not in c.stdout,
          "pool gone: a dropped MemoryPool's array freed (exit %d): %s" % (c.returncode, c.stdout[-600:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--replay", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--cuda-doubles", required=True)
    args = ap.parse_args()
    found = [(py, v) for py, v in ((py, cupy_version(py)) for py in candidates()) if v]
    found = [(py, v) for py, v in found if int(v[0].split(".")[0]) >= 13]
    if not found:
        print("SKIP: no Python with CuPy 13+ (tried %s); set TRACE_CUPY_PYTHON to the python of a virtual "
              "environment with cupy-cuda13x installed" % (candidates() or "python3: none on PATH"))
        return 77
    for python, (version, include, suffix) in found:
        with tempfile.TemporaryDirectory() as tmp:
            shim = os.path.join(tmp, "shim")
            os.mkdir(shim)
            build_shim(python, include, suffix, shim)
            print("CuPy %s with %s" % (version, python), flush=True)
            run_case(args, python, shim, tmp, "plain", {})
            run_case(args, python, shim, tmp, "gc5", {"GC_THRESHOLD": "5"})
            run_case(args, python, shim, tmp, "early", {"EARLY_THREAD": "1"})
            run_case(args, python, shim, tmp, "limit", {"CUPY_GPU_MEMORY_LIMIT": "70000000"})
            run_pool_gone(args, python, shim, tmp)
            run_case(args, python, shim, tmp, "ptds", {"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}, strict=False)
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
