"""The recorder reads each code object's line table itself
(preload/python_lines.c) instead of calling PyCode_Addr2Line: on every
interpreter, every offset of every code object compiled from a sample of
the standard library (module bodies with long tables among them) must get
PyCode_Addr2Line's own answer, asked through ctypes in that interpreter
(line_check.c does the asking of ours, in four orders).  Then end to end,
with every GC allocation recorded: a module body of 400 lines, each making
a list, and a loop in a function, must give each allocation its own line,
and the recorder must not have called PyCode_Addr2Line
(addr2line_counter.c, preloaded first; not on a static interpreter, whose
own definition comes first)."""
import os
import subprocess
import sys
import tempfile

import pytrace as pt

def options(p):
    p.add_argument("--line-check", required=True)
    p.add_argument("--addr2line-counter", required=True)


args = pt.parse_args(options)
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


BODY_LINES = 400
LOOP = BODY_LINES + 4      # the line of out.append({i}) below


def workload(path):
    with open(path, "w") as f:
        for k in range(BODY_LINES):
            f.write("x%d = {%d}\n" % (k, k))   # a set: no free list, always allocated
        f.write("def f(n):\n    out = []\n    for i in range(n):\n        out.append({i})\n"
                "    return out\n\n\nf(50)\n")


def check_recorded(python, version):
    with tempfile.TemporaryDirectory() as tmp:
        body = os.path.join(tmp, "lines_body.py")
        workload(body)
        count = os.path.join(tmp, "count")
        static = pt.is_static(python)
        # Before libtrace.so, after a sanitizer's runtime (which must come first).
        parts = args.preload.split(":")
        preload = args.preload if static else ":".join(parts[:-1] + [args.addr2line_counter, parts[-1]])
        run = pt.run_traced([python, body], args.preload, args.pylog,
                            env={"TRACE_PY_ALLOCS": "1", "LD_PRELOAD": preload, "ADDR2LINE_COUNT": count})
        if not fails.check(run.proc.returncode == 0, "%s: the workload failed: %s"
                           % (version, run.proc.stderr[-2000:])):
            return
        lines = set()
        for e in run.events:
            if e.get("kind") == "py_alloc" and e["py"] and e["py"][0][0] == body:
                lines.add((e["py"][0][1], e["py"][0][2]))
        missing = [k + 1 for k in range(BODY_LINES) if (k + 1, "<module>") not in lines]
        fails.check(not missing, "%s: no allocation recorded at line(s) %s of the module body (%d lines "
                    "seen)" % (version, missing[:10], len(lines)))
        fails.check((LOOP, "f") in lines, "%s: no allocation at line %d in f" % (version, LOOP))
        # def f (a function object), f's own lines, and the call f(50)
        allowed = {(k, "<module>") for k in range(1, BODY_LINES + 2)} | {(BODY_LINES + 8, "<module>")}
        allowed |= {(k, "f") for k in range(BODY_LINES + 2, BODY_LINES + 6)}
        wrong = sorted(lines - allowed)
        fails.check(not wrong, "%s: allocations at lines that make none: %s" % (version, wrong[:10]))
        if static:
            print("%s: %d lines seen; PyCode_Addr2Line not counted (static interpreter)" % (version, len(lines)))
            return
        calls = int(open(count).read()) if os.path.exists(count) else -1
        # 3.8 and 3.9 call it themselves through the PLT (about 100 times in
        # a start): those calls are counted bare too.
        bare = pt.run_traced([python, body], args.preload, args.pylog, trace=False,
                             env={"LD_PRELOAD": args.addr2line_counter, "ADDR2LINE_COUNT": count})
        calls_bare = int(open(count).read()) if bare.proc.returncode == 0 and os.path.exists(count) else -1
        print("%s: %d lines seen, PyCode_Addr2Line called %d times from outside libpython (%d bare)"
              % (version, len(lines), calls, calls_bare))
        fails.check(calls_bare >= 0 and 0 <= calls - calls_bare <= 5,
                    "%s: PyCode_Addr2Line was called %d times, %d bare: the recorder fell back to it"
                    % (version, calls, calls_bare))


def check(python, version):
    check_recorded(python, version)
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
