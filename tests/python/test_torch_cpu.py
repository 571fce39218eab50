"""Real PyTorch on the CPU, bare and traced: the same program, the same results.

PyTorch's PyPI wheel for Linux is the CUDA build: importing it loads
libtorch_cuda.so, the CUDA runtime and the nvidia-* libraries even where no
GPU or driver exists, so the recorder's CUDA hooks (dlopen, the runtime's
entry points) meet a real CUDA stack that finds no device, and its Python
hooks meet a large real extension.  Each workload runs bare, then traced
with the defaults, with TRACE_PY_ALLOCS=1 and with TRACE_HOST_BUFFERS=1;
checked per traced run:

  - the exit status, stdout and stderr are the bare run's (losses printed
    with repr under the same seed, so a changed result shows; torch's own
    log lines lose their time and pid);
  - every log the run left (DataLoader workers included) is whole: trace-dump
    --summary reads an END record and no damage, the ending it names is the
    way the process ended, and the --json stream's last event is the end;
  - trace-replay check --model torch says clean and report exits 0.

Workloads (workloads/torch_*.py): a small MLP with Adam on two intra-op
threads, torch.save/torch.load, torch.cuda.is_available()/device_count();
a DataLoader with two forked workers over two epochs (the parent's log and
its workers' name it as their parent; every worker leaves a log when object
allocations are recorded, so four); endings by exception, os._exit(3) and
SIGTERM from outside; autograd.grad, torch.jit.script and the torch.cuda
memory APIs that must fail cleanly without a GPU.

Skips (77) where no Python with torch is found: set TRACE_TORCH_PYTHON to
the interpreters (':'-separated) of virtual environments with torch
installed; otherwise the interpreters pytrace finds and python3 on PATH are
tried.  ctest never installs torch (the CUDA wheel and its libraries are
some gigabytes).

    test_torch_cpu.py --preload LIBTRACE --pylog PYLOG --dump TRACE_DUMP --replay TRACE_REPLAY
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytrace as pt

MODES = {
    "default": {},
    "py_allocs": {"TRACE_PY_ALLOCS": "1"},
    "host_buffers": {"TRACE_HOST_BUFFERS": "1"},
}
# name: (workload, arguments, the ending the log must name)
PROGRAMS = {
    "train": ("torch_train.py", ["120"], "exit"),
    "loader": ("torch_loader.py", [], "exit"),
    "exception": ("torch_ending.py", ["exception"], "exit"),
    "os_exit": ("torch_ending.py", ["exit"], "_exit 3"),
    "sigterm": ("torch_ending.py", ["sigterm"], "signal SIGTERM"),
    "extras": ("torch_extras.py", [], "exit"),
}


def candidates(requested):
    env = os.environ.get("TRACE_TORCH_PYTHON")
    if env:
        return [p for p in env.split(":") if p]
    found = list(requested) or [p for p, _ in pt.find_interpreters()]
    py3 = shutil.which("python3")
    if py3:
        found.append(py3)
    return found


def has_torch(python):
    try:
        r = subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def normalise(text):
    # torch's logging prefix: "W1206 21:43:22.627000 21444 file.py:183] ..."
    return re.sub(r"^([WIE])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", r"\1 ", text, flags=re.M)


def run(python, name, workdir, env_extra):
    script, argv, _ = PROGRAMS[name]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("TRACE_EXIT_LINE", None)
    env.update(env_extra)
    p = subprocess.Popen([python, pt.workload(script)] + argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=workdir, text=True)
    if name == "sigterm":
        head = ""
        while "ready" not in head:
            line = p.stdout.readline()
            if not line:
                break
            head += line
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=300)
        return p.returncode, head + out, err
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err


def check_log(args, fails, where, path, ending):
    s = subprocess.run([args.dump, "--summary", path], capture_output=True, text=True)
    fails.check(s.returncode == 0, "%s: trace-dump --summary exit %d: %s" % (where, s.returncode, s.stderr[-300:]))
    fails.check("end         clean (END record read)" in s.stdout, "%s: no clean END:\n%s" % (where, s.stdout))
    fails.check("damage      none" in s.stdout, "%s: damage:\n%s" % (where, s.stdout))
    fails.check("info: ending=%s\n" % ending in s.stdout, "%s: not ending=%s:\n%s" % (where, ending, s.stdout))
    # Streamed: a log with every object allocation is millions of lines.
    j = subprocess.Popen([args.dump, "--json", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    last = ""
    for line in j.stdout:
        last = line
    fails.check(j.wait() == 0 and '"kind":"end"' in last, "%s: --json does not end with the end: %s" % (where, last[:200]))
    c = subprocess.run([args.replay, "check", "--model", "torch", path], capture_output=True, text=True)
    fails.check(c.returncode == 0 and "verdict: clean" in c.stdout,
                "%s: check --model torch exit %d:\n%s%s" % (where, c.returncode, c.stdout[-500:], c.stderr[-300:]))
    r = subprocess.run([args.replay, "report", path], capture_output=True, text=True)
    fails.check(r.returncode == 0, "%s: report exit %d: %s" % (where, r.returncode, r.stderr[-300:]))


def check_python(args, fails, python, tmp):
    for name, (_, _, ending) in PROGRAMS.items():
        bare_dir = os.path.join(tmp, name + "-bare")
        os.makedirs(bare_dir)
        brc, bout, berr = run(python, name, bare_dir, {})
        print("   %s: bare exit %d" % (name, brc), flush=True)
        for mode, extra in MODES.items():
            where = "%s %s %s" % (python, name, mode)
            d = os.path.join(tmp, "%s-%s" % (name, mode))
            os.makedirs(d)
            env = dict(extra, LD_PRELOAD=args.preload, TRACE_OUTPUT=os.path.join(d, "trace-%p.tlog"))
            rc, out, err = run(python, name, d, env)
            fails.check(rc == brc, "%s: exit %d, bare %d" % (where, rc, brc))
            fails.check(out == bout, "%s: stdout differs\n--- bare\n%s--- traced\n%s" % (where, bout, out))
            fails.check(normalise(err) == normalise(berr),
                        "%s: stderr differs\n--- bare\n%s--- traced\n%s" % (where, berr, err))
            logs = sorted(f for f in os.listdir(d) if f.endswith(".tlog"))
            workers = [f for f in logs if is_worker(args, os.path.join(d, f))]
            mains = [f for f in logs if f not in workers]
            for f in mains:
                check_log(args, fails, "%s %s" % (where, f), os.path.join(d, f), ending)
            for f in workers:
                check_log(args, fails, "%s %s" % (where, f), os.path.join(d, f), "_exit 0")
                fails.check(mains and forked_from(args, os.path.join(d, f)) == mains[0][6:-5],
                            "%s %s: not forked from %s" % (where, f, mains))
            fails.check(len(mains) == 1, "%s: %d logs of the main process: %s" % (where, len(mains), logs))
            if name == "loader":
                # Every worker records its objects with TRACE_PY_ALLOCS=1; with the
                # defaults only those that collected (a worker that records nothing
                # leaves no log), so some, not necessarily four.
                want = 4 if mode == "py_allocs" else None
                fails.check(want is None or len(workers) == want,
                            "%s: %d worker logs, want %s" % (where, len(workers), want))
            else:
                fails.check(not workers, "%s: unexpected child logs %s" % (where, workers))
            print("   %s %s: exit %d, %d log(s)" % (name, mode, rc, len(logs)), flush=True)


def forked_from(args, path):
    """The pid (a string) the log's INFO forked names, or None."""
    s = subprocess.run([args.dump, "--summary", path], capture_output=True, text=True)
    m = re.search(r"^info: forked=from pid (\d+)", s.stdout, re.M)
    return m.group(1) if m else None


def is_worker(args, path):
    return forked_from(args, path) is not None


def main():
    args = pt.parse_args(lambda p: (p.add_argument("--dump", required=True),
                                    p.add_argument("--replay", required=True)))
    pythons = [p for p in dict.fromkeys(candidates(args.python)) if os.access(p, os.X_OK) and has_torch(p)]
    if not pythons:
        print("SKIP: no Python with torch (set TRACE_TORCH_PYTHON to the python of a virtual environment "
              "with torch installed)")
        return pt.SKIP
    fails = pt.Failures()
    for python in pythons:
        print("== %s" % python, flush=True)
        with tempfile.TemporaryDirectory(prefix="torch_cpu.") as tmp:
            check_python(args, fails, python, tmp)
    fails.finish()


if __name__ == "__main__":
    sys.exit(main())
