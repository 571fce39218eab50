#!/usr/bin/env python3
"""test_gpu_bundle.py - scripts/gpu-check's bundle, made here for a GPU
machine that has no compiler and no packages (docs/gpu-check.md):

  - `gpu-check --prepare DIR` leaves libtrace.so, trace-replay, tlog_events,
    the CUDA C program with either runtime (where the toolkit is), cudart/
    with the shared runtime, and deps/ with every shared library those
    programs load beyond the C library (each one named by ldd is there),
    and libtrace.so's libunwind beside it (lib/libgputrace-unwind.so.8),
    which it opens by path;
  - on the GPU machine only the carried libraries the machine lacks go on
    LD_LIBRARY_PATH (a library of a made-up name: carried; libzstd, which
    this machine has: not);
  - `gpu-check --no-build --build DIR` here, without a GPU, says it skipped
    and exits 77, nothing compiled.

    test_gpu_bundle.py --work DIR
"""
import argparse
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys

from installcheck import ROOT, check, finish

GPU_CHECK = os.path.join(ROOT, "scripts", "gpu-check")
# The C library's own, never carried (gpu-check's SYSTEM_LIBS), and the
# shared CUDA runtime, carried apart in cudart/.
NOT_CARRIED = ("linux-vdso", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
               "ld-linux", "libgcc_s.so", "libstdc++.so", "libcudart")


def load_gpu_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", GPU_CHECK)
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def needed(program):
    out = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines()
            if "=>" in line and not line.split()[0].startswith(NOT_CARRIED)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    bundle = os.path.join(args.work, "bundle")
    p = subprocess.run([sys.executable, GPU_CHECK, "--prepare", bundle], capture_output=True, text=True,
                       timeout=1200)
    if not check(p.returncode == 0, "gpu-check --prepare: exit 0 (%d: %s)" % (p.returncode, p.stderr[-500:])):
        return finish("gpu bundle")
    programs = [os.path.join(bundle, "lib", "libtrace.so")] + \
        [os.path.join(bundle, "bin", t) for t in ("trace-replay", "tlog_events")]
    native = [os.path.join(bundle, "bin", "gpu_native_" + v) for v in ("static", "shared")]
    toolkit = os.path.exists("/usr/local/cuda/include/cuda_runtime_api.h")
    for path in programs + (native if toolkit else []):
        check(os.path.exists(path), "the bundle has %s" % os.path.relpath(path, bundle))
    if toolkit:
        check(os.path.exists(os.path.join(bundle, "cudart", "libcudart.so.13")),
              "the bundle has cudart/libcudart.so.13")
    carried = set(os.listdir(os.path.join(bundle, "deps")))
    for path in programs + [n for n in native if os.path.exists(n)]:
        missing = needed(path) - carried
        check(not missing, "deps/ holds every library %s loads (missing: %s)"
              % (os.path.basename(path), sorted(missing) or "none"))
    check("libdw.so.1" in carried and "libzstd.so.1" in carried,
          "deps/ has libdw and libzstd (%s)" % sorted(carried))
    # libtrace.so opens libunwind by path, beside itself where the machine
    # has none at the build's path: carried there, with what it loads in deps/.
    lib = os.path.join(bundle, "lib")
    beside = [n for n in os.listdir(lib) if n.startswith(("libgputrace-unwind.so", "libunwind.so"))]
    check(len(beside) == 1, "the bundle has libtrace.so's libunwind beside it (%s)" % beside)
    if beside:
        unwind = os.path.join(lib, beside[0])
        missing = needed(unwind) - carried
        check(not missing, "deps/ holds every library %s loads (missing: %s)"
              % (beside[0], sorted(missing) or "none"))
    dyn = subprocess.run(["readelf", "-d", programs[0]], capture_output=True, text=True).stdout
    check("libunwind" not in dyn and "libzstd" not in dyn,
          "libtrace.so names neither libunwind nor libzstd in DT_NEEDED (LD_LIBRARY_PATH cannot "
          "put another first)")

    # Only what the machine lacks goes on the path.
    gpu_check = load_gpu_check()
    fake = os.path.join(args.work, "fake")
    shutil.copytree(os.path.join(bundle, "deps"), os.path.join(fake, "deps"))
    os.rename(os.path.join(fake, "deps", "libdw.so.1"),
              os.path.join(fake, "deps", "libgpucheckmadeup.so.1"))
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        gpu_check.use_bundled_deps(fake)
        path = os.environ.get("LD_LIBRARY_PATH", "").split(":")[0]
        chosen = sorted(os.listdir(path)) if path and os.path.isdir(path) else []
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    check(chosen == ["libgpucheckmadeup.so.1"],
          "only the library this machine lacks is put on LD_LIBRARY_PATH (%s)" % chosen)

    # Without a GPU: skipped, nothing built.
    has_gpu = gpu_check.have_gpu()
    p = subprocess.run([sys.executable, GPU_CHECK, "--no-build", "--build", bundle], capture_output=True,
                       text=True, timeout=300)
    if has_gpu:
        print("skip: this machine has a GPU; the --no-build run is gpu-check's own business")
    else:
        check(p.returncode == 77 and "SKIPPED" in p.stdout,
              "gpu-check --no-build without a GPU: exit 77, says SKIPPED (%d: %s)"
              % (p.returncode, p.stdout[-300:]))
    return finish("gpu bundle")


if __name__ == "__main__":
    sys.exit(main())
