"""pytest --gputrace: trace a test session with the flight recorder and say,
per test, what it left behind.

Off unless --gputrace is given (the plugin is registered for every pytest
run where gputrace is installed, and then does nothing).  With it:

- The recorder must be in place from the first instruction of the process,
  so pytest is started again (exec, same pid, same arguments, same
  interpreter flags) with libtrace.so preloaded by absolute path and the logs
  going to one folder.  pytest-xdist workers inherit the preload and each
  writes its own log.
- Each test is bracketed by two marks in the log ("gputrace:begin NODEID",
  "gputrace:end NODEID"), emitted through the audit event the recorder
  reads in place (gputrace.mark), so marking allocates nothing the test
  could be blamed for.  Fixtures wider than a function are bracketed too:
  what they allocate is not charged to the test that happened to set them up.
- At the end, every log is read (trace-dump --json) and each test gets:
  device memory it allocated that was still allocated when it ended (a CUDA
  allocation, or a block of a traced pool; a pool's cached segments are not
  counted, their blocks are), memory of the test (device memory, large host
  buffers) that only a garbage collection freed (the collector counts
  neither, so such memory can run a process out of memory), and objects
  initialised twice, each with the Python line that allocated it.
- Before the logs are read, each traced process runs a collection (cycles
  the last tests left would be freed only at exit).  A test that raised is
  not charged with what a collection freed: pytest's traceback holds the
  raising test's frame in a reference cycle, not the test (a note says so).
- --gputrace-fail-leaks / --gputrace-fail-gc turn those findings into a
  teardown error of the test; without them no outcome changes.
- The logs are deleted at the end unless --gputrace-keep or --gputrace-dir
  is given.
"""
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

import gputrace

ENV_DIR = "GPUTRACE_PYTEST_DIR"     # set in the re-executed process: where logs go
ENV_PID = "GPUTRACE_PYTEST_PID"     # ... and its pid (exec keeps it): the session's owner
MARK = "gputrace:"

# CUDA entry points by what they hand out (FORMAT.md's API table).
DEVICE_ALLOC = {"cudaMalloc", "cudaMallocAsync", "cudaMallocFromPoolAsync", "cudaMallocManaged",
                "cudaMallocPitch", "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                "cuMemAllocManaged", "cuMemAllocPitch_v2"}
DEVICE_FREE = {"cudaFree", "cudaFreeAsync", "cuMemFree_v2", "cuMemFreeAsync"}
# Physical memory of the virtual-memory API (PyTorch's expandable segments):
# counted by handle; mapping and reserving address space are not memory.
VMM_ALLOC, VMM_FREE = {"cuMemCreate"}, {"cuMemRelease"}
WANTED = {"mark", "gc_start", "pool_op_begin", "cuda_alloc", "cuda_free", "pool_segment", "pool_alloc", "pool_free",
          "host_alloc", "host_free",
          "py_double_init"}


def pytest_addoption(parser):
    group = parser.getgroup("gputrace", "GPU and Python memory flight recorder")
    group.addoption("--gputrace", action="store_true", default=False,
                    help="trace the session with libtrace.so and report, per test, device memory still "
                         "allocated at its end, memory only garbage collections freed, and double "
                         "initialisations")
    group.addoption("--gputrace-fail-leaks", action="store_true", default=False,
                    help="a test that leaves device memory allocated at its end gets an error")
    group.addoption("--gputrace-fail-gc", action="store_true", default=False,
                    help="a test whose device memory or large host buffers only a garbage collection "
                         "freed gets an error")
    group.addoption("--gputrace-keep", action="store_true", default=False,
                    help="keep the logs (their folder is printed)")
    group.addoption("--gputrace-dir", metavar="DIR", default=None,
                    help="write the logs to DIR (kept); default: a temporary folder")


def _preloaded():
    """Whether libtrace.so is mapped into this process."""
    try:
        with open("/proc/self/maps") as f:
            return any(line.rstrip().endswith("/libtrace.so") for line in f)
    except OSError:
        return False


def _original_argv():
    """The command line that started this interpreter, flags included."""
    if hasattr(sys, "orig_argv"):                 # 3.10+
        return list(sys.orig_argv)
    flags = subprocess._args_from_interpreter_flags()
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:            # python -m pytest / -m xdist...
        name = spec.name[:-len(".__main__")] if spec.name.endswith(".__main__") else spec.name
        return [sys.executable] + flags + ["-m", name] + sys.argv[1:]
    return [sys.executable] + flags + sys.argv


def _joined_dir_option(argv, log_dir):
    """argv with --gputrace-dir and its value as one argument.  pytest
    takes every argument that names an existing path, an option's separate
    value included, as a place its rootdir must cover, and the folder exists
    once we made it: in the restarted process `--gputrace-dir DIR` moved the
    rootdir up to a folder above both (other conftest files, other node
    ids, other outcomes)."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--gputrace-dir" and i + 1 < len(argv):
            out.append("--gputrace-dir=" + log_dir)
            i += 2
            continue
        out.append("--gputrace-dir=" + log_dir if a.startswith("--gputrace-dir=") else a)
        i += 1
    return out


def _cannot_restart():
    """Why this process cannot be started again from its command line, or
    None.  A program read from stdin (python < script.py) was started again
    with stdin already read: it ran nothing and exited 0, every test unrun
    (a false clean).  A Jupyter kernel would be restarted under its client."""
    if "ipykernel" in sys.modules:
        return "pytest.main() inside a Jupyter kernel"
    if sys.argv and sys.argv[0] in ("", "-") and not os.isatty(0):
        return "pytest.main() in a program read from stdin"
    return None


def _restart_traced(config):
    """Start this pytest again under the recorder (exec: same pid, stdin,
    stdout, exit status)."""
    why = _cannot_restart()
    if why:
        raise pytest.UsageError("--gputrace: %s cannot be started again under the recorder; run the program "
                                "from a file, or under LD_PRELOAD=%s (docs/pytest.md)" % (why, gputrace.libtrace()))
    log_dir = config.getoption("gputrace_dir")
    log_dir = os.path.abspath(log_dir) if log_dir else tempfile.mkdtemp(prefix="gputrace-pytest-")
    os.makedirs(log_dir, exist_ok=True)
    if "%" in log_dir:
        raise pytest.UsageError("--gputrace-dir: %r: a folder name with %% is not supported" % log_dir)
    lib = gputrace.libtrace()
    if not os.path.exists(lib.split(":")[-1]):
        raise pytest.UsageError("--gputrace: %s not found (a broken gputrace install?)" % lib)
    env = dict(os.environ)
    # A libtrace.so already preloaded (a build tree's, scripts/trace-run's)
    # is the one used: a second copy in front of it made numpy's import spin
    # for ever (each copy's PyObject_Init called the other's).
    preloaded = [p for p in re.split(r"[:\s]+", env.get("LD_PRELOAD", "")) if os.path.basename(p) == "libtrace.so"]
    if not preloaded:
        env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["TRACE_OUTPUT"] = os.path.join(log_dir, "pytest-%p.tlog")
    env["TRACE_QUIET"] = "1"
    env[ENV_DIR] = log_dir
    env[ENV_PID] = str(os.getpid())
    # pytest has redirected fds 1 and 2 to its capture files by now: give
    # the new process the real ones.
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    argv = _joined_dir_option(_original_argv(), log_dir)
    os.execve(sys.executable, argv, env)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if not config.getoption("gputrace"):
        return None
    if hasattr(config, "workerinput"):            # an xdist worker: started traced by its controller
        return None
    if os.environ.get(ENV_DIR):
        if _role(config) is None:
            return None                           # a pytest inside a traced test: left alone
        if not _preloaded():
            raise pytest.UsageError("--gputrace: libtrace.so was not loaded (LD_PRELOAD=%s); a setuid "
                                    "interpreter or a missing library?" % os.environ.get("LD_PRELOAD"))
        return None
    _restart_traced(config)
    return None


def _role(config):
    """"owner" in the process --gputrace restarted, "worker" in its xdist
    workers, None anywhere else (a pytest that a traced test runs, in a
    subprocess or in-process, inherits the environment and must neither
    mark nor delete the session's logs)."""
    if not os.environ.get(ENV_DIR) or _active is not None:
        return None
    if hasattr(config, "workerinput"):
        return "worker"
    return "owner" if os.environ.get(ENV_PID) == str(os.getpid()) else None


_active = None      # the _Session of this process, once there is one


def pytest_configure(config):
    global _active
    role = _role(config) if config.getoption("gputrace") else None
    if role:
        _active = _Session(config, role == "worker")
        config.pluginmanager.register(_active, "gputrace-session")


def _mark(text):
    gputrace.mark(MARK + text)


class _Session:
    def __init__(self, config, worker):
        self.config = config
        self.dir = os.environ[ENV_DIR]
        self.worker = worker
        self.results = None
        self.failing = {}
        self.raised = set()       # tests a phase of which raised (failed, skipped in the body, xfail)
        self.tearing_down = set() # ids of wide fixtures whose teardown is running

    # -- in every traced process: marks -------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        _mark("begin " + _test_id(item))
        yield
        _mark("end " + _test_id(item))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        wide = fixturedef.scope != "function"
        if wide:
            _mark("fixture-begin %s %s" % (fixturedef.scope, fixturedef.argname))
        yield
        if wide:
            _mark("fixture-end %s %s" % (fixturedef.scope, fixturedef.argname))
            # Its teardown runs inside whichever test happens to be last (a
            # module's last test, or the session's): what it allocates there
            # is the fixture's, not that test's.  Finalizers run last added
            # first, so this one comes before the fixture's own; the end is
            # marked by pytest_fixture_post_finalizer.
            fixturedef.addfinalizer(lambda: self._teardown_begins(fixturedef))

    def _teardown_begins(self, fixturedef):
        self.tearing_down.add(id(fixturedef))
        _mark("fixture-begin %s %s" % (fixturedef.scope, fixturedef.argname))

    def pytest_fixture_post_finalizer(self, fixturedef, request):
        if id(fixturedef) in self.tearing_down:
            self.tearing_down.discard(id(fixturedef))
            _mark("fixture-end %s %s" % (fixturedef.scope, fixturedef.argname))

    def pytest_runtest_logreport(self, report):
        # A test that raised: pytest keeps the exception's traceback, which
        # holds the test's frame (and its locals) in a reference cycle until
        # a collection.  xdist hands the controller its workers' reports.
        if report.outcome != "passed":
            self.raised.add(_test_id(report))

    # -- at the end: read the logs (the controller or the only process) -----
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        # Cycles the last tests left would be collected only after the
        # analysis (at exit): collected now, they are in the log.
        gc.collect()
        gputrace.flush()          # this process's marks reach its log now
        if self.worker:
            return
        self.results = analyse_dir(self.dir, str(self.config.rootpath))
        for nodeid in self.raised & set(self.results["tests"]):
            r = self.results["tests"][nodeid]
            r["gc_freed_raised"], r["gc_freed"] = r["gc_freed"], []
        set_aside_held_by_raising(self.results, self.raised)
        fail_leaks = self.config.getoption("gputrace_fail_leaks")
        fail_gc = self.config.getoption("gputrace_fail_gc")
        for nodeid, r in sorted(self.results["tests"].items()):
            reasons = []
            if fail_leaks and r["leaked"]:
                reasons.append("left %s of device memory allocated at its end" % size_text(
                    sum(a["size"] for a in r["leaked"])))
            if fail_gc and r["gc_freed"]:
                reasons.append("relied on garbage collection to free %s" % size_text(
                    sum(a["size"] for a in r["gc_freed"])))
            if reasons:
                self.failing[nodeid] = reasons
                self._report_error(nodeid, r, reasons)
        if (self.failing or (self.results["unread"] and (fail_leaks or fail_gc))) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _report_error(self, nodeid, r, reasons):
        lines = ["gputrace: this test " + " and ".join(reasons)]
        lines += describe(r)
        report = pytest.TestReport(nodeid=nodeid, location=(nodeid.split("::")[0], None, nodeid),
                                   keywords={}, outcome="failed", longrepr="\n".join(lines),
                                   when="teardown", sections=[], duration=0.0)
        self.config.hook.pytest_runtest_logreport(report=report)

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker or self.results is None:
            return
        tr = terminalreporter
        tr.section("gputrace")
        res = self.results
        for unread in res["unread"]:
            tr.write_line("error: a log could not be read, its tests' findings are unknown%s: %s" % (
                " (the session fails: --gputrace-fail-*)" if self.config.getoption("gputrace_fail_leaks")
                or self.config.getoption("gputrace_fail_gc") else "", unread), red=True)
        for note in res["notes"]:
            tr.write_line("note: " + note)
        self._set_aside_note(tr, "gc_freed_raised", lambda n: _shown(self.config, n),
                             "test(s) that raised (failed, skipped or xfail in the body) had %s that only a "
                             "collection freed, not counted: pytest keeps a raising test's frame, and its locals, "
                             "in a reference cycle until a collection")
        self._set_aside_note(tr, "gc_freed_after_raise",
                             lambda n: "%s after %s" % (_shown(self.config, n), _shown(
                                 self.config, res["tests"][n]["gc_freed_after_raise"][0]["raised_test"])),
                             "test(s) had %s that only a collection freed, after another test raised while it was "
                             "allocated, not counted: the raising test's frame may have held it (pytest keeps that "
                             "frame, and its locals, in a reference cycle or in sys.last_traceback)")
        traced = len(res["tests"])
        found = {n: r for n, r in res["tests"].items() if r["leaked"] or r["gc_freed"] or r["double_init"]}
        for nodeid in sorted(found):
            shown = _shown(self.config, nodeid)
            tr.write_line(shown + ("  [error]" if nodeid in self.failing else ""))
            for line in describe(found[nodeid]):
                tr.write_line("    " + line)
        tr.write_line("%d test(s) traced in %d log(s); %d with findings, %d without" % (
            traced, res["logs"], len(found), traced - len(found)))
        if self._keep():
            tr.write_line("logs kept in %s (trace-replay report LOG, trace-dump LOG)" % self.dir)

    def _set_aside_note(self, tr, key, shown, text):
        """A note on the memory set aside under key (not counted): how many
        tests, how much (text has a %s for it), and the first three."""
        tests = self.results["tests"]
        names = sorted(n for n, r in tests.items() if r.get(key))
        if names:
            total = size_text(sum(a["size"] for n in names for a in tests[n][key]))
            tr.write_line("note: %d %s (%s%s)" % (len(names), text % total, ", ".join(shown(n) for n in names[:3]),
                                                  ", ..." if len(names) > 3 else ""))

    def _keep(self):
        return self.config.getoption("gputrace_keep") or self.config.getoption("gputrace_dir")

    def pytest_unconfigure(self, config):
        global _active
        _active = None
        if not self.worker and not self._keep():
            shutil.rmtree(self.dir, ignore_errors=True)


def _test_id(node):
    """A test's node id, made whole: pytest 9 gives a file outside the
    rootdir (--pyargs of an installed package) an empty path,
    "::test_same", and two modules' tests of one name were then one test
    (one finding charged to the other, a cycle set aside as a raising
    test's).  Its location's path (relative to the rootdir, "../..." when
    outside it) names the file."""
    nodeid = node.nodeid
    path, sep, rest = nodeid.partition("::")
    location = getattr(node, "location", None)
    if path or not sep or not location or not location[0]:
        return nodeid
    return location[0] + sep + rest


def _shown(config, nodeid):
    """A node id as pytest shows it: its path relative to the directory
    pytest was started in, when that is above it."""
    path, sep, rest = nodeid.partition("::")
    full = os.path.join(str(config.rootpath), path)
    rel = os.path.relpath(full, str(config.invocation_params.dir))
    return nodeid if rel.startswith("..") else rel + sep + rest


# -- reading the logs ---------------------------------------------------------

def size_text(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def describe(r):
    """The lines that say what one test left behind."""
    lines = []
    for title, allocs in (("device memory still allocated at the end of the test", r["leaked"]),
                          ("memory only garbage collection freed", r["gc_freed"])):
        if not allocs:
            continue
        lines.append("%s: %s in %d allocation(s)" % (title, size_text(sum(a["size"] for a in allocs)), len(allocs)))
        for a in sorted(allocs, key=lambda a: -a["size"])[:5]:
            later = ""
            if a.get("freed_seq") and title.startswith("device memory still"):
                later = ", freed later at seq %d" % a["freed_seq"]
            lines.append("  %10s  %s at %s (seq %d%s)" % (size_text(a["size"]), a["what"], a["site"], a["seq"], later))
        if len(allocs) > 5:
            lines.append("  ... %d more" % (len(allocs) - 5))
    for type_name, d in sorted(r["double_init"].items()):
        lines.append("%d x %s initialised twice, first at %s (seq %d)" % (d["count"], type_name, d["site"], d["seq"]))
    return lines


def _site(ev, test_file, root):
    """The allocating line: the innermost Python frame, and the frame in the
    test's own file when that is another one (paths under the rootdir shown
    relative to it)."""
    def where(f):
        path = str(f.get("file"))
        if root and path.startswith(root + os.sep):
            path = path[len(root) + 1:]
        return "%s:%s (%s)" % (path, f.get("line"), f.get("function"))

    frames = ev.get("py_stack") or []
    if not frames:
        # No Python stack: the call was made with the GIL released (ctypes,
        # most CUDA bindings).  The first native frame outside the tracer,
        # libffi, ctypes and the interpreter says more than nothing.
        for f in ev.get("native_stack") or []:
            module = os.path.basename(f.get("module") or "")
            fn = f.get("function") or ""
            if fn and not fn.startswith("ffi_") and not module.startswith(
                    ("libtrace", "libffi", "_ctypes", "libpython", "python")):
                where = " (%s:%s)" % (f["file"], f["line"]) if f.get("file") else ""
                return "%s%s in %s [native stack only]" % (fn, where, module)
        return "(no Python stack: called with the GIL released)"
    text = where(frames[0])
    if test_file and not str(frames[0].get("file", "")).endswith(test_file):
        for f in frames[1:]:
            if str(f.get("file", "")).endswith(test_file):
                text += " from " + where(f)
                break
    return text


def device_only(allocs):
    """What counts as left allocated at a test's end: device memory.  Large
    host buffers are followed only to see whether a collection frees them
    (caches of host memory are ordinary; the collector not counting them is
    the seed 002 story)."""
    return [rec for key, rec in allocs.items() if not key[0].startswith("host")]


def set_aside_held_by_raising(res, raised):
    """Memory of a test that a collection freed after another test raised
    while it was allocated is set aside (gc_freed_after_raise), not charged:
    the raising test may have held it in a local (a cache's entry, a
    fixture's value), and pytest keeps the raising test's frame in a
    reference cycle (or sys.last_traceback, until the next failure), so a
    collection frees it once nothing else holds it."""
    by_log = {}
    for nodeid, log, begin, end in res["windows"]:
        if nodeid in raised:
            by_log.setdefault(log, []).append((begin, end, nodeid))
    for nodeid, r in res["tests"].items():
        kept, held = [], []
        for a in r["gc_freed"]:
            # A raising test that began before the collection and had not
            # ended when the block was allocated (end None: it never did).
            a["raised_test"] = next((n for begin, end, n in by_log.get(a["log"], ())
                                     if n != nodeid and begin < a["gc_seq"] and (end is None or end > a["seq"])),
                                    None)
            (held if a["raised_test"] else kept).append(a)
        r["gc_freed"] = kept
        if held:
            r["gc_freed_after_raise"] = held


def analyse_dir(log_dir, root=None):
    res = {"tests": {}, "notes": [], "logs": 0, "windows": [], "unread": []}
    dump = gputrace.tool("trace-dump")
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".tlog"):
            res["logs"] += 1
            analyse_log(dump, os.path.join(log_dir, name), res, root)
    return res


def analyse_log(dump, path, res, root=None):
    """One process's log: test intervals from the marks, and what each test
    allocated: when it was freed, and whether inside a collection."""
    # stderr to a file: a pipe nobody reads while stdout is read could fill.
    errors = tempfile.TemporaryFile(mode="w+", errors="replace")
    # errors="replace": paths in a log need not be UTF-8; such a line then
    # parses with a replacement character instead of stopping the summary.
    # Only the kinds read below: under TRACE_PY_ALLOCS nearly every event is
    # a py_alloc, whose stack in JSON is kilobytes (gigabytes for a suite).
    proc = subprocess.Popen([dump, "--json", "--kinds", ",".join(sorted(WANTED)), path],
                            stdout=subprocess.PIPE, stderr=errors, text=True,
                            errors="replace")
    parents = {}        # seq of a gc_start or pool_op_begin -> (kind, parent)
    live = {}           # (space, key) -> allocation record
    segments = set()    # pointers pools hold as segments (pool_segment grow)
    test = None         # nodeid of the running test
    window = None       # its entry of res["windows"]
    test_file = None
    wide_fixture = 0    # depth of wider-than-function fixture setup
    current = {}        # (space, key) of what the running test allocated -> record

    def results_for(nodeid):
        return res["tests"].setdefault(nodeid, {"leaked": [], "gc_freed": [], "double_init": {}})

    def innermost(seq, kind):
        """The seq of the innermost operation of this kind (gc_start,
        pool_op_begin) among an event's enclosing ones (seq: its parent), 0
        when it is in none."""
        seen = 0
        while seq and seq in parents and seen < 10000:
            k, up = parents[seq]
            if k == kind:
                return seq
            seq = up
            seen += 1
        return 0

    def allocated(ev, space, key, size, what):
        if test is None or wide_fixture or size == 0:
            return
        rec = {"test": test, "size": size, "what": what, "seq": ev["seq"], "site": _site(ev, test_file, root),
               "log": path}
        live[(space, key)] = rec
        current[(space, key)] = rec

    # Host blocks each thread released since its last host allocation (a
    # call's releases), for the map_rest pieces that follow them on the same
    # thread (other threads' releases may come between, and one munmap may
    # release hundreds of mappings): tid -> [[key, size, record (None: a
    # block no test made), the running test's, charged to a collection]].
    cuts = {}
    closed = set()      # threads whose next host release begins a call

    def freed(ev, space, key):
        rec = live.pop((space, key), None)
        mine = current.pop((space, key), None) is not None
        cut = None
        if space.startswith("host") and key is not None:
            # Remembered even when no test made it (allocated before the
            # tests or in a wider fixture): what a cut leaves of such a
            # mapping is nobody's, not the cutting test's new buffer (the
            # rest of a module fixture's mapping was charged to the test
            # that cut it).
            cut = [key, rec["size"] if rec else ev.get("size", 0), rec, mine, False]
            tid = ev.get("tid")
            if tid in closed:
                closed.discard(tid)
                cuts[tid] = []
            ring = cuts.setdefault(tid, [])
            ring.append(cut)
            del ring[:-2048]
        if rec is None:
            return
        # A collection's only when the block is older than it: a
        # finalizer's temporary, made and dropped while it ran, is not; nor
        # is a resize (the data lives on in the new block).
        resize = ev.get("api") in ("realloc", "reallocarray", "mremap")
        if not resize and rec["seq"] < innermost(ev.get("parent"), "gc_start"):
            r = results_for(rec["test"])
            if rec in r["leaked"]:
                r["leaked"].remove(rec)
            rec["gc_seq"] = ev["seq"]
            r["gc_freed"].append(rec)
            if cut:
                cut[4] = True
        else:
            rec["freed_seq"] = ev["seq"]

    def left_of_cut(ev, space, key, size):
        """What is left of a mapping released just before (FORMAT.md section
        7, map_rest): the same allocation, smaller, not a new one of the
        running test's."""
        for at, whole, rec, mine, charged in reversed(cuts.get(ev.get("tid"), ())):
            if key is not None and at <= key < at + whole:
                if rec is None:
                    return
                piece = dict(rec, size=size)
                piece.pop("gc_seq", None)
                piece.pop("freed_seq", None)
                live[(space, key)] = piece
                if mine and test is not None:
                    current[(space, key)] = piece
                if charged:
                    # A collection that cut a mapping freed only the cut
                    # (the whole mapping was charged: 32 MiB for a
                    # finalizer that gave back 8).
                    rec["size"] -= min(size, rec["size"])
                    if not rec["size"]:
                        r = results_for(rec["test"])["gc_freed"]
                        r[:] = [a for a in r if a is not rec]
                return
        allocated(ev, space, key, size, "host buffer")

    for line in proc.stdout:
        # Most lines are events this does not look at (host buffers,
        # collections' ends, definitions): their kind is read from the text,
        # and only the rest is parsed.
        at = line.find('"kind":"')
        if at < 0 or line[at + 8:line.find('"', at + 8)] not in WANTED:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        kind = ev.get("kind")
        if kind in ("gc_start", "pool_op_begin"):
            parents[ev["seq"]] = (kind, ev.get("parent"))
        if kind == "mark":
            text = ev.get("text") or ""
            if not text.startswith(MARK):
                continue
            verb, _, rest = text[len(MARK):].partition(" ")
            if verb == "begin":
                if test is not None:
                    window[3] = ev["seq"]
                test, current = rest, {}
                # (test, log, begin seq, end seq): which tests ran while a
                # block was allocated (held_by_raising)
                window = [test, path, ev["seq"], None]
                res["windows"].append(window)
                # The file's path as the stacks' ends say it ("../" up
                # out of the rootdir cut off).
                test_file = re.sub(r"^(\.\./)+", "", rest.split("::")[0])
                results_for(test)
            elif verb == "end" and test is not None:
                window[3] = ev["seq"]
                results_for(test)["leaked"].extend(device_only(current))
                test, current = None, {}
            elif verb == "fixture-begin":
                wide_fixture += 1
            elif verb == "fixture-end":
                wide_fixture = max(0, wide_fixture - 1)
        elif kind == "cuda_alloc":
            if ev.get("result") not in (0, None) or not ev.get("ptr"):
                continue
            api = ev.get("api")
            if api in DEVICE_ALLOC:
                # A pool's segment (obtained inside its operation) is not the
                # test's memory: the pool's blocks are.
                if innermost(ev.get("parent"), "pool_op_begin") or ev["ptr"] in segments:
                    continue
                allocated(ev, "device", ev["ptr"], ev.get("size", 0), api)
            elif api in VMM_ALLOC:
                allocated(ev, "vmm", ev["ptr"], ev.get("size", 0), api)
        elif kind == "cuda_free":
            api = ev.get("api")
            if api in DEVICE_FREE:
                freed(ev, "device", ev.get("ptr"))
            elif api in VMM_FREE:
                freed(ev, "vmm", ev.get("ptr"))
        elif kind == "pool_segment" and ev.get("grow"):
            segments.add(ev.get("ptr"))
            live.pop(("device", ev.get("ptr")), None)
            current.pop(("device", ev.get("ptr")), None)
        elif kind == "pool_alloc":
            allocated(ev, "pool%s" % ev.get("pool"), ev.get("ptr"), ev.get("granted") or ev.get("requested", 0),
                      "pool block")
        elif kind == "pool_free":
            freed(ev, "pool%s" % ev.get("pool"), ev.get("ptr"))
        elif kind == "host_alloc" and ev.get("api") == "map_rest":
            left_of_cut(ev, "host%s" % ev.get("domain"), ev.get("ptr"), ev.get("size", 0))
            closed.add(ev.get("tid"))
        elif kind == "host_alloc":
            allocated(ev, "host%s" % ev.get("domain"), ev.get("ptr"), ev.get("size", 0), "host buffer")
            closed.add(ev.get("tid"))
        elif kind == "host_free":
            freed(ev, "host%s" % ev.get("domain"), ev.get("ptr"))
        elif kind == "py_double_init" and test is not None:
            d = results_for(test)["double_init"].setdefault(
                ev.get("type_name") or "?", {"count": 0, "seq": ev["seq"], "site": _site(ev, test_file, root)})
            d["count"] += 1
    proc.stdout.close()
    proc.wait()
    errors.seek(0)
    err = errors.read()
    errors.close()
    if proc.returncode not in (0, 1):
        # Its tests' findings are unknown, not absent: an error of the
        # session under --gputrace-fail-* (pytest_sessionfinish).
        res["unread"].append("%s: trace-dump failed (exit %d): %s" % (path, proc.returncode, err.strip()[-500:]))
    if test is not None:
        res["notes"].append("%s ends inside %s (the process died during the test?)" % (os.path.basename(path), test))
        results_for(test)["leaked"].extend(device_only(current))
