#!/usr/bin/env python3
"""test_install.py - `cmake --install` into a temporary prefix, then the
prefix moved elsewhere (it must be relocatable), then every installed tool
run from an unrelated directory, with nothing of the build on PATH:

  - the installed set: the tools in bin (no test or benchmark program),
    libtrace.so, trace_api.h, gputrace.pc, a man page per program that says
    what the program's --help says; no RPATH into the build tree;
  - trace-run finds the installed library by its own place (also through a
    relative path and a symlink on PATH), preloads it by absolute path (a
    wrapper that changes directory before starting Python still traces), and
    runs the installed trace-replay for its report;
  - trace-dump, trace-replay check/report and trace-bundle on that log;
  - pkg-config: a C program built with `pkg-config --cflags --libs gputrace`
    annotates a pool and is traced with `--variable=libtrace`;
  - configuring on a machine without libzstd names the package to install.

    test_install.py --build-dir BUILD --work DIR [--asan-runtime LIB]
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from installcheck import ROOT, check, finish

TOOLS = ["trace-run", "trace-replay", "trace-dump", "trace-bundle", "torch-snapshot-import"]
def run(cmd, **kw):
    kw.setdefault("timeout", 300)
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p


def clean_env(opts, path_first=None):
    """The environment of a user who installed the tools: nothing pointing
    at the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRACE_LIB", "TRACE_REPLAY", "LD_PRELOAD", "TRACE_OUTPUT", "PKG_CONFIG_PATH")}
    path = [p for p in env.get("PATH", "").split(":") if p and not p.startswith(opts.build_dir)]
    if path_first:
        path.insert(0, path_first)
    env["PATH"] = ":".join(path)
    if opts.asan_runtime:
        env["LD_PRELOAD"] = opts.asan_runtime
    return env


def install(opts):
    stage = os.path.join(opts.work, "stage")
    p = run(["cmake", "--install", opts.build_dir, "--prefix", stage])
    if not check(p.returncode == 0, "cmake --install --prefix %s" % stage):
        print(p.stdout, p.stderr)
        sys.exit(1)
    # Relocatable: the prefix is moved after installing.
    prefix = os.path.join(opts.work, "moved", "prefix")
    os.makedirs(os.path.dirname(prefix))
    os.rename(stage, prefix)
    return prefix


def installed_set(prefix):
    bindir = os.path.join(prefix, "bin")
    check(sorted(os.listdir(bindir)) == sorted(TOOLS), "bin holds the tools only: %s" % sorted(os.listdir(bindir)))
    for tool in TOOLS:
        check(os.access(os.path.join(bindir, tool), os.X_OK), "bin/%s is executable" % tool)
    for path in ("lib/libtrace.so", "include/trace_api.h", "lib/pkgconfig/gputrace.pc"):
        check(os.path.isfile(os.path.join(prefix, path)), path + " installed")
    # libtrace.so's own libunwind (a soname of its own), opened beside it:
    # made where the build had patchelf.
    if shutil.which("patchelf"):
        check(os.path.isfile(os.path.join(prefix, "lib", "libgputrace-unwind.so.8")),
              "lib/libgputrace-unwind.so.8 installed beside libtrace.so")
    for elf in ("lib/libtrace.so", "bin/trace-replay", "bin/trace-dump"):
        p = run(["readelf", "-d", os.path.join(prefix, elf)])
        check(p.returncode == 0 and "RPATH" not in p.stdout and "RUNPATH" not in p.stdout,
              "%s has no RPATH/RUNPATH (nothing ties it to the build tree)" % elf)
    # Each man page carries its program's --help, as the installed program prints it.
    for tool in TOOLS:
        page = os.path.join(prefix, "share", "man", "man1", tool + ".1")
        if not check(os.path.isfile(page), "man page %s.1" % tool):
            continue
        with open(page) as f:
            text = f.read().replace("\\e", "\\").replace("\\&", "")
        p = run([os.path.join(prefix, "bin", tool), "--help"])
        help_text = (p.stdout or p.stderr).strip()
        check(p.returncode == 0 and help_text, "%s --help exits 0 and says something" % tool)
        check(help_text in text, "%s.1 holds what %s --help prints" % (tool, tool))
        check(text.startswith('.TH "%s" 1' % tool.upper()) and "\n.SH NAME\n" in text, "%s.1 is a man page" % tool)
    page = os.path.join(prefix, "share", "man", "man1", "trace-replay.1")
    if os.path.isfile(page):
        with open(page) as f:
            text = f.read()
        for sub in ("report", "export", "import"):
            check("usage: trace-replay %s" % sub in text, "trace-replay.1 documents %s" % sub)


def trace_run(opts, prefix, elsewhere):
    """The installed trace-run from another directory: a log, its report,
    the library preloaded by absolute path."""
    env = clean_env(opts)
    workload = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    probe = os.path.join(elsewhere, "probe.py")
    with open(probe, "w") as f:
        f.write("import os, runpy, sys\n"
                "print('LD_PRELOAD=' + os.environ.get('LD_PRELOAD', ''))\n"
                "sys.argv = [%r, 'cast']\n"
                "runpy.run_path(%r, run_name='__main__')\n" % (workload, workload))
    lib = os.path.realpath(os.path.join(prefix, "lib", "libtrace.so"))
    # A relative path to trace-run, and a relative --output.
    rel_run = os.path.relpath(os.path.join(prefix, "bin", "trace-run"), elsewhere)
    p = run([rel_run, "--output", "run-%p.tlog", "--", sys.executable, probe], cwd=elsewhere, env=env)
    check(p.returncode == 0, "installed trace-run (run as %s) exits with the command's status: %d %s"
          % (rel_run, p.returncode, p.stderr[-400:]))
    m = re.search(r"^LD_PRELOAD=(.*)$", p.stdout, re.M)
    preload = m.group(1).split(":") if m else []
    check(bool(preload) and preload[0] == lib, "the installed library is preloaded first, by absolute path: %s" % preload)
    m = re.search(r"log written to (\S+)", p.stderr)
    log = m.group(1) if m else None
    check(log is not None and os.path.isabs(log) and os.path.dirname(log) == elsewhere and os.path.exists(log),
          "the log is written where --output said: %s" % log)
    check("Garbage collection" in p.stderr or "trace-replay report: " in p.stderr,
          "trace-run showed the report from the installed trace-replay")

    # Through a symlink on PATH, and a wrapper that starts Python from
    # another directory (as a pyenv shim or a build tool does): a relative
    # LD_PRELOAD would fail to load there.
    links = os.path.join(opts.work, "links")
    os.makedirs(links, exist_ok=True)
    os.symlink(os.path.join(prefix, "bin", "trace-run"), os.path.join(links, "trace-run"))
    wrapper = os.path.join(links, "py-elsewhere")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\ncd / && exec %s \"$@\"\n" % sys.executable)
    os.chmod(wrapper, 0o755)
    env = clean_env(opts, path_first=links)
    p = run(["trace-run", "--quiet", "--output", os.path.join(elsewhere, "shim-%p.tlog"), "--",
             "py-elsewhere", "-c", "import gc; x = bytearray(4 << 20); del x; gc.collect()"], cwd=elsewhere, env=env)
    logs = glob.glob(os.path.join(elsewhere, "shim-*.tlog"))
    check(p.returncode == 0 and len(logs) == 1 and "cannot be preloaded" not in p.stderr,
          "trace-run through a symlink on PATH traces a program started from another directory: %d %s"
          % (p.returncode, p.stderr[-400:]))
    # A program under a folder whose name is not UTF-8: the report names it,
    # and trace-run still shows it and returns the command's status.
    odd = os.path.join(os.fsencode(elsewhere), b"caf\xe9")
    os.makedirs(odd)
    with open(os.path.join(odd, b"app.py"), "w") as f:
        f.write("import gc, sys\nclass C:\n    def __init__(self):\n        self.b = bytearray(4 << 20)\n"
                "        self.me = self\nfor i in range(3):\n    C()\ngc.collect()\nsys.exit(5)\n")
    p = subprocess.run([os.path.join(prefix, "bin", "trace-run"), "--output", "odd-%p.tlog", "--",
                        sys.executable, "app.py"], cwd=odd, env=clean_env(opts), capture_output=True, timeout=300)
    check(p.returncode == 5 and b"Traceback" not in p.stderr and
          re.search(rb"log written to \S*/caf\xe9/odd-\d+\.tlog", p.stderr) is not None,
          "trace-run under a non-UTF-8 folder: the command's status, the path as it is on disk: %d %r"
          % (p.returncode, p.stderr[-300:]))
    return log


def tools_on_log(opts, prefix, elsewhere, log):
    env = clean_env(opts)
    bindir = os.path.join(prefix, "bin")
    p = run([os.path.join(bindir, "trace-dump"), "--summary", log], cwd=elsewhere, env=env)
    check(p.returncode == 0 and "gc_start" in p.stdout, "installed trace-dump --summary reads the log")
    p = run([os.path.join(bindir, "trace-replay"), "check", log], cwd=elsewhere, env=env)
    check(p.returncode == 0, "installed trace-replay check: %d %s" % (p.returncode, p.stderr[-300:]))
    p = run([os.path.join(bindir, "trace-replay"), "report", log], cwd=elsewhere, env=env)
    check(p.returncode == 0 and "Memory freed only inside collections" in p.stdout,
          "installed trace-replay report finds the buffers only collections freed")
    bundle = os.path.join(elsewhere, "app.bundle.tar.gz")
    p = run([os.path.join(bindir, "trace-bundle"), "-o", bundle, log], cwd=elsewhere, env=env)
    check(p.returncode == 0 and os.path.exists(bundle), "installed trace-bundle uses the installed trace-replay: %d %s"
          % (p.returncode, p.stderr[-300:]))


def pkg_config(opts, prefix, elsewhere):
    if not shutil.which("pkg-config"):
        check(False, "pkg-config is installed (scripts/test installs it)")
        return
    env = clean_env(opts)
    env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
    p = run(["pkg-config", "--cflags", "--libs", "gputrace"], env=env)
    if not check(p.returncode == 0, "pkg-config --cflags --libs gputrace: %s" % (p.stdout + p.stderr).strip()):
        return
    flags = p.stdout.split()
    incs = [f[2:] for f in flags if f.startswith("-I")]
    check(len(incs) == 1 and os.path.realpath(incs[0]) == os.path.realpath(os.path.join(prefix, "include")),
          "Cflags name the moved prefix's include directory: %s" % incs)
    lib = run(["pkg-config", "--variable=libtrace", "gputrace"], env=env).stdout.strip()
    check(os.path.realpath(lib) == os.path.realpath(os.path.join(prefix, "lib", "libtrace.so")),
          "--variable=libtrace names the installed library: %s" % lib)
    src = os.path.join(elsewhere, "pool.c")
    with open(src, "w") as f:
        f.write('#include <trace_api.h>\n'
                'int main(void) {\n'
                '    static char block[4096];\n'
                '    int pool = trace_pool_register("installed-pool");\n'
                '    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, 100);\n'
                '    trace_pool_alloc(pool, block, 100, 512, 0);\n'
                '    trace_pool_op_end(pool, op);\n'
                '    trace_mark("from an installed header");\n'
                '    return pool > 0 ? 0 : 3;\n'
                '}\n')
    prog = os.path.join(elsewhere, "pool")
    p = run(["cc", "-o", prog, src] + flags, env=env)
    if not check(p.returncode == 0, "a program builds with pkg-config's flags: %s" % p.stderr[-300:]):
        return
    log = os.path.join(elsewhere, "pool.tlog")
    penv = dict(env, TRACE_OUTPUT=log, TRACE_QUIET="1")
    penv["LD_PRELOAD"] = ":".join(x for x in (opts.asan_runtime, os.path.abspath(lib)) if x)
    p = run([prog], env=penv, cwd=elsewhere)
    check(p.returncode == 0, "the annotated program registers its pool under the preload: %d" % p.returncode)
    p = run([os.path.join(prefix, "bin", "trace-dump"), "--json", log], env=env)
    kinds = []
    for line in p.stdout.splitlines():
        try:
            kinds.append(json.loads(line).get("kind"))
        except ValueError:
            pass
    check("pool_alloc" in kinds and "mark" in kinds, "its log holds the pool allocation and the mark: %s" % kinds)


def missing_prerequisite(opts):
    """A machine without a prerequisite: configuring says which Debian
    package to install (pkg-config is pointed at an empty directory)."""
    empty = os.path.join(opts.work, "empty-pkgconfig")
    os.makedirs(empty)
    env = dict(os.environ, PKG_CONFIG_LIBDIR=empty, PKG_CONFIG_PATH="")
    p = run(["cmake", "-S", ROOT, "-B", os.path.join(opts.work, "configure-without-zstd")], env=env)
    check(p.returncode != 0 and "apt-get install libzstd-dev" in " ".join(p.stderr.split()),
          "configuring without libzstd names the package to install: %r" % p.stderr[-300:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--asan-runtime")
    opts = ap.parse_args()
    opts.build_dir = os.path.abspath(opts.build_dir)
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    elsewhere = os.path.join(opts.work, "elsewhere")
    os.makedirs(elsewhere)
    prefix = install(opts)
    installed_set(prefix)
    log = trace_run(opts, prefix, elsewhere)
    if log:
        tools_on_log(opts, prefix, elsewhere, log)
    pkg_config(opts, prefix, elsewhere)
    missing_prerequisite(opts)
    return finish("install")


if __name__ == "__main__":
    sys.exit(main())
