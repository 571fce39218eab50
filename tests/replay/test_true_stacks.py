#!/usr/bin/env python3
"""Native stacks name what ran, checked against the sources' own lines:

- the innermost frame is a return address like the others (the recorder cuts
  its own frames off): the line named is the call's, not the one after it
  (old: `memset` line after the `malloc` call, truth_a.c:9 for :8);
- a library unloaded, and another loaded at its addresses, keeps its names in
  the report, which resolves stacks after reading the whole log (old: the
  later library's `frame_dummy` or `??` with its file and lines);
- a library linked without a build-id and rebuilt at the same path after the
  run is not read as the recorded one (old: the new build's functions and
  lines);
- code inlined into a function is named with its line: `inlined` says which
  function's code the line is in (old: only the function it was inlined
  into, beside a line of the inlined function's).

usage: test_true_stacks.py REPLAY DUMP TRUTHPROG LIBA LIBB LIBN1 LIBN2 PRELOAD SRCDIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SIZES = {"a": (2 << 20) + 1, "b": (2 << 20) + 2, "n": (2 << 20) + 3, "i": (2 << 20) + 4}


def marker_line(path, marker):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise SystemExit("no %s in %s" % (marker, path))


def innermost_by_size(dump, log):
    p = subprocess.run([dump, "--json", log], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        e = json.loads(line)
        if e.get("kind") == "host_alloc" and e.get("native_stack"):
            for tag, size in SIZES.items():
                if e.get("size") == size and tag not in out:
                    out[tag] = e["native_stack"][0]
    return p.returncode, out


def main():
    replay, dump, prog, liba, libb, libn1, libn2, preload, src = sys.argv[1:10]
    truth = os.path.join(src, "truth")
    lines = {"a": marker_line(os.path.join(truth, "truth_a.c"), "TRUTH_A_CALL"),
             "b": marker_line(os.path.join(truth, "truth_b.c"), "TRUTH_B_CALL"),
             "n": marker_line(os.path.join(truth, "truth_n1.c"), "TRUTH_N_CALL"),
             "i": marker_line(os.path.join(truth, "truth_a.c"), "TRUTH_INLINE_CALL")}
    files = {"a": "truth_a.c", "b": "truth_b.c", "n": "truth_n1.c"}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for tag, lib in (("a", liba), ("b", libb), ("n", libn1)):
            paths[tag] = os.path.join(tmp, "libtruth_%s.so" % tag)
            shutil.copy(lib, paths[tag])
        log = os.path.join(tmp, "truth.tlog")
        env = dict(os.environ, LD_PRELOAD=preload, TRACE_OUTPUT=log, TRACE_QUIET="1", TRACE_HOST_BUFFERS="1")
        run = subprocess.run([prog, paths["a"], paths["b"], paths["n"]], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print("FAIL: truthprog: %d %s" % (run.returncode, run.stderr), file=sys.stderr)
            return 1
        bases = dict(l.split() for l in run.stdout.split("\n") if l)
        reused = bases.get("a") == bases.get("b")

        # trace-dump: each event's stacks resolved as it is read.
        rc, frames = innermost_by_size(dump, log)
        for tag in ("a", "b", "n"):
            f = frames.get(tag)
            want = ("truth_alloc_" + tag, files[tag], lines[tag])
            got = f and (f.get("function"), os.path.basename(f.get("file") or ""), f.get("line"))
            if got != want:
                failures.append("trace-dump, library %s: innermost frame %s, expected %s" % (tag, got, want))

        f = frames.get("i") or {}
        got = (f.get("function"), f.get("inlined"), os.path.basename(f.get("file") or ""), f.get("line"))
        want = ("truth_alloc_a_inl", "truth_inline_helper", "truth_a.c", lines["i"])
        if got != want:
            failures.append("trace-dump, inlined code: innermost frame %s, expected %s" % (got, want))

        # The report: stacks resolved after the whole log was read.
        p = subprocess.run([replay, "report", "--json", log], capture_output=True, text=True)
        rep = json.loads(p.stdout)
        natives = [s.get("native") or "" for s in rep.get("sites", [])]
        for tag in ("a", "b"):
            want = "truth_alloc_%s (" % tag
            hit = [n for n in natives if want in n]
            if not hit:
                failures.append("report: no site names %s: %s" % (want, natives))
            elif not re.search(r"%s:%d\)" % (re.escape(files[tag]), lines[tag]), hit[0]):
                failures.append("report: %s at the wrong line (call on line %d): %s" % (want, lines[tag], hit[0]))
        want = "truth_inline_helper inlined in truth_alloc_a_inl ("
        if not any(want in n for n in natives):
            failures.append("report: no site says %s: %s" % (want, natives))
        if not reused:
            print("note: library b was not loaded at library a's addresses (%s, %s): the reuse part "
                  "checked nothing" % (bases.get("a"), bases.get("b")))

        # The library without a build-id, rebuilt after the run.
        shutil.copy(libn2, paths["n"])
        rc, frames = innermost_by_size(dump, log)
        f = frames.get("n") or {}
        if f.get("function") or f.get("file"):
            failures.append("a rebuilt library without build-id was read as the recorded one: %s" % f)
        if not f.get("module", "").endswith("libtruth_n.so") or not f.get("offset"):
            failures.append("the frame still says module and offset: %s" % f)
        # The report says why those frames are module+offset, once per
        # module: another build is at the path (old: nothing said).  Library
        # b replaced by a, both with build-ids, is the other reason.
        shutil.copy(liba, paths["b"])
        p = subprocess.run([replay, "report", log], capture_output=True, text=True)
        said = [l.strip() for l in p.stdout.split("\nSymbols\n", 1)[-1].splitlines()
                if "not resolved:" in l] if "\nSymbols\n" in p.stdout else []
        for tag, why in (("n", "load segments"), ("b", "build-id")):
            if not any(l.startswith(paths[tag] + ": not resolved: " + paths[tag] + " is another build (its "
                                    + why + " differs") for l in said):
                failures.append("report: no line says libtruth_%s.so is another build (%s): %s"
                                % (tag, why, said))
        if any("libtruth_a.so" in l for l in said):
            failures.append("report: libtruth_a.so, unchanged, said to be another build: %s" % said)
        # The HTML report lists them too, when a browser is here to render it.
        chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                         if shutil.which(n)), None)
        if chromium:
            page = os.path.join(tmp, "report.html")
            subprocess.run([replay, "report", "--html", page, log], capture_output=True, text=True)
            dom = subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox",
                                  "--user-data-dir=" + os.path.join(tmp, "profile"), "--virtual-time-budget=5000",
                                  "--dump-dom", "file://" + page], capture_output=True, text=True, timeout=120).stdout
            if 'data-status="rendered"' not in dom:
                failures.append("report --html: the page did not render")
            for tag in ("n", "b"):
                if paths[tag] + ": not resolved: " + paths[tag] + " is another build" not in dom:
                    failures.append("report --html: libtruth_%s.so not listed under Symbols" % tag)
        else:
            print("note: no chromium: the HTML report's Symbols section was not checked")
        p = subprocess.run([replay, "report", "--json", log], capture_output=True, text=True)
        differs = {os.path.basename(m["path"]): m.get("file_differs")
                   for m in json.loads(p.stdout).get("modules", []) if m.get("path")}
        if differs.get("libtruth_n.so") != paths["n"] or differs.get("libtruth_b.so") != paths["b"] \
                or differs.get("libtruth_a.so") is not None:
            failures.append("report --json: modules' file_differs: %s" % differs)
        # trace-dump --json says it on the module's line (old: no such key).
        p = subprocess.run([dump, "--json", log], capture_output=True, text=True)
        differs = {}
        for line in p.stdout.splitlines():
            e = json.loads(line)
            if e.get("kind") == "module" and "libtruth_" in e.get("path", ""):
                differs[os.path.basename(e["path"])] = e.get("file_differs", "(no key)")
        if differs.get("libtruth_n.so") != paths["n"] or differs.get("libtruth_b.so") != paths["b"] \
                or differs.get("libtruth_a.so") is not None:
            failures.append("trace-dump --json: modules' file_differs: %s" % differs)
        # The same addresses again after an unload, in another module (two
        # copies of A, loaded in turn at the same base, called from the same
        # place): the second event's frames are the second copy's.
        for tag in ("r1", "r2"):
            paths[tag] = os.path.join(tmp, "libtruth_%s.so" % tag)
            shutil.copy(liba, paths[tag])
        log = os.path.join(tmp, "reload.tlog")
        env["TRACE_OUTPUT"] = log
        run = subprocess.run([prog, "--reload", paths["r1"], paths["r2"]], env=env, capture_output=True,
                             text=True)
        if run.returncode != 0:
            failures.append("truthprog --reload: %d %s" % (run.returncode, run.stderr))
        else:
            bases = dict(l.split()[:2] for l in run.stdout.split("\n") if l.startswith("r"))
            p = subprocess.run([dump, "--json", log], capture_output=True, text=True)
            modules = {}
            for line in p.stdout.splitlines():
                e = json.loads(line)
                if e.get("kind") == "host_alloc" and e.get("native_stack"):
                    for i, tag in enumerate(("r1", "r2")):
                        if e.get("size") == (2 << 20) + 10 + i:
                            modules[tag] = e["native_stack"][0].get("module") or ""
            for tag in ("r1", "r2"):
                if not modules.get(tag, "").endswith("libtruth_%s.so" % tag):
                    failures.append("reload: the %s event's innermost frame is in %r, not libtruth_%s.so"
                                    % (tag, modules.get(tag), tag))
            # The report keeps them two sites: one address, two libraries
            # (old: one site, named after the first copy).
            p = subprocess.run([replay, "report", "--json", log], capture_output=True, text=True)
            natives = [s.get("native") or "" for s in json.loads(p.stdout).get("sites", [])]
            for tag in ("r1", "r2"):
                if not any("libtruth_%s.so" % tag in n for n in natives):
                    failures.append("reload: no report site in libtruth_%s.so: %s" % (tag, natives))
            if bases.get("r1") != bases.get("r2"):
                print("note: the two copies were not loaded at one base (%s, %s): the reload part "
                      "checked nothing" % (bases.get("r1"), bases.get("r2")))
        # A buffer allocated by a function that code made at run time called
        # (no module, no unwind information): the JSON says the stack went
        # through such a frame (old: nothing did), and only that stack.
        log = os.path.join(tmp, "jit.tlog")
        env["TRACE_OUTPUT"] = log
        run = subprocess.run([prog, "--jit"], env=env, capture_output=True, text=True)
        if run.returncode == 77:
            print("note: no JIT code on this machine (x86-64 only): the JIT part checked nothing")
        elif run.returncode != 0:
            failures.append("truthprog --jit: %d %s" % (run.returncode, run.stderr))
        else:
            p = subprocess.run([dump, "--json", log], capture_output=True, text=True)
            allocs = [json.loads(l) for l in p.stdout.splitlines() if '"host_alloc"' in l]
            e = allocs[0] if allocs else {}
            stack = e.get("native_stack") or []
            if not stack or stack[0].get("function") != "truth_from_jit" or len(stack) < 2 \
                    or stack[1].get("module") is not None:
                failures.append("jit: the stack is not truth_from_jit then the JIT's frame: %s" % stack)
            elif e.get("native_stack_cut") is not True:
                failures.append("jit: no native_stack_cut on a stack through JIT code: %s" % e)
            frees = [json.loads(l) for l in p.stdout.splitlines() if '"host_free"' in l]
            if frees and "native_stack_cut" in frees[0] and all(f.get("module") for f in frees[0]["native_stack"]):
                failures.append("jit: native_stack_cut on a whole stack: %s" % frees[0])
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
