"""gputrace COMMAND [ARGS...]: one entry point for the recorder's tools.

    gputrace run [options] -- COMMAND...   trace a command, then show the report (trace-run)
    gputrace report LOG... | DIR [--json] [--html OUT]   one log, or a process tree of several
    gputrace check LOG [--model M]         replay the pool, stop at the first broken invariant
    gputrace explore LOG                   inject collections at the pool's re-entrancy points
    gputrace minimize LOG -o OUT           shrink a violating log
    gputrace stats LOG                     peaks, fragmentation, segments over time
    gputrace export --perfetto OUT LOG     Perfetto's protobuf trace for ui.perfetto.dev
    gputrace import [-o OUT] JSONL         trace-dump --json's lines back into a log
    gputrace dump LOG [--json|--summary]   print a log's events (trace-dump)
    gputrace bundle LOG                    one archive for a bug report (trace-bundle)
    gputrace torch-import SNAPSHOT         a PyTorch memory snapshot as a log
    gputrace paths                         where the library and the programs are

Each command is the program of the same job, run with the arguments given;
`gputrace COMMAND --help` prints its own help, and the exit status is its.
`python -m gputrace` is the same.  `pytest --gputrace` traces a test session
(see the plugin's options in `pytest --help`).
"""
import os
import sys

import gputrace

# command -> (program, arguments put before the user's)
COMMANDS = {
    "run": ("trace-run", []),
    "report": ("trace-replay", ["report"]),
    "check": ("trace-replay", ["check"]),
    "explore": ("trace-replay", ["explore"]),
    "minimize": ("trace-replay", ["minimize"]),
    "stats": ("trace-replay", ["stats"]),
    "export": ("trace-replay", ["export"]),
    "import": ("trace-replay", ["import"]),
    "dump": ("trace-dump", []),
    "bundle": ("trace-bundle", []),
    "torch-import": ("torch-snapshot-import", []),
}
# The programs written in Python run with this interpreter, whatever their
# #! line finds on PATH.
PYTHON_PROGRAMS = {"trace-run", "trace-bundle", "torch-snapshot-import"}


def paths():
    print("prefix        %s" % gputrace.prefix())
    print("libtrace.so   %s" % gputrace.libtrace())
    for program in ("trace-run", "trace-replay", "trace-dump", "trace-bundle", "torch-snapshot-import"):
        print("%-13s %s" % (program, gputrace.tool(program)))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print("gputrace %s" % gputrace.__version__)
        return 0
    if argv[0] == "paths":
        return paths()
    if argv[0] not in COMMANDS:
        print("gputrace: unknown command %r (gputrace --help lists them)" % argv[0], file=sys.stderr)
        return 2
    program, head = COMMANDS[argv[0]]
    path = gputrace.tool(program)
    if not os.path.exists(path):
        print("gputrace: %s not found (a broken install, or an unbuilt checkout)" % path, file=sys.stderr)
        return 2
    cmd = ([sys.executable, path] if program in PYTHON_PROGRAMS else [path]) + head + argv[1:]
    sys.stdout.flush()
    sys.stderr.flush()
    # The installed trace-run and trace-bundle find the package's library
    # and trace-replay from their own place, as in any install prefix.
    os.execv(cmd[0], cmd)
    return 127   # not reached


if __name__ == "__main__":
    sys.exit(main())
