"""gputrace: a flight recorder for GPU and Python memory bugs.

The package carries the recorder (libtrace.so) and the tools (trace-run,
trace-replay, trace-dump, trace-bundle) as a small install prefix inside
itself, laid out as `cmake --install` lays out any prefix:

    gputrace/bin/     trace-run trace-replay trace-dump trace-bundle torch-snapshot-import
    gputrace/lib/     libtrace.so
    gputrace/include/ trace_api.h

`gputrace ...` and `python -m gputrace ...` run them (see gputrace.cli); the
pytest plugin (gputrace.pytest_plugin, `pytest --gputrace`) traces a test
session.  From a source checkout without installing, the tools are taken
from the checkout's build/ folder.
"""
import os
import sys

__all__ = ["__version__", "prefix", "libtrace", "tool", "mark"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _version():
    try:
        from importlib.metadata import version
        return version("gputrace")
    except Exception:       # not installed: a source checkout
        return "0+unknown"


__version__ = _version()


def prefix():
    """The folder holding bin/ and lib/: GPUTRACE_PREFIX when set (another
    install prefix or build folder), else the package itself once installed,
    else the source checkout's build/ (python/gputrace -> build)."""
    if os.environ.get("GPUTRACE_PREFIX"):
        return os.path.abspath(os.environ["GPUTRACE_PREFIX"])
    if os.path.exists(os.path.join(_HERE, "lib", "libtrace.so")):
        return _HERE
    return os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build")


def libtrace():
    """The absolute path of libtrace.so: TRACE_LIB when set (LD_PRELOAD's
    colon-separated form), else the package's own."""
    named = os.environ.get("TRACE_LIB")
    if named:
        return ":".join(os.path.abspath(p) if "/" in p else p for p in named.split(":") if p)
    return os.path.join(prefix(), "lib", "libtrace.so")


def tool(name):
    """The absolute path of one of the package's programs (trace-replay, ...);
    TRACE_REPLAY names another trace-replay."""
    if name == "trace-replay" and os.environ.get("TRACE_REPLAY"):
        return os.path.abspath(os.environ["TRACE_REPLAY"])
    path = os.path.join(prefix(), "bin", name)
    if not os.path.exists(path) and not os.path.isabs(name):
        # In a checkout, the Python tools are the scripts themselves.
        script = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "scripts", name)
        if os.path.exists(script):
            return script
    return path


def mark(text):
    """Record a free-text mark in the log of this process, when it runs
    under the recorder (a no-op otherwise).

    The mark goes through the audit hook the recorder installs (the audit
    event "gputrace.mark"): the recorder reads the text in place, so the
    call adds no allocation between the caller's last allocation and the
    mark, and a collection cannot start inside it."""
    sys.audit("gputrace.mark", text)


def flush():
    """Ask the recorder to write everything recorded so far to the log now
    (the audit event "gputrace.flush"; a no-op without the recorder)."""
    sys.audit("gputrace.flush")
