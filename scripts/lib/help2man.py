#!/usr/bin/env python3
"""help2man.py - a man page made from a program's own --help output, so the
page says exactly what the program says.

    help2man.py --name NAME --summary TEXT --version V --out PAGE.1 \\
        --help-of CMD [ARGS...] [--help-of CMD [ARGS...]]...

Each --help-of runs one command (e.g. `trace-replay report --help`) and adds
its output to the page, in order.  A command that fails or prints nothing
fails the build: a page must never be empty or stale.
"""
import os
import subprocess
import sys


def roff(text):
    """Text as literal roff lines: backslashes escaped, lines that would be
    read as requests protected."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main(argv):
    opts, groups, current = {}, [], None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--help-of":
            current = []
            groups.append(current)
        elif current is None and arg in ("--name", "--summary", "--version", "--out"):
            opts[arg[2:]] = argv[i + 1]
            i += 1
        elif current is not None:
            current.append(arg)
        else:
            sys.exit("help2man.py: unexpected argument %r" % arg)
        i += 1
    if not groups or any(k not in opts for k in ("name", "summary", "version", "out")):
        sys.exit(__doc__.strip())
    name = opts["name"]
    page = [
        '.TH "%s" 1 "" "gputrace %s" "User Commands"' % (name.upper(), opts["version"]),
        ".SH NAME",
        "%s \\- %s" % (name.replace("-", "\\-"), opts["summary"]),
    ]
    for n, cmd in enumerate(groups):
        p = subprocess.run(cmd, capture_output=True, text=True)
        text = p.stdout or p.stderr
        if p.returncode != 0 or not text.strip():
            sys.exit("help2man.py: %s exited %d with %r" % (" ".join(cmd), p.returncode, text[:200]))
        title = "DESCRIPTION" if n == 0 else " ".join([name] + cmd[1:-1]).upper()
        page += [".SH %s" % ('"%s"' % title if " " in title else title), ".nf", roff(text), ".fi"]
    page += [
        ".SH \"SEE ALSO\"",
        "trace-run(1), trace-replay(1), trace-dump(1), trace-bundle(1), torch-snapshot-import(1);",
        "README.md and docs/ in the gputrace source.",
    ]
    os.makedirs(os.path.dirname(os.path.abspath(opts["out"])), exist_ok=True)
    with open(opts["out"] + ".tmp", "w") as f:
        f.write("\n".join(page) + "\n")
    os.replace(opts["out"] + ".tmp", opts["out"])


if __name__ == "__main__":
    main(sys.argv[1:])
