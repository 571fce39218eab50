"""installcheck.py - what the install tests share: checks that are counted
rather than fatal (one run reports every broken promise), the wheelhouse
scripts/lib/setup.sh fills, and fresh venvs made from it without a network."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
failures = []


def check(cond, msg):
    print(("ok    " if cond else "FAIL  ") + msg)
    if not cond:
        failures.append(msg)
    return cond


def finish(what):
    """The exit status: 1 when any check failed."""
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all %s checks passed" % what)
    return 0


def wheelhouse():
    """Where scripts/lib/setup.sh keeps the wheels (TRACE_WHEELHOUSE there too)."""
    return os.environ.get("TRACE_WHEELHOUSE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gputrace", "wheels")


def has_wheel(name):
    wheels = wheelhouse()
    return os.path.isdir(wheels) and any(n.startswith(name + "-") for n in os.listdir(wheels))


def offline_env(**extra):
    """pip with the wheelhouse only (no index, no other find-links), and
    nothing of the build tree or a traced parent."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("LD_PRELOAD", "TRACE_LIB", "TRACE_REPLAY", "PYTHONPATH",
                                                   "GPUTRACE_PREFIX", "TRACE_OUTPUT")}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=wheelhouse(), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(extra)
    return env


def make_venv(path, *packages):
    """A fresh venv of the interpreter running this test (its real path, not
    a pyenv shim), with packages installed from the wheelhouse.  Exits 77
    when this interpreter cannot make venvs; returns its python."""
    python = os.path.realpath(sys.executable)
    p = subprocess.run([python, "-m", "venv", path], capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: %s cannot make a venv: %s" % (python, p.stderr[-300:]))
        sys.exit(SKIP)
    vpy = os.path.join(path, "bin", "python")
    if packages:
        p = subprocess.run([vpy, "-m", "pip", "install", "-q"] + list(packages), env=offline_env(),
                           capture_output=True, text=True)
        if not check(p.returncode == 0, "%s install offline into a fresh venv: %s"
                     % (" and ".join(packages), p.stderr[-500:])):
            sys.exit(1)
    return vpy
