"""Helpers for the end-to-end tests: find an interpreter that collects inside
allocations (3.8 to 3.11), build the cupy5_pool fixture for it, run the
workload (with or without the tracer), run trace-replay.

Exit status 77 from a test means "skipped" (no suitable interpreter).
"""
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.normpath(os.path.join(HERE, "..", "fixtures", "cupy5_pool"))
WORKLOAD = os.path.join(FIXTURE, "workload.py")
SYNCHRONOUS_GC = ("3.11", "3.10", "3.9", "3.8")   # best first


def version_of(python):
    done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def candidates():
    """Interpreters named by TRACE_E2E_PYTHON, else pyenv's and PATH's."""
    if os.environ.get("TRACE_E2E_PYTHON"):
        return [os.environ["TRACE_E2E_PYTHON"]]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for version in SYNCHRONOUS_GC + ("3.12", "3.13"):
        found += sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                               "python" + version)))
        on_path = shutil.which("python" + version)
        if on_path:
            found.append(on_path)
    return found


def find_python(versions=SYNCHRONOUS_GC):
    """(path, version) of the best interpreter among versions, or None."""
    found = {}
    for python in candidates():
        version = version_of(python)
        if version in versions and version not in found:
            found[version] = python
    for version in versions:
        if version in found:
            return found[version], version
    return None


def require_python(versions=SYNCHRONOUS_GC):
    found = find_python(versions)
    if found is None:
        print("SKIP: no Python %s found (set TRACE_E2E_PYTHON)" % " or ".join(versions))
        sys.exit(SKIP)
    return found


def build_fixture(python, version, build_dir):
    """Builds cupy5_pool for python under build_dir; returns its directory."""
    out = os.path.join(build_dir, "cupy5_pool", version)
    done = subprocess.run([os.path.join(FIXTURE, "build.sh"), python, out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit("building cupy5_pool failed:\n" + done.stderr)
    return out


# A command's bound is CPU time, not the wall clock: on a busy machine a
# replay that needs 20 s of CPU can take ten times that (minimize did, in
# e2e_seed000, past a 300 s wall-clock timeout).  The wall-clock guard only
# catches a command that sleeps for ever, and says which; ctest's TIMEOUT is
# the last resort.
WALL_GUARD = 550


def run_bounded(command, cpu_seconds, **kw):
    """subprocess.run with RLIMIT_CPU (the kernel ends the command with
    SIGXCPU past it) and the wall-clock guard; SystemExit says which bound
    a command ran into."""
    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    try:
        done = subprocess.run(command, preexec_fn=limit, timeout=WALL_GUARD, **kw)
    except subprocess.TimeoutExpired:
        raise SystemExit("%s: still running after %d s of wall clock (asleep?)" % (command[:2], WALL_GUARD))
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise SystemExit("%s: used more than %d s of CPU (status %d)" % (command[:2], cpu_seconds, done.returncode))
    return done


class Outcome:
    """What one workload run printed: failed (bool), iteration (of failure,
    or the iterations run), broken_since (the first iteration after which
    the arena was inconsistent; None when it stayed sound or was not
    checked)."""

    def __init__(self, done):
        self.done = done
        self.line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        self.failed = self.line.startswith("FAILED ")
        number = re.search(r"iterations?=(\d+)", self.line)
        self.iteration = int(number.group(1)) if number else None
        since = re.search(r"arena_broken_since=(\d+)", self.line)
        self.broken_since = int(since.group(1)) if since else None

    def __str__(self):
        return self.line or ("exit status %d: %s" % (self.done.returncode, self.done.stderr[-2000:]))


def run_workload(python, module_dir, seed, iterations, gc_guard=False, check_arena=False,
                 preload=None, log=None, cpu_seconds=120, hook_objects=False, settings=None):
    command = [python, WORKLOAD, "--module-dir", module_dir, "--seed", str(seed),
               "--iterations", str(iterations)]
    if gc_guard:
        command.append("--gc-guard")
    if hook_objects:
        command.append("--hook-objects")
    if check_arena:
        command.append("--check-arena")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
        env["TRACE_OUTPUT"] = log
        env["TRACE_QUIET"] = "1"
        env.update(settings or {})
    done = run_bounded(command, cpu_seconds, env=env, capture_output=True, text=True)
    return Outcome(done)


class Failures:
    """Collects failed checks so one run reports all of them."""

    def __init__(self):
        self.messages = []

    def check(self, condition, message):
        if not condition:
            self.messages.append(message)
            print("FAIL: " + message, flush=True)
        return condition

    def finish(self):
        if self.messages:
            print("%d check(s) failed" % len(self.messages))
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)
