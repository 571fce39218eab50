"""The report of a Python program (issue 12, points 4, 5 and 6):

- sites name the program's own line, the innermost frame outside the standard
  library and installed packages, and the library function it called:
  "np_cycles.py:12 (<module>) -> numpy ones"; device sites too (cudaMalloc
  through ctypes from a package in a site-packages directory);
- a run without the GPU gets a Python-shaped report: findings first (memory
  freed only by collections, double initialisations, GC pauses), no device or
  pool sections, no "0 choices matched", in text, JSON ("shape": "python")
  and HTML (the flame graph covers large host buffers);
- what was not watched is said instead of "0 B": TRACE_HOST_BUFFERS=0 reads
  "host buffers not watched", the recorder's not_watched records are listed,
  and a static interpreter's double-init section says the check was off
  instead of "none"."""
import json
import os
import re
import subprocess
import tempfile

import pytrace as pt


def extra(p):
    p.add_argument("--replay", required=True)
    p.add_argument("--cuda-doubles")


args = pt.parse_args(extra)
fails = pt.Failures()
NP = pt.workload("np_cycles.py")
CAST = pt.workload("ctypes_cast.py")


def report(log, *more):
    p = subprocess.run([args.replay, "report", log] + list(more), capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise AssertionError("trace-replay report %s: %d %s" % (" ".join(more), p.returncode, p.stderr[-500:]))
    return p.stdout


def sections(text):
    return [line for line in text.split("\n") if line and not line.startswith(" ")]


def check_numpy(python, tag):
    if subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode:
        print("   numpy not installed for %s: skipped" % tag)
        return
    if "libasan" in args.preload:
        # The sanitizer build does not hook malloc: NumPy's arrays (malloc on
        # most versions) are not seen there (python_host_allocators checks
        # that the log says so).
        print("   sanitizer build: NumPy's malloc'd arrays are not watched; skipped")
        return
    run, log = pt.run_traced_keep([python, NP, "cycle"], args.preload, args.pylog)
    try:
        if not fails.check(run.proc.returncode == 0, "%s: np_cycles failed" % tag):
            return
        text = report(log)
        line = pt.line_of(NP, "alloc")
        want = "np_cycles.py:%d (<module>) -> numpy ones" % line
        gc_part = text[text.find("\nGarbage collection"):]
        fails.check(want in gc_part, "%s: the collections' site is not '%s':\n%s" % (tag, want, gc_part[:1500]))
        heads = sections(text)
        fails.check(heads[:4] == ["trace-replay report: " + log, "Findings", "Garbage collection",
                                  "Double initialisations (an object initialised twice: the reference total drifts)"],
                    "%s: not findings first: %s" % (tag, heads[:6]))
        for absent in ("peak device", "Top device allocation sites", "Pool models", "Memory pools",
                       "choices matched", "fidelity", "device 0 B"):
            fails.check(absent not in text, "%s: a Python-only report shows '%s'" % (tag, absent))
        fails.check(re.search(r"garbage collection: \d+ collections, [\d.]+ ms paused", text),
                    "%s: no GC pause finding" % tag)
        data = json.loads(report(log, "--json"))
        fails.check(data.get("shape") == "python" and data.get("host_stacks"),
                    "%s: JSON shape %s, %d host stacks" % (tag, data.get("shape"), len(data.get("host_stacks") or [])))
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "r.html")
            report(log, "--html", page)
            html = open(page).read()
            fails.check('"shape":"python"' in html.replace(" ", "") and "all large host buffers" in html,
                        "%s: the HTML page has no host flame graph" % tag)
    finally:
        pt.discard(log)


def check_not_watched(python, tag):
    run, log = pt.run_traced_keep([python, CAST, "cast"], args.preload, args.pylog,
                                  env={"TRACE_HOST_BUFFERS": "0"})
    try:
        text = report(log)
        fails.check("host buffers not watched" in text and "peak host buffers" in text and
                    "not watched" in text.split("peak host buffers")[1].split("\n")[0],
                    "%s: TRACE_HOST_BUFFERS=0 still reads as 0 B:\n%s" % (tag, text[:2500]))
        fails.check("host buffers 0 B" not in text, "%s: 'host buffers 0 B' with host blocks off" % tag)
        fails.check("Not watched" in text and "TRACE_HOST_BUFFERS=0" in text,
                    "%s: no Not watched section" % tag)
    finally:
        pt.discard(log)


DEVICE_PROGRAM = '''
import ctypes, sys
sys.path.insert(0, sys.argv[2])
import fakegpu
p = fakegpu.alloc(sys.argv[1])                                      # LINE:device
'''
FAKEGPU = '''
import ctypes
def alloc(doubles):
    cudart = ctypes.CDLL(doubles + "/libcudart.so.13")
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 22))
    return p
'''


def check_device_site(python, tag):
    if not args.cuda_doubles:
        return
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "lib", "site-packages", "fakegpu")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write(FAKEGPU)
        prog = os.path.join(tmp, "device_user.py")
        with open(prog, "w") as f:
            f.write(DEVICE_PROGRAM)
        run, log = pt.run_traced_keep([python, prog, args.cuda_doubles, os.path.dirname(pkg)], args.preload,
                                      args.pylog, env={"LD_LIBRARY_PATH": args.cuda_doubles})
        try:
            text = report(log)
            want = "device_user.py:%d (<module>) -> fakegpu alloc" % pt.line_of(prog, "device")
            top = text[text.find("Top device allocation sites"):]
            fails.check(want in top, "%s: the device site is not '%s':\n%s" % (tag, want, top[:800]))
        finally:
            pt.discard(log)


def check_static(python, tag):
    """A static interpreter: the double-init check is on there too (the
    extension modules' GOT slots point at ours), so its section says "none"
    for a program without one.  With the check turned off
    (TRACE_PY_DOUBLE_INIT=0) the report says it was not watched rather
    than "none"."""
    if not pt.is_static(python):
        return
    # Every frame in the executable is the interpreter's (folded as
    # CPython's), not only its Py and _Py functions: cfunction_vectorcall_O
    # and run_mod were the program's own frames.
    run, log = pt.run_traced_keep([python, CAST, "cast"], args.preload, args.pylog)
    try:
        dump = os.path.join(os.path.dirname(args.replay), "trace-dump")
        out = subprocess.run([dump, "--json", log], capture_output=True, text=True).stdout
        exe = os.path.realpath(python)
        kinds, user = 0, set()
        for line in out.splitlines():
            e = json.loads(line)
            for f in e.get("native_stack") or []:
                if f.get("module") and os.path.realpath(f["module"]) == exe:
                    kinds += 1
                    if f.get("kind") not in ("interpreter", "startup"):
                        user.add("%s: %s" % (f.get("function"), f.get("kind")))
        fails.check(kinds and not user, "%s: %d frames in the executable, these not the interpreter's: %s"
                    % (tag, kinds, sorted(user)[:8]))
    finally:
        pt.discard(log)
    for setting, on in ((None, True), ("0", False)):
        env = {"TRACE_PY_DOUBLE_INIT": setting} if setting else {}
        run, log = pt.run_traced_keep([python, CAST, "cast"], args.preload, args.pylog, env=env)
        try:
            text = report(log)
            start = text.index("\nDouble initialisations")
            section = text[start:text.index("\n\n", start + 1)]
            unwatched = text.split("Not watched")[-1] if "Not watched" in text else ""
            if on:
                fails.check("none" in section and "double initialisations" not in unwatched,
                            "%s: the check is on, but the report says otherwise:\n%s" % (tag, section))
                continue
            fails.check("not watched: off" in section and "none" not in section,
                        "%s: with the check off, the report says it found nothing:\n%s" % (tag, section))
            fails.check("double initialisations: off" in unwatched,
                        "%s: the Not watched section lacks the double-init check" % tag)
        finally:
            pt.discard(log)


def check(python, version):
    tag = "%s (%s)" % (version, python)
    check_static(python, tag)
    check_numpy(python, tag)
    check_not_watched(python, tag)
    check_device_site(python, tag)


pt.for_each_interpreter(args.python, check, fails)
