#!/usr/bin/env python3
"""preload.foreign_libs: a program whose environment puts a foreign
libunwind.so.8 and libzstd.so.1 first (LD_LIBRARY_PATH), or loads them
itself, runs under the preload as it runs without it.

    foreign_libs.py --preload P --dump TRACE_DUMP --unwind-dir D --zstd-dir D
                    --prog foreign_libs --linked foreign_libs_linked WORK

For each environment (the stand-in libunwind first, the stand-in libzstd
first, both) and each program (the C program, the C program opening both
stand-ins by path, the C program linked against the stand-in libunwind, a
Python that opens them with ctypes; the C program and the Python opening
them by their bare names after the tracer started, the C program opening a
plugin that needs the stand-in libunwind): the exit status and output are those of
the run without the preload, the log reads to a clean END, the tracer says
nothing of a libunwind it could not open, and the large blocks' native
stacks are recorded (the tracer's libunwind walked them, not the program's),
for the C program through its own frames.  Before libtrace.so opened its own libunwind and linked
zstd statically, every traced run here failed at start: "symbol lookup
error: libtrace.so: undefined symbol: unw_backtrace" (status 127).
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--unwind-dir", required=True)
    ap.add_argument("--zstd-dir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--linked", required=True)
    ap.add_argument("--sanitized", action="store_true",
                    help="the sanitizer build: its runtime owns malloc, so the C program records "
                         "no event and writes no log (its status and output are still compared)")
    ap.add_argument("--zstd-dynamic", action="store_true",
                    help="libtrace.so links libzstd.so.1 (built without libzstd.a): a foreign one "
                         "first on the path still stops it, so those runs are left out")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--unwind-shared-soname", action="store_true",
                    help="the build made no libgputrace-unwind.so.8 (no patchelf): the tracer's "
                         "libunwind has the soname libunwind.so.8, so the runs that open that name "
                         "after start are left out")
    ap.add_argument("work")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    unwind = os.path.join(a.unwind_dir, "libunwind.so.8")
    zstd = os.path.join(a.zstd_dir, "libzstd.so.1")
    py_open = ("import ctypes, sys\n"
               "for p in sys.argv[1:]:\n"
               "    lib = ctypes.CDLL(p)\n"
               "    m = lib.foreign_zstd_marker if 'zstd' in p else lib.foreign_unwind_marker\n"
               "    print(p.rsplit('/', 1)[-1], m())\n"
               "b = bytearray(4 << 20)\n"
               "print('python', len(b))\n")
    envs = {"unwind": [a.unwind_dir], "zstd": [a.zstd_dir], "both": [a.unwind_dir, a.zstd_dir]}
    if a.zstd_dynamic:
        print("skip: the zstd stand-in first on the path (libtrace.so links libzstd.so.1 in this build)")
        envs = {"unwind": [a.unwind_dir]}
    programs = {
        "c": ([a.prog], True),
        "c_dlopen": ([a.prog, unwind, zstd], True),
        "c_linked": ([a.linked], True),
        "python": ([sys.executable, "-c", py_open], False),
        "python_dlopen": ([sys.executable, "-c", py_open, unwind, zstd], False),
    }
    # Opened after start by their bare names (the stand-ins of the
    # environment's folders), or needed by a plugin opened after start.
    later = {
        "c_bare": [a.prog],
        "python_bare": [sys.executable, "-c", py_open],
        "c_plugin": [a.prog, a.plugin],
    }
    if a.unwind_shared_soname:
        print("skip: libunwind.so.8 opened by name after start (no libgputrace-unwind.so.8 in this build)")
        later = {}
    failures = []
    for env_name, dirs in envs.items():
        runs = dict(programs)
        bare = ["libunwind.so.8"] if a.unwind_dir in dirs else []
        bare += ["libzstd.so.1"] if a.zstd_dir in dirs else []
        for prog_name, cmd in later.items():
            if prog_name == "c_plugin":
                if a.unwind_dir in dirs:
                    runs[prog_name] = (cmd, True)
            else:
                runs[prog_name] = (cmd + bare, prog_name.startswith("c"))
        for prog_name, (cmd, native) in runs.items():
            name = "%s-%s" % (env_name, prog_name)
            if prog_name == "c_linked" and a.unwind_dir not in dirs:
                continue   # it needs the stand-in libunwind on its path
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            env["LD_LIBRARY_PATH"] = ":".join(dirs + [x for x in [os.environ.get("LD_LIBRARY_PATH")] if x])
            plain = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if plain.returncode != 0:
                failures.append("%s: fails without the preload (%d): %s" % (name, plain.returncode,
                                                                            plain.stdout + plain.stderr))
                continue
            log = os.path.join(a.work, name + ".tlog")
            if os.path.exists(log):
                os.unlink(log)
            env.update(LD_PRELOAD=a.preload, TRACE_OUTPUT=log, TRACE_HOST_BUFFERS="1")
            traced = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if (traced.returncode, traced.stdout) != (plain.returncode, plain.stdout):
                failures.append("%s: traced status %d, output %r (without: %d, %r); stderr: %s" % (
                    name, traced.returncode, traced.stdout, plain.returncode, plain.stdout,
                    traced.stderr.strip()))
                continue
            if native and a.sanitized:
                print("ok  %s (status and output; no host blocks under the sanitizers)" % name)
                continue
            # The tools with the environment of this test's caller, not the program's.
            summary = subprocess.run([a.dump, "--summary", log], capture_output=True, text=True)
            text = summary.stdout
            if summary.returncode != 0 or "clean (END record read)" not in text:
                failures.append("%s: the log does not read to a clean END:\n%s%s" % (
                    name, text, summary.stderr))
                continue
            if "native_stacks=" in text:
                failures.append("%s: the tracer lost its libunwind: %s" % (
                    name, [l for l in text.splitlines() if "native_stacks=" in l]))
                continue
            dump = subprocess.run([a.dump, "--json", "--kinds", "host_alloc", log],
                                  capture_output=True, text=True)
            events = [json.loads(l) for l in dump.stdout.splitlines() if l.startswith("{")]
            stacks = [e["native_stack"] for e in events
                      if e.get("kind") == "host_alloc" and e.get("native_stack")]
            mods = set(os.path.basename(f.get("module") or "") for s in stacks for f in s)
            prog = os.path.basename(cmd[0])
            if not stacks or (native and prog not in mods):
                failures.append("%s: no native stack%s among the log's host blocks "
                                "(%d stacks, modules %s)" % (name, " through " + prog if native else "",
                                                             len(stacks), sorted(mods)))
                continue
            print("ok  %s" % name)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
