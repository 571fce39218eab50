#!/usr/bin/env python3
"""test_pip.py - `pip install .` into a fresh venv, offline: the build backend
(scikit-build-core) comes from the wheelhouse scripts/lib/setup.sh fills, the
build from this checkout through CMake.  Then, from another directory:

  - the package carries libtrace.so and the tools, and needs nothing else
    (no dependency, nothing fetched at run time);
  - `gputrace` and `python -m gputrace`: run, report, check, explore,
    minimize, stats, dump, export, import, bundle on real logs;
  - the pytest plugin registered by its entry point: `pytest --gputrace` with
    no -p finds the leaky test; without --gputrace it stays out of the way;
  - a machine without libzstd: pip's output names the package to install.

    test_pip.py --work DIR --doubles DIR [--jobs N]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from installcheck import ROOT, HERE, SKIP, check, finish, has_wheel, make_venv, offline_env, wheelhouse


def run(cmd, **kw):
    kw.setdefault("timeout", 600)
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    print("$ %s -> %d" % (" ".join(cmd), p.returncode))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--doubles", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    opts = ap.parse_args()
    if not has_wheel("scikit_build_core"):
        print("SKIP: no scikit-build-core wheel in %s (scripts/test fills it: scripts/lib/setup.sh)" % wheelhouse())
        return SKIP
    shutil.rmtree(opts.work, ignore_errors=True)
    elsewhere = os.path.join(opts.work, "elsewhere")
    os.makedirs(elsewhere)
    venv = os.path.join(opts.work, "venv")
    vpy = make_venv(venv)
    env = offline_env(CMAKE_BUILD_PARALLEL_LEVEL=str(opts.jobs))

    # A missing prerequisite is named (pkg-config pointed at an empty folder).
    empty = os.path.join(opts.work, "empty-pkgconfig")
    os.makedirs(empty)
    p = run([vpy, "-m", "pip", "install", ROOT], env=dict(env, PKG_CONFIG_LIBDIR=empty, PKG_CONFIG_PATH=""),
            cwd=elsewhere)
    out = " ".join((p.stdout + p.stderr).split())
    check(p.returncode != 0 and "apt-get install libzstd-dev" in out,
          "pip install without libzstd fails and names the package: %s" % out[-600:])

    p = run([vpy, "-m", "pip", "install", ROOT], env=env, cwd=elsewhere, timeout=1500)
    if not check(p.returncode == 0, "pip install . into a fresh venv, offline"):
        print(p.stdout[-3000:], p.stderr[-3000:])
        return 1
    p = run([vpy, "-c", "import gputrace, importlib.metadata as m; print(gputrace.prefix()); "
                        "print(m.requires('gputrace'))"], env=env, cwd=elsewhere)
    lines = p.stdout.split("\n")
    pkg = lines[0].strip()
    check(pkg.startswith(venv) and os.path.isfile(os.path.join(pkg, "lib", "libtrace.so")),
          "libtrace.so is inside the installed package: %s" % pkg)
    check(lines[1:2] == ["None"], "the package requires nothing: %s" % lines[1:2])
    for tool in ("trace-run", "trace-replay", "trace-dump", "trace-bundle"):
        check(os.access(os.path.join(pkg, "bin", tool), os.X_OK), "the package carries %s" % tool)

    # The commands, from another directory, with nothing of the build around.
    gputrace = os.path.join(venv, "bin", "gputrace")
    p = run([gputrace, "--help"], env=env, cwd=elsewhere)
    check(p.returncode == 0 and all(c in p.stdout for c in
                                    ("run", "report", "check", "explore", "minimize", "dump", "export", "bundle")),
          "gputrace --help lists the commands")
    p = run([vpy, "-m", "gputrace", "--version"], env=env, cwd=elsewhere)
    check(p.returncode == 0 and re.match(r"gputrace \d+\.\d+", p.stdout), "python -m gputrace --version: %s" % p.stdout)
    workload = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    p = run([gputrace, "run", "--output", "app-%p.tlog", "--", vpy, workload, "cast"], env=env, cwd=elsewhere)
    m = re.search(r"log written to (\S+)", p.stderr)
    log = m.group(1) if m else ""
    check(p.returncode == 0 and os.path.exists(log) and "trace-replay report: " + log in p.stderr,
          "gputrace run traces with the package's library and shows the report: %s" % p.stderr[-500:])
    if not log:
        return 1
    p = run([vpy, "-m", "gputrace", "report", log], env=env, cwd=elsewhere)
    check(p.returncode == 0 and "Memory freed only inside collections" in p.stdout, "python -m gputrace report")
    for args, want in ((["check", log], 0), (["explore", log], 0), (["stats", log], 0),
                       (["dump", "--summary", log], 0),
                       (["export", "--perfetto", os.path.join(elsewhere, "t.json"), log], 0),
                       (["bundle", "-o", os.path.join(elsewhere, "b.tar.gz"), log], 0)):
        p = run([gputrace] + args, env=env, cwd=elsewhere)
        check(p.returncode == want, "gputrace %s: exit %d %s" % (args[0], p.returncode, p.stderr[-300:]))
    check(os.path.getsize(os.path.join(elsewhere, "t.json")) > 0, "export wrote the Perfetto file")

    # import a log with a double free; check finds it, minimize shrinks it.
    lines = [{"kind": "cuda_alloc", "seq": 1, "tid": 1, "t_ns": 1, "parent": 0, "api": "cudaMalloc", "device": 0,
              "result": 0, "flags": 0, "ptr": 4096, "size": 4096, "stream": 0}]
    for i in range(2, 40):
        lines.append({"kind": "cuda_alloc", "seq": i, "tid": 1, "t_ns": i, "parent": 0, "api": "cudaMalloc",
                      "device": 0, "result": 0, "flags": 0, "ptr": 1 << 20 | i << 12, "size": 4096, "stream": 0})
    for i in (40, 41):
        lines.append({"kind": "cuda_free", "seq": i, "tid": 1, "t_ns": i, "parent": 0, "api": "cudaFree",
                      "device": 0, "result": 0, "flags": 0, "ptr": 4096, "size": 0, "stream": 0})
    jsonl = os.path.join(elsewhere, "double_free.jsonl")
    with open(jsonl, "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
    bad = os.path.join(elsewhere, "double_free.tlog")
    p = run([gputrace, "import", "-o", bad, jsonl], env=env, cwd=elsewhere)
    check(p.returncode == 0, "gputrace import: %s" % p.stderr[-300:])
    p = run([gputrace, "check", bad], env=env, cwd=elsewhere)
    check(p.returncode == 1 and "double_free" in p.stdout, "gputrace check finds the double free")
    small = os.path.join(elsewhere, "small.tlog")
    p = run([gputrace, "minimize", bad, "-o", small], env=env, cwd=elsewhere)
    check(p.returncode == 1 and os.path.exists(small), "gputrace minimize writes the smaller log: %s" % p.stderr[-300:])

    # The pytest plugin through its entry point.
    p = run([vpy, "-m", "pip", "install", "pytest"], env=env, cwd=elsewhere)
    check(p.returncode == 0, "pytest installs offline")
    sample = os.path.join(HERE, "pytest_sample")
    penv = dict(env, CUDA_DOUBLES=opts.doubles, PYTHONDONTWRITEBYTECODE="1")
    pytest = os.path.join(venv, "bin", "pytest")
    p = run([pytest, "-p", "no:cacheprovider", "test_outcomes.py"], env=penv, cwd=sample)
    check(p.returncode == 1 and "plugins: gputrace" in p.stdout and "= gputrace =" not in p.stdout,
          "the entry point loads the plugin; without --gputrace it stays silent")
    p = run([pytest, "-p", "no:cacheprovider", "--gputrace", "test_memory.py"], env=penv, cwd=sample)
    check(p.returncode == 0 and re.search(r"test_memory.py::test_leaky\n.*still allocated at the end of the test: "
                                          r"2.0 MiB", p.stdout),
          "pytest --gputrace (entry point) finds the leak:\n%s" % p.stdout[-1500:])

    return finish("pip")


if __name__ == "__main__":
    sys.exit(main())
