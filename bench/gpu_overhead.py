#!/usr/bin/env python3
"""gpu_overhead: what libtrace.so costs real CuPy and PyTorch programs on a GPU.

For the GPU machine (no compiler there): the bundle scripts/gpu-check
--prepare DIR leaves (DIR/lib/libtrace.so and DIR/deps) is all it needs.

Each workload runs bare, traced with the default settings, and traced with
TRACE_PY_ALLOCS=1, in alternating rounds (bare, default, py_allocs, bare, ...)
so that a drift of the machine's speed lands on every mode alike. It reports,
as medians over the rounds and ratios against the bare run:

  loop     the wall time of the workload's steady loop (after the imports and
           the device's first use), with the device synchronised at both ends
  process  the whole process's CPU time (user + system), imports included

Workloads:
  torch_train    an MLP trained on the device (the caching allocator serves
                 nearly every tensor: few cudaMalloc calls)
  torch_nocache  PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is a
                 cudaMalloc and a cudaFree, through the recorder's CUDA hooks
  cupy_ops       small CuPy array expressions: every temporary is a request
                 to CuPy's pool (the recorder's pool hooks)
  cupy_cycles    CuPy arrays held by reference cycles, freed by the collector
                 (the recorder's gc callbacks and pool hooks together)

    bench/gpu_overhead.py --build DIR [--rounds N] [--workloads a,b] [--python PY]

Prints a markdown table; exit status 0, or 77 where there is no GPU.
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def steady(fn, sync):
    """Run fn once to warm up, then time it with the device synchronised."""
    fn()
    sync()
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    sync()
    return {"loop_s": time.perf_counter() - t0, "loop_cpu_s": time.process_time() - c0}


def torch_train():
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(512, 1024, device="cuda")
    y = torch.randint(0, 10, (512,), device="cuda")

    def work():
        for _ in range(300):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    return steady(work, torch.cuda.synchronize)


def torch_nocache():
    import torch

    def work():
        for i in range(1500):
            t = torch.empty(1 << 18, device="cuda")
            t.fill_(i)
            del t
    return steady(work, torch.cuda.synchronize)


def cupy_ops():
    import cupy as cp
    a = cp.arange(4096, dtype=cp.float32)

    def work():
        for _ in range(4000):
            b = (a * 2 + 1) / 3
            float(b[0])
    return steady(work, cp.cuda.Device().synchronize)


def cupy_cycles():
    import gc
    import cupy as cp

    class Node:
        pass

    def work():
        for _ in range(3000):
            n = Node()
            n.me = n
            n.buf = cp.empty(1 << 16, dtype=cp.uint8)
            del n
        gc.collect()
    return steady(work, cp.cuda.Device().synchronize)


def selftest():
    """No GPU: only the harness (for trying the script on any machine)."""
    def work():
        sum(i * i for i in range(300000))
    return steady(work, lambda: None)


WORKLOADS = {
    "torch_train": (torch_train, "torch", {}),
    "torch_nocache": (torch_nocache, "torch", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
    "cupy_ops": (cupy_ops, "cupy", {}),
    "cupy_cycles": (cupy_cycles, "cupy", {}),
    "selftest": (selftest, None, {}),
}
MODES = (("bare", None), ("default", {}), ("py_allocs", {"TRACE_PY_ALLOCS": "1"}))


def children_cpu():
    r = os.times()
    return r.children_user + r.children_system


def run_once(args, name, mode_env, workdir):
    env = dict(os.environ)
    env.update(WORKLOADS[name][2])
    if mode_env is not None:
        env.update(mode_env)
        env["LD_PRELOAD"] = os.path.join(args.build, "lib", "libtrace.so")
        env["TRACE_OUTPUT"] = os.path.join(workdir, name + "-%p.tlog")
    before = children_cpu()
    p = subprocess.run([args.python, os.path.abspath(__file__), "--workload", name],
                       env=env, capture_output=True, text=True, timeout=300)
    cpu = children_cpu() - before
    if p.returncode:
        raise SystemExit("%s (%s) failed, exit %d: %s" % (name, "bare" if mode_env is None else "traced",
                                                          p.returncode, p.stderr[-400:]))
    got = json.loads(p.stdout.strip().splitlines()[-1])
    got["process_cpu_s"] = cpu
    return got


def framework_present(python, module):
    if module is None:
        return True
    return subprocess.run([python, "-c", "import " + module], capture_output=True).returncode == 0


def have_gpu():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    except OSError:
        return os.path.exists("/dev/nvidia0")
    return p.returncode == 0 and "GPU" in p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-gpu"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workloads", default="torch_train,torch_nocache,cupy_ops,cupy_cycles")
    ap.add_argument("--work", help="keep the logs in this folder")
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.workload:
        print(json.dumps(WORKLOADS[args.workload][0]()))
        return 0

    names = [n for n in args.workloads.split(",") if n]
    if any(WORKLOADS[n][1] for n in names) and not have_gpu():
        print("gpu_overhead: SKIPPED: no GPU on this machine (nvidia-smi -L lists none)")
        return 77
    # The bundle's libraries, where this machine lacks them (as gpu-check does).
    loader = importlib.machinery.SourceFileLoader("gpu_check", os.path.join(REPO, "scripts", "gpu-check"))
    gpu_check = importlib.util.module_from_spec(importlib.util.spec_from_loader("gpu_check", loader))
    loader.exec_module(gpu_check)
    gpu_check.use_bundled_deps(args.build)

    workdir = args.work or os.path.join("/tmp", "gpu_overhead-%d" % os.getpid())
    os.makedirs(workdir, exist_ok=True)
    results = {}
    for name in names:
        if not framework_present(args.python, WORKLOADS[name][1]):
            print("gpu_overhead: %s skipped: %s is not importable" % (name, WORKLOADS[name][1]))
            continue
        runs = {m: [] for m, _ in MODES}
        for _ in range(args.rounds):
            for mode, env in MODES:
                runs[mode].append(run_once(args, name, env, workdir))
        results[name] = runs
        if not args.work:
            for f in os.listdir(workdir):
                os.unlink(os.path.join(workdir, f))

    dev = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip() \
        if have_gpu() else "no GPU"
    print("\n%s; Python %s; %d rounds, medians; ratios against the bare run\n"
          % (dev.split(" (UUID")[0], subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                                                     capture_output=True, text=True).stdout.strip(), args.rounds))
    print("| workload | bare loop (s) | default loop | py_allocs loop | bare process CPU (s) "
          "| default process CPU | py_allocs process CPU |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in results.items():
        med = {m: {k: statistics.median(r[k] for r in runs[m]) for k in ("loop_s", "process_cpu_s")}
               for m in runs}
        b = med["bare"]
        print("| %s | %.3f | %.3fx | %.3fx | %.2f | %.3fx | %.3fx |" % (
            name, b["loop_s"], med["default"]["loop_s"] / b["loop_s"], med["py_allocs"]["loop_s"] / b["loop_s"],
            b["process_cpu_s"], med["default"]["process_cpu_s"] / b["process_cpu_s"],
            med["py_allocs"]["process_cpu_s"] / b["process_cpu_s"]))
    print("\nraw: " + json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
