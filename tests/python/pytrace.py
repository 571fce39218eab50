"""Helpers for the Python-side tests: find interpreters, run a program under
the preload, read its log back through pylog.

Every test script takes: --preload PATH --pylog PATH [--python PATH ...].
Without --python it runs on every interpreter found (PYENV_ROOT or ~/.pyenv
versions 3.8 to 3.13, and the system's python3.X), or those listed in
TRACE_TEST_PYTHONS (colon-separated).  Exit status 77 means "skipped".
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(extra=None):
    p = argparse.ArgumentParser()
    p.add_argument("--preload", required=True)
    p.add_argument("--pylog", required=True)
    p.add_argument("--python", action="append", default=[])
    if extra:
        extra(p)
    return p.parse_args()


def version_of(python):
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def supported(version):
    return version is not None and version.startswith("3.") and 8 <= int(version[2:]) <= 13


def find_interpreters(requested=()):
    """[(path, "3.X")] for the interpreters to test, deduplicated by path."""
    if requested:
        candidates = list(requested)
    elif os.environ.get("TRACE_TEST_PYTHONS"):
        candidates = os.environ["TRACE_TEST_PYTHONS"].split(":")
    else:
        root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
        candidates = sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3.*")))
        candidates = [c for c in candidates if re.search(r"python3\.\d+$", c)]
        candidates += sorted(glob.glob("/usr/bin/python3.[0-9]*"))
        candidates = [c for c in candidates if re.search(r"python3\.\d+$", c)]
    found, seen = [], set()
    for c in candidates:
        real = os.path.realpath(c)
        if real in seen or not os.access(real, os.X_OK):
            continue
        seen.add(real)
        v = version_of(c)
        if supported(v):
            found.append((c, v))
    return found


def for_each_interpreter(requested, check, fails):
    """check(python, version) on every interpreter found (exit 77, skipped,
    when there is none), then report the failures."""
    interpreters = find_interpreters(requested)
    if not interpreters:
        raise SystemExit(SKIP)
    for python, version in interpreters:
        print("==", version, python)
        check(python, version)
    fails.finish()


def is_static(python):
    """True for an interpreter linked without a shared libpython (Debian's
    /usr/bin/python3.X, whatever its sysconfig says)."""
    out = subprocess.run([python, "-c", "print(any('libpython' in line for line in open('/proc/self/maps')))"],
                         capture_output=True, text=True)
    return out.stdout.strip() != "True"


class Embedding:
    """What a C program needs to embed python's shared libpython: include,
    libdir, ldversion, home (sys.base_prefix, for PYTHONHOME) and lib (the
    library's path)."""

    def __init__(self, include, libdir, ldversion, home):
        self.include, self.libdir, self.ldversion, self.home = include, libdir, ldversion, home
        self.lib = os.path.join(libdir, "libpython%s.so" % ldversion)

    def build(self, source, exe, flags=()):
        """Compiles and links source against the library into exe: "" when
        it did, else the compiler's complaint."""
        cc = subprocess.run([os.environ.get("CC", "cc"), "-O1"] + list(flags) +
                            ["-I", self.include, source, "-L", self.libdir, "-lpython" + self.ldversion,
                             "-Wl,-rpath," + self.libdir, "-o", exe], capture_output=True, text=True)
        return "" if cc.returncode == 0 else "cc failed: " + cc.stderr[-500:]


def embedding(python):
    """An Embedding for python, or None when it has no shared libpython."""
    out = subprocess.run([python, "-c",
                          "import sysconfig as s, sys; print(s.get_paths()['include']); "
                          "print(s.get_config_var('LIBDIR')); print(s.get_config_var('LDVERSION')); "
                          "print(s.get_config_var('Py_ENABLE_SHARED')); print(sys.base_prefix)"],
                         capture_output=True, text=True).stdout.split("\n")
    if len(out) < 5:
        return None
    include, libdir, ldversion, shared, home = out[:5]
    found = Embedding(include, libdir, ldversion, home)
    return found if shared == "1" and os.path.exists(found.lib) else None


class Run:
    def __init__(self, proc, events, infos, pools, header_python=""):
        self.proc = proc
        self.events = events
        self.infos = infos
        self.pools = pools
        self.header_python = header_python   # the log header's python_version

    def of(self, kind):
        return [e for e in self.events if e["kind"] == kind]

    def info(self, key):
        return [v for k, v in self.infos if k == key]

    def by_seq(self):
        return {e["seq"]: e for e in self.events}


def read_log_header(pylog, path):
    """read_log, and the header's python_version."""
    out = subprocess.run([pylog, path], capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError("pylog failed on %s: %s" % (path, out.stderr))
    events, infos, pools, header_python = [], [], {}, ""
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec["kind"] == "infos":
            infos, pools, header_python = rec["infos"], rec["pools"], rec.get("header_python", "")
        else:
            events.append(rec)
    return events, infos, pools, header_python


def read_log(pylog, path):
    """A log's events, INFO pairs and pools, as pylog reads them."""
    return read_log_header(pylog, path)[:3]


def run_traced(args, preload, pylog, env=None, cwd=None, timeout=300, trace=True):
    """Runs args (a list) with the preload; returns a Run with the events of
    the process started (its children write logs of their own, left out)."""
    with tempfile.TemporaryDirectory() as tmp:
        full_env = dict(os.environ)
        for k in list(full_env):
            if k.startswith("TRACE_") and k != "TRACE_TEST_PYTHONS":
                del full_env[k]
        full_env["TRACE_OUTPUT"] = os.path.join(tmp, "trace-%p.tlog")
        if trace:
            full_env["LD_PRELOAD"] = preload
        else:
            full_env.pop("LD_PRELOAD", None)
        full_env.update(env or {})
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full_env, cwd=cwd)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        done = subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
        log = os.path.join(tmp, "trace-%d.tlog" % proc.pid)
        if os.path.exists(log):
            events, infos, pools, header_python = read_log_header(pylog, log)
        else:
            events, infos, pools, header_python = [], [], {}, ""
        return Run(done, events, infos, pools, header_python)


def run_traced_keep(args, preload, pylog, env=None):
    """Like run_traced, but keeps the log: returns (Run, path); the caller
    removes it with discard(path)."""
    tmp = tempfile.mkdtemp(prefix="pytrace-")
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith("TRACE_") or k == "TRACE_TEST_PYTHONS"}
    full_env.update(TRACE_OUTPUT=os.path.join(tmp, "trace-%p.tlog"), LD_PRELOAD=preload)
    full_env.update(env or {})
    done = subprocess.run(args, capture_output=True, text=True, env=full_env, timeout=300)
    logs = [f for f in os.listdir(tmp) if f.endswith(".tlog")]
    path = os.path.join(tmp, logs[0]) if len(logs) == 1 else os.path.join(tmp, "missing.tlog")
    events, infos, pools = read_log(pylog, path) if logs else ([], [], {})
    return Run(done, events, infos, pools), path


def get_uv(data, pos):
    """The unsigned LEB128 at data[pos] (FORMAT.md section 2): (value, where the next starts)."""
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, pos


def uv_bytes(v):
    """v as an unsigned LEB128."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def log_records(path):
    """(kind, payload) of every record of a log (FORMAT.md section 3), its
    frames decompressed by the zstd program; None without one."""
    import shutil
    if not shutil.which("zstd"):
        return None
    data = subprocess.run(["zstd", "-dcq", path], capture_output=True, check=True).stdout
    records, pos = [], 0
    while pos < len(data):
        kind, pos = get_uv(data, pos)
        length, pos = get_uv(data, pos)
        records.append((kind, data[pos:pos + length]))
        pos += length
    return records


def record_kinds(path):
    """How many records of each kind the log holds; None without the zstd program."""
    records = log_records(path)
    if records is None:
        return None
    kinds = {}
    for kind, _ in records:
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def discard(path):
    import shutil
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


class Failures:
    """Collects failed checks so one run reports all of them."""

    def __init__(self):
        self.messages = []

    def check(self, cond, message):
        if not cond:
            self.messages.append(message)
            print("FAIL: " + message)
        return cond

    def finish(self):
        if self.messages:
            print("%d check(s) failed" % len(self.messages))
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)


def innermost(event):
    return event["py"][0] if event["py"] else None


def workload(name):
    return os.path.join(HERE, "workloads", name)


def line_of(path, marker):
    """The line number of the source line holding '# LINE:<marker>'."""
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE:" + marker):
                return number
    raise AssertionError("no LINE:%s in %s" % (marker, path))


def peak_rss_mib(args):
    """Runs args (output discarded) in a child of its own; its peak resident
    memory in MiB, -1 when it could not be measured."""
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True)
    return int(p.stdout.split()[-1]) >> 10 if p.stdout.split() else -1
