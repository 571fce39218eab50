"""A double initialisation found in the wild (issue 12, point 8): numpy 2.x's
array_converter_new (numpy/_core/src/multiarray/array_converter.c) calls
PyObject_NewVar and then PyObject_InitVar on the same object, once per
np.linspace call.  On every interpreter with the numpy scripts/test installs,
a smoke run (workloads/numpy_smoke.py) must give exactly that finding:
type numpy._core._multiarray_umath._array_converter, 7 times from the
np.linspace line, innermost native frame array_converter_new (numpy 1.x has
no such code: no finding at all); and no double initialisation of any other
type (that would be a false positive)."""
import json
import subprocess

import pytrace as pt


def extra(p):
    p.add_argument("--replay", required=True)


args = pt.parse_args(extra)
fails = pt.Failures()
script = pt.workload("numpy_smoke.py")
line = pt.line_of(script, "linspace")
CONVERTER = "numpy._core._multiarray_umath._array_converter"
seen_numpy = []


def numpy_major(python):
    out = subprocess.run([python, "-c", "import numpy; print(numpy.__version__)"],
                         capture_output=True, text=True)
    return int(out.stdout.split(".")[0]) if out.returncode == 0 else None


def check(python, version):
    tag = "%s (%s)" % (version, python)
    major = numpy_major(python)
    if major is None:
        print("   numpy not installed for %s: skipped (scripts/test installs it)" % tag)
        return
    seen_numpy.append(tag)
    run, log = pt.run_traced_keep([python, script], args.preload, args.pylog)
    try:
        if not fails.check(run.proc.returncode == 0 and "ok" in run.proc.stdout,
                           "%s: smoke run failed: %s" % (tag, run.proc.stderr[-800:])):
            return
        mechanism = run.info("py_double_init")
        if not mechanism or not mechanism[0].startswith("on"):
            print("   %s: double-init check %s; skipped" % (tag, mechanism))
            return
        events = run.of("py_double_init")
        others = sorted({e["type"] for e in events if e["type"] != CONVERTER})
        fails.check(not others, "%s: double initialisations of other types (false positives?): %s"
                    % (tag, others))
        at_line = [e for e in events if e["type"] == CONVERTER and
                   any(f[0] == script and f[1] == line for f in e["py"])]
        want = 7 if major >= 2 else 0
        fails.check(len(at_line) == want, "%s: %d _array_converter double inits from the linspace "
                    "line, expected %d" % (tag, len(at_line), want))
        if major < 2:
            fails.check(not events, "%s: numpy %d has no array_converter, yet %d findings"
                        % (tag, major, len(events)))
            return
        report = subprocess.run([args.replay, "report", "--json", log], capture_output=True, text=True)
        if not fails.check(report.returncode == 0, "%s: trace-replay report failed: %s"
                           % (tag, report.stderr[-500:])):
            return
        doc = json.loads(report.stdout)
        groups = doc.get("double_inits") or []
        fails.check(groups and all(g["type"] == CONVERTER for g in groups),
                    "%s: report's double inits: %s" % (tag, [g["type"] for g in groups]))
        totals = doc.get("double_init_types") or []
        counted = sum(t["count"] for t in totals)
        fails.check([t["type"] for t in totals] == [CONVERTER] and counted == len(events),
                    "%s: report counts %d (%s), log has %d" % (tag, counted, totals, len(events)))
        fails.check(all(g["native_stack"] and (g["native_stack"][0].get("function") or "").startswith("array_converter_new")
                        for g in groups),
                    "%s: the C function is not array_converter_new: %s"
                    % (tag, [g["native_stack"][:1] for g in groups]))
    finally:
        pt.discard(log)


pt.for_each_interpreter(args.python, check, fails)
