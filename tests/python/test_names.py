#!/usr/bin/env python3
"""File and function names in Python stacks are the program's, byte for byte:

- a file name that is not UTF-8 (a byte Python decoded with surrogateescape,
  '\\udcff') is written as that byte, so os.fsencode of the name trace-dump
  gives back is the file's (old: the surrogate's UTF-8 encoding, ED B3 BF:
  '\\udced\\udcb3\\udcbf');
- a path longer than 1024 bytes is whole (old: cut at 1024 bytes without a
  word: a directory 'd' a third of the way down read as the file);
- a name longer than 4096 bytes is cut between characters and ends with
  '...' (old: cut silently at 1024).

usage: test_names.py --preload LIB --pylog PYLOG --dump TRACE-DUMP [--python PY]..."""
import json
import os
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--dump", required=True))
fails = pt.Failures()

PROGRAM = r'''
import os, sys
top = sys.argv[1]
deep = os.path.join(top, *["d%02d_" % i + "x" * 60 for i in range(24)])
os.makedirs(deep, exist_ok=True)
def run(path, fn):
    src = "def %s():\n    b = bytearray(%d)\n%s()\n" % (fn, SIZES[path], fn)
    exec(compile(src, path, "exec"), {})
long_fn = "g" * 4094 + "\u00e9" * 10
SIZES = {}
cases = [(os.path.join(top, "bad\udcff\u00e9.py"), "f_bad"),
         (os.path.join(deep, "deep.py"), "f_deep"),
         (os.path.join(top, "long.py"), long_fn)]
for i, (path, fn) in enumerate(cases):
    SIZES[path] = (3 << 20) + i
    run(path, fn)
'''


def check(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "names.tlog")
        prog = os.path.join(tmp, "names_prog.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_QUIET="1")
        p = subprocess.run([python, prog, tmp], env=env, capture_output=True, text=True)
        if not fails.check(p.returncode == 0, "%s: program failed: %s" % (version, p.stderr[-500:])):
            return
        d = subprocess.run([args.dump, "--json", log], capture_output=True, text=True)
        frames = {}
        for line in d.stdout.splitlines():
            e = json.loads(line)
            # bytearray(n) allocates n + 1 bytes
            i = e.get("size", 0) - (3 << 20) - 1
            if e.get("kind") == "host_alloc" and i in (0, 1, 2) and e.get("py_stack"):
                frames.setdefault(i, e["py_stack"][0])
        deep = os.path.join(tmp, *["d%02d_" % i + "x" * 60 for i in range(24)], "deep.py")
        want = {0: (os.fsencode(os.path.join(tmp, "bad\udcff\u00e9.py")), "f_bad"),
                1: (os.fsencode(deep), "f_deep")}
        for i, (path, fn) in want.items():
            f = frames.get(i)
            got = f and (os.fsencode(f["file"]), f["function"])
            fails.check(got == (path, fn), "%s: case %d: %r, expected %r" % (version, i, got, (path, fn)))
        f = frames.get(2) or {}
        fn = f.get("function") or ""
        fails.check(fn == "g" * 4094 + "\u00e9" + "...",
                    "%s: a name of 4104 bytes: %d characters, ending %r (expected 4094 g, one e-acute, '...')"
                    % (version, len(fn), fn[-8:]))


pt.for_each_interpreter(args.python, check, fails)
