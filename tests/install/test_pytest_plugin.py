#!/usr/bin/env python3
"""test_pytest_plugin.py - pytest --gputrace on a small suite
(pytest_sample/): device memory from the CUDA runtime test double through
ctypes, one leaky test, one whose memory only a later collection frees, a
clean one, a module-scoped fixture; and a file of ordinary outcomes (pass,
fail, skip, xfail, error) that must not change.

A fresh venv gets pytest and pytest-xdist offline from the wheelhouse that
scripts/lib/setup.sh fills; the plugin comes from this checkout's python/
folder (-p gputrace.pytest_plugin: the pip test checks the entry point).

    test_pytest_plugin.py --prefix BUILD --doubles DIR --work DIR [--preload LIBS]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from installcheck import ROOT, HERE, SKIP, check, finish, has_wheel, make_venv, wheelhouse

SAMPLE = os.path.join(HERE, "pytest_sample")


def line_of(path, tag):
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if "LINE:" + tag in text:
                return n
    raise KeyError(tag)


def build_double_init(opts, venv):
    """tests/fixtures/double_init for the venv's interpreter; its folder."""
    out = os.path.join(opts.work, "double_init")
    os.makedirs(out, exist_ok=True)
    vpy = os.path.join(venv, "bin", "python")
    cfg = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                          "print(sysconfig.get_config_var('EXT_SUFFIX'))"], capture_output=True, text=True).stdout.split()
    src = os.path.join(ROOT, "tests", "fixtures", "double_init", "double_init.c")
    p = subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-g", "-O1", "-I" + cfg[0], src, "-o",
                        os.path.join(out, "double_init" + cfg[1])], capture_output=True, text=True)
    check(p.returncode == 0, "the double_init fixture builds for the venv: %s" % p.stderr[-300:])
    return out


def pytest(opts, venv, args, via_module=False, flags=(), pythonpath=(), cwd=SAMPLE, preload=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TRACE_OUTPUT", "PYTHONPATH")}
    if preload:
        # Its log up to --gputrace's restart goes where TRACE_OUTPUT says,
        # not into pytest_sample/ (ten such logs were committed).
        env["LD_PRELOAD"] = preload
        env["TRACE_OUTPUT"] = os.path.join(opts.work, "preloaded-%p.tlog")
    env.update(PYTHONPATH=":".join([os.path.join(ROOT, "python")] + list(pythonpath)), CUDA_DOUBLES=opts.doubles,
               GPUTRACE_PREFIX=opts.prefix, PYTHONDONTWRITEBYTECODE="1")
    if opts.preload:
        env["TRACE_LIB"] = opts.preload
    cmd = ([os.path.join(venv, "bin", "python")] + list(flags) + ["-m", "pytest"] if via_module
           else [os.path.join(venv, "bin", "pytest")])
    cmd += ["-p", "gputrace.pytest_plugin", "-p", "no:cacheprovider", "-rA"] + args
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    print("$ %s -> %d" % (" ".join(cmd[1:]), p.returncode))
    return p


def outcomes(text):
    """nodeid -> outcome from -rA's short summary (PASSED/FAILED/ERROR/...)."""
    found = {}
    for m in re.finditer(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", text, re.M):
        found.setdefault(m.group(2), set()).add(m.group(1))
    return found


def gputrace_section(text):
    m = re.search(r"^=+ gputrace =+$(.*?)(?=^=+ )", text, re.M | re.S)
    return m.group(1) if m else ""


def section_for(section, nodeid):
    """The lines of the gputrace section about one test."""
    out, on = [], False
    for line in section.splitlines():
        if line and not line.startswith(" "):
            on = line.split()[0] == nodeid
            continue
        if on:
            out.append(line)
    return "\n".join(out)


def audit_marks(opts, venv):
    """gputrace.mark() and gputrace.flush() in a traced process: marks with
    their text (UTF-8 too), misuse of the audit event ignored, no exception
    left behind, the log readable before the process ends."""
    log = os.path.join(opts.work, "marks.tlog")
    lib = opts.preload or os.path.join(opts.prefix, "lib", "libtrace.so")
    env = dict(os.environ, LD_PRELOAD=lib, TRACE_OUTPUT=log, TRACE_QUIET="1",
               PYTHONPATH=os.path.join(ROOT, "python"), GPUTRACE_PREFIX=opts.prefix)
    code = ("import gputrace, subprocess, sys\n"
            "gputrace.mark('first mark')\n"
            "gputrace.mark('second, caf\\u00e9')\n"
            "sys.audit('gputrace.mark')\n"
            "sys.audit('gputrace.mark', b'bytes')\n"
            "sys.audit('gputrace.mark', 'two', 'args')\n"
            "assert sys.exc_info() == (None, None, None)\n"
            "gputrace.flush()\n"
            "p = subprocess.run([gputrace.tool('trace-dump'), %r], capture_output=True, text=True)\n"
            "print(p.stdout)\n" % log)
    p = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], env=env, capture_output=True, text=True)
    marks = re.findall(r'mark text="([^"]*)"', p.stdout)
    check(p.returncode == 0 and marks == ["first mark", "second, caf\u00e9"],
          "gputrace.mark: two marks, read back by trace-dump before the process ended: %d %s %s"
          % (p.returncode, marks, p.stderr[-300:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True, help="the build folder (bin/trace-dump, lib/libtrace.so)")
    ap.add_argument("--doubles", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--preload", help="what to preload instead of PREFIX/lib/libtrace.so (sanitizer runtime first)")
    opts = ap.parse_args()
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    if not has_wheel("pytest_xdist"):
        print("SKIP: no pytest wheels in %s (scripts/test fills it: scripts/lib/setup.sh)" % wheelhouse())
        return SKIP
    venv = os.path.join(opts.work, "venv")
    make_venv(venv, "pytest", "pytest-xdist")
    audit_marks(opts, venv)
    memory = os.path.join(SAMPLE, "test_memory.py")
    leak_line, cycle_line, pool_line = line_of(memory, "leak"), line_of(memory, "cycle"), line_of(memory, "poolleak")

    # 1. Clean outcomes do not change: the same file with and without it.
    bare = pytest(opts, venv, ["test_outcomes.py"])
    traced = pytest(opts, venv, ["--gputrace", "test_outcomes.py"], via_module=True)
    check(bare.returncode == traced.returncode == 1, "exit status unchanged: %d / %d" % (bare.returncode, traced.returncode))
    check(outcomes(bare.stdout) == outcomes(traced.stdout) and len(outcomes(bare.stdout)) == 6,
          "every outcome unchanged: %s / %s" % (outcomes(bare.stdout), outcomes(traced.stdout)))
    check("6 test(s) traced" in traced.stdout, "the session was traced (6 tests)")

    # A libtrace.so already preloaded (a build tree's, scripts/trace-run's)
    # is used, not joined by the package's: two copies called each other
    # for ever (numpy's import spun).
    if not opts.preload or "libasan" not in opts.preload:
        other = os.path.join(opts.work, "other", "libtrace.so")
        os.makedirs(os.path.dirname(other), exist_ok=True)
        shutil.copy(opts.preload or os.path.join(opts.prefix, "lib", "libtrace.so"), other)
        p = pytest(opts, venv, ["--gputrace", "test_one_tracer.py"], preload=other)
        check(p.returncode == 0 and "1 test(s) traced" in p.stdout,
              "--gputrace under a preloaded libtrace.so: one copy mapped, the test traced: %d\n%s"
              % (p.returncode, p.stdout[-1500:]))

    # pytest.main() in a program read from stdin: it cannot be started again
    # (it was, with stdin read: nothing ran, exit 0): a usage error instead.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TRACE_OUTPUT", "PYTHONPATH")}
    env.update(PYTHONPATH=os.path.join(ROOT, "python"), GPUTRACE_PREFIX=opts.prefix, CUDA_DOUBLES=opts.doubles)
    if opts.preload:
        env["TRACE_LIB"] = opts.preload
    src = "import sys, pytest\nsys.exit(pytest.main(['-p', 'gputrace.pytest_plugin', '--gputrace', 'test_outcomes.py']))\n"
    p = subprocess.run([os.path.join(venv, "bin", "python")], input=src, cwd=SAMPLE, env=env, capture_output=True,
                       text=True, timeout=300)
    check(p.returncode not in (0, 1) and "cannot be started again" in p.stdout + p.stderr,
          "pytest.main --gputrace from stdin: a usage error, not a silent clean run (exit %d): %s%s"
          % (p.returncode, p.stdout[-600:], p.stderr[-600:]))

    # 2. The summary: the leak, the collector, nothing for the clean tests.
    plain = pytest(opts, venv, ["test_memory.py"])
    check(plain.returncode == 0, "the memory tests pass without the plugin")
    p = pytest(opts, venv, ["--gputrace", "test_memory.py"])
    check(p.returncode == 0, "and with --gputrace alone: %d\n%s" % (p.returncode, p.stdout[-2000:]))
    check(outcomes(p.stdout) == outcomes(plain.stdout), "no outcome changes with findings reported only")
    section = gputrace_section(p.stdout)
    print(section)
    leaky = section_for(section, "test_memory.py::test_leaky")
    check("still allocated at the end of the test: 2.0 MiB in 1 allocation" in leaky
          and "test_memory.py:%d" % leak_line in leaky, "test_leaky: 2 MiB still allocated, at its line")
    cycle = section_for(section, "test_memory.py::test_cycle")
    check("only garbage collection freed: 5.0 MiB in 1 allocation" in cycle
          and "test_memory.py:%d" % cycle_line in cycle and "still allocated" not in cycle,
          "test_cycle: 5 MiB freed only by a collection, at the allocating line")
    host = section_for(section, "test_memory.py::test_host_cycle")
    check("only garbage collection freed: 3.0 MiB in 1 allocation" in host and "host buffer" in host
          and "test_memory.py:%d" % line_of(memory, "hostcycle") in host and "still allocated" not in host,
          "test_host_cycle: the 3 MiB buffer only a collection freed (seed 002 in a test), at its line")
    pool = section_for(section, "test_memory.py::test_pool_leaky")
    check("still allocated at the end of the test: 512.0 KiB in 1 allocation" in pool
          and "pool block" in pool and "test_memory.py:%d" % pool_line in pool,
          "test_pool_leaky: the pool block it kept, at its line")
    for clean in ("test_clean", "test_collects", "test_module_fixture", "test_pool_clean"):
        check("test_memory.py::" + clean + "\n" not in section,
              "%s has no finding (wider fixtures and a pool's cached segment are not charged)" % clean)
    check("8 test(s) traced" in section and "4 with findings" in section, "the totals line")

    # --pyargs of a package outside the rootdir: pytest 9 names its tests
    # "::test_same", and two modules' tests of one name were one (1 test
    # traced of 2, the finding shown as ".::test_same" without its line).
    pkg_root = os.path.join(opts.work, "pyargs")
    pkg = os.path.join(pkg_root, "pkgq")
    os.makedirs(pkg, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    with open(os.path.join(pkg, "test_m1.py"), "w") as f:
        f.write("class Holder:\n    def __init__(self):\n        self.me = self\n"
                "        self.data = bytearray(4 << 20)\n\n\ndef test_same():\n    Holder()\n")
    with open(os.path.join(pkg, "test_m2.py"), "w") as f:
        f.write("def test_same():\n    assert True\n")
    p = pytest(opts, venv, ["--gputrace", "--pyargs", "pkgq.test_m1", "pkgq.test_m2"], pythonpath=[pkg_root])
    section = gputrace_section(p.stdout)
    flagged = [line.split()[0] for line in section.splitlines() if line and not line.startswith(" ")
               and "::test_same" in line]
    check("2 test(s) traced" in section and len(flagged) == 1 and flagged[0].endswith("pkgq/test_m1.py::test_same")
          and "pyargs/pkgq/test_m1.py:4 (Holder.__init__)" in section,
          "--pyargs outside the rootdir: two tests named test_same, the cycle charged to test_m1's: %s" % section)

    # Interpreter flags survive the restart, and the plugin itself warns
    # about nothing (-X dev shows unclosed files and the like).
    p = pytest(opts, venv, ["--gputrace", "test_memory.py"], via_module=True, flags=["-X", "dev"])
    check(p.returncode == 0 and "4 with findings" in p.stdout and "warnings summary" not in p.stdout
          and "Warning" not in p.stderr, "python -X dev -m pytest --gputrace: no warning: %s%s"
          % (p.stdout[-800:], p.stderr[-800:]))

    # 3. Failing on findings: a teardown error on the test, the rest as before.
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-leaks", "test_memory.py"])
    got = outcomes(p.stdout)
    leakers = ("test_memory.py::test_leaky", "test_memory.py::test_pool_leaky")
    check(p.returncode == 1 and all(got.get(k) == {"PASSED", "ERROR"} for k in leakers)
          and all(v == {"PASSED"} for k, v in got.items() if k not in leakers),
          "--gputrace-fail-leaks: test_leaky and test_pool_leaky error, the others pass: %d %s" % (p.returncode, got))
    check("left 2.0 MiB of device memory allocated at its end" in p.stdout, "the error says why")
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-gc", "test_memory.py"])
    got = outcomes(p.stdout)
    check(p.returncode == 1 and got.get("test_memory.py::test_cycle") == {"PASSED", "ERROR"}
          and got.get("test_memory.py::test_host_cycle") == {"PASSED", "ERROR"}
          and got.get("test_memory.py::test_leaky") == {"PASSED"},
          "--gputrace-fail-gc: test_cycle errors: %d %s" % (p.returncode, got))

    # 4. Keeping the logs: the marks bracket each test.
    logs = os.path.join(opts.work, "logs")
    p = pytest(opts, venv, ["--gputrace", "--gputrace-dir", logs, "test_memory.py"])
    kept = [f for f in os.listdir(logs) if f.endswith(".tlog")] if os.path.isdir(logs) else []
    check(p.returncode == 0 and len(kept) == 1 and "logs kept in " + logs in p.stdout,
          "--gputrace-dir keeps the session's log: %s" % kept)
    if kept:
        d = subprocess.run([os.path.join(opts.prefix, "bin", "trace-dump"), os.path.join(logs, kept[0])],
                           capture_output=True, text=True)
        begins = re.findall(r'text="gputrace:begin \S*test_memory.py::', d.stdout)
        ends = re.findall(r'text="gputrace:end \S*test_memory.py::', d.stdout)
        check(len(begins) == 8 and len(ends) == 8, "eight begin and eight end marks in the log")

    # Double initialisations, per test (seed 001 in a suite).
    twice_line = line_of(os.path.join(SAMPLE, "test_double_init.py"), "twice")
    p = pytest(opts, venv, ["--gputrace", "test_double_init.py"], pythonpath=[build_double_init(opts, venv)])
    section = gputrace_section(p.stdout)
    twice = section_for(section, "test_double_init.py::test_twice")
    check(p.returncode == 0 and "3 x double_init.Thing initialised twice" in twice
          and "test_double_init.py:%d" % twice_line in twice
          and "test_double_init.py::test_once\n" not in section,
          "test_twice: 3 objects initialised twice, at its line; test_once: nothing:\n%s" % (section or p.stdout[-1500:]))

    # Tests that raise with a large buffer in a local: pytest's reference
    # cycle (the traceback holds the frame) is not theirs, so they neither
    # get a finding nor, with --gputrace-fail-gc, an error; the cycle a
    # passing test leaves last is collected before the analysis and is one.
    raising = os.path.join(SAMPLE, "test_raising.py")
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-gc", "test_raising.py"])
    got, section = outcomes(p.stdout), gputrace_section(p.stdout)
    want = {"test_raising.py::test_fails_with_big_local": {"FAILED"},
            "[1]": {"SKIPPED"},      # -rA: "SKIPPED [1] test_raising.py:21: ..."
            "test_raising.py::test_xfails_with_big_local": {"XFAIL"},
            "test_raising.py::test_cycle_at_the_end": {"PASSED", "ERROR"}}
    last = section_for(section, "test_raising.py::test_cycle_at_the_end")
    check(p.returncode == 1 and got == want and "ERROR test_raising.py::test_skips" not in p.stdout
          and "only garbage collection freed: 6.0 MiB in 1 allocation" in last
          and "test_raising.py:%d" % line_of(raising, "lastcycle") in last
          and "3 test(s) that raised" in section and "12.0 MiB" in section and "1 with findings" in section,
          "raising tests are not charged with pytest's cycle, the last test's own cycle is: %d %s\n%s"
          % (p.returncode, got, section or p.stdout[-1500:]))

    # A raising test's frame that holds another test's cached buffer: the
    # collection that frees the frame frees the buffer, which is not the
    # allocating test's finding (a note names both).
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-gc", "test_raising_holds.py"])
    got, section = outcomes(p.stdout), gputrace_section(p.stdout)
    check(p.returncode == 0 and got == {"test_raising_holds.py::test_loads": {"PASSED"},
                                        "[1]": {"SKIPPED"},
                                        "test_raising_holds.py::test_evicts": {"PASSED"}}
          and "only garbage collection freed" not in section
          and "1 test(s) had 8.0 MiB that only a collection freed, after another test raised" in section
          and "test_raising_holds.py::test_loads after test_raising_holds.py::test_skips_holding" in section,
          "a buffer a raising test held is charged to the test that allocated it: %d %s\n%s"
          % (p.returncode, got, section or p.stdout[-1500:]))

    # A log that cannot be read: its tests' findings are unknown, which is
    # an error in the summary, and with --gputrace-fail-* a failed session
    # (the plugin once passed a known leak when trace-dump ran out of memory).
    for fail_opt, want_rc in (([], 0), (["--gputrace-fail-gc"], 1)):
        p = pytest(opts, venv, ["--gputrace"] + fail_opt + ["test_unreadable_log.py"])
        got, section = outcomes(p.stdout), gputrace_section(p.stdout)
        check(p.returncode == want_rc and got == {"test_unreadable_log.py::test_leaves_a_bad_log": {"PASSED"}}
              and "error: a log could not be read" in section and "pytest-0.tlog" in section,
              "an unreadable log (%s): exit %d (expected %d) %s\n%s"
              % (fail_opt, p.returncode, want_rc, got, section or p.stdout[-1500:]))

    # A finalizer's temporary, made and freed inside the collection the
    # test runs: not memory only a collection freed.
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-gc", "test_finalizer.py"])
    got, section = outcomes(p.stdout), gputrace_section(p.stdout)
    check(p.returncode == 0 and got == {"test_finalizer.py::test_finalizer_temporary": {"PASSED"},
                                        "test_finalizer.py::test_keeps_a_buffer": {"PASSED"},
                                        "test_finalizer.py::test_finalizer_grows_a_kept_buffer": {"PASSED"}}
          and "only garbage collection freed" not in section,
          "a finalizer's temporary is charged to the collection: %d %s\n%s"
          % (p.returncode, got, section or p.stdout[-1500:]))

    # A module fixture's teardown, inside the module's last test, leaves a
    # cycle: the fixture's, not that test's.
    p = pytest(opts, venv, ["--gputrace", "--gputrace-fail-gc", "test_fixture_teardown.py"])
    got, section = outcomes(p.stdout), gputrace_section(p.stdout)
    check(p.returncode == 0 and got == {"test_fixture_teardown.py::test_uses_resource": {"PASSED"},
                                        "test_fixture_teardown.py::test_clean_after": {"PASSED"}}
          and "only garbage collection freed" not in section,
          "a wide fixture's teardown is charged to the last test: %d %s\n%s"
          % (p.returncode, got, section or p.stdout[-1500:]))

    # Cuts into anonymous mappings (map_rest pieces): the rest of a module
    # fixture's mapping is not the cutting test's (it was charged 24 MiB
    # "only garbage collection freed"), a finalizer that gives back 8 MiB of
    # a 32 MiB mapping freed 8 MiB (was 32), and the summary reads a piece
    # after a mark (it stopped with a TypeError: exit 1, INTERNALERROR).
    # (Not in the sanitizer build: its runtime owns mmap, and no host
    # mapping is recorded there.)
    p = pytest(opts, venv, ["--gputrace", "test_map_cut.py"])
    got, section = outcomes(p.stdout), gputrace_section(p.stdout)
    trimmed = section_for(section, "test_map_cut.py::test_trim_in_collection")
    sanitized = opts.preload and "libasan" in opts.preload
    check(sanitized or p.returncode == 0 and got == {"test_map_cut.py::test_uses_mapping": {"PASSED"},
                                        "test_map_cut.py::test_cuts_mapping": {"PASSED"},
                                        "test_map_cut.py::test_trim_in_collection": {"PASSED"}}
          and "test_map_cut.py::test_cuts_mapping\n" not in section
          and "only garbage collection freed: 8.0 MiB in 1 allocation" in trimmed
          and "3 test(s) traced" in section and "1 with findings" in section,
          "what a cut leaves of a mapping stays with the test or fixture that made it: %d %s\n%s"
          % (p.returncode, got, section or p.stdout[-1500:]))

    # --gputrace-dir DIR, the value apart: the restarted pytest keeps its
    # rootdir (DIR exists by then, and pytest counts an option's value that
    # names a path as a place its rootdir must cover).  Outside this
    # repository, whose pyproject.toml would fix the rootdir: a suite with
    # no configuration file, and a conftest.py above it that only a rootdir
    # moved up to their common folder loads (it breaks every test).
    outside = tempfile.mkdtemp(prefix="gputrace-rootdir-")
    try:
        suite = os.path.join(outside, "suite")
        os.makedirs(suite)
        shutil.copy(os.path.join(SAMPLE, "test_outcomes.py"), suite)
        with open(os.path.join(outside, "conftest.py"), "w") as f:
            f.write("import pytest\n\n\n@pytest.fixture(autouse=True)\ndef outer():\n"
                    "    raise RuntimeError('the conftest above the suite was loaded')\n")
        alone = pytest(opts, venv, ["test_outcomes.py"], cwd=suite)
        apart = pytest(opts, venv, ["--gputrace", "--gputrace-dir", os.path.join(outside, "logs"),
                                    "test_outcomes.py"], cwd=suite)
        check("rootdir: %s\n" % suite in alone.stdout and "rootdir: %s\n" % suite in apart.stdout
              and outcomes(apart.stdout) == outcomes(alone.stdout) == outcomes(bare.stdout),
              "--gputrace-dir DIR moves neither pytest's rootdir nor an outcome:\n%s" % apart.stdout[:1500])
    finally:
        shutil.rmtree(outside, ignore_errors=True)

    # 5. A test that runs pytest --gputrace itself: the inner run is left
    # alone (no second session deleting the logs, no marks of its own).
    nested_logs = os.path.join(opts.work, "nested-logs")
    p = pytest(opts, venv, ["--gputrace", "--gputrace-dir", nested_logs, "test_nested.py"])
    section = gputrace_section(p.stdout)
    check(p.returncode == 0 and "1 test(s) traced" in section and os.path.isdir(nested_logs),
          "a nested pytest --gputrace leaves the session alone: %d\n%s" % (p.returncode, p.stdout[-1500:]))

    # 6. pytest-xdist: each worker traced from its start, one summary.
    p = pytest(opts, venv, ["--gputrace", "-n", "2", "test_memory.py"])
    section = gputrace_section(p.stdout)
    check(p.returncode == 0 and "test_memory.py::test_leaky" in section and "8 test(s) traced" in section,
          "-n 2: the workers' logs give the same findings: %d\n%s" % (p.returncode, section or p.stdout[-1500:]))
    # test_cycle's memory is freed by whichever collection runs in its worker;
    # with two workers that may be none before the end: not asserted here.

    return finish("pytest plugin")


if __name__ == "__main__":
    sys.exit(main())
