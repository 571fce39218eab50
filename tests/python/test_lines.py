"""The recorder reads each code object's line table itself
(preload/python_lines.c) instead of calling PyCode_Addr2Line: on every
interpreter, every offset of every code object compiled from a sample of
the standard library (module bodies with long tables among them) must get
PyCode_Addr2Line's own answer, asked through ctypes in that interpreter.
line_check.c does the asking of ours, in four orders; test_stacks.py
checks the lines of recorded stacks end to end."""
import os
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--line-check", required=True))
fails = pt.Failures()

# Runs inside the interpreter under test; writes line_check.c's input.
DUMP = r'''
import ctypes, glob, os, struct, sys, sysconfig
out, budget = sys.argv[1], int(sys.argv[2])
addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int
v = sys.version_info[:2]
fmt = 1 if v < (3, 10) else 2 if v < (3, 11) else 3
step = 1 if v < (3, 10) else 2
stdlib = sysconfig.get_paths()["stdlib"]
# The largest module bodies first, then the rest in name order.
files = sorted(glob.glob(os.path.join(stdlib, "*.py")))
big = [os.path.join(stdlib, n) for n in ("_pydecimal.py", "typing.py", "argparse.py", "pydoc.py")]
files = [f for f in big if os.path.exists(f)] + [f for f in files if f not in big]

def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, type(co)):
            yield from codes(c)

asked = 0
with open(out, "wb") as f:
    f.write(b"PYLINES1" + bytes([fmt]))
    for path in files:
        if asked >= budget:
            break
        try:
            with open(path, "rb") as src:
                top = compile(src.read(), path, "exec")
        except (SyntaxError, ValueError, OSError):
            continue
        for co in codes(top):
            table = co.co_lnotab if fmt == 1 else co.co_linetable
            offsets = range(0, len(co.co_code), step)
            f.write(struct.pack("<iI", co.co_firstlineno, len(table)) + table)
            f.write(struct.pack("<I", len(offsets)))
            f.write(b"".join(struct.pack("<ii", o, addr2line(co, o)) for o in offsets))
            asked += len(offsets)
print("%d offsets asked of PyCode_Addr2Line" % asked)
'''


def check(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "lines.bin")
        dump = subprocess.run([python, "-c", DUMP, data, "400000"], capture_output=True, text=True)
        print(dump.stdout, end="")
        if not fails.check(dump.returncode == 0, "%s: the dump failed:\n%s" % (version, dump.stderr[-2000:])):
            return
        run = subprocess.run([args.line_check, data], capture_output=True, text=True)
        print(run.stdout, end="")
        fails.check(run.returncode == 0, "%s: lines differ from PyCode_Addr2Line's\n%s"
                    % (version, run.stderr[-2000:]))


pt.for_each_interpreter(args.python, check, fails)
