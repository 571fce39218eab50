"""Tests of `trace-replay report`: real programs run under the preload, then
their logs reported as text, JSON and HTML.

    report_test.py CASE --preload LIB --replay BIN [--workdir DIR]

Cases: seed002 (ctypes.cast keeps 10 MiB bytearrays alive until a collection:
the GC section must name the bytearray line), device_cycles (pooled device
memory held by reference cycles, through the fake CuPy pool), cuda_cycles
(the same with cudaMalloc/cudaFree, through the CUDA test doubles), pool_reentry
(a collection inside a pool operation frees into the same pool), double_init
(seed 001: objects initialised twice, with their stacks), bundle
(scripts/trace-bundle: stacks resolve from the bundle alone), import_roundtrip
(import is the inverse of trace-dump --json), torch_snapshot
(scripts/torch-snapshot-import, then check --model torch and report), progress
(a progress line on a terminal, none in a pipe), html (the page
renders in headless Chromium without script errors), trace_run
(scripts/trace-run: options, the log's path, the report, the exit status),
perfetto (export --perfetto: slices nest as the operations ran, instants
carry stacks, counters carry memory), gc_objects_none (every allocation
recorded and none freed by a collection: the report says so, not that frees
were not recorded).  Exit status 77: skipped.
"""
import argparse
import glob
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from perfetto_read import read_perfetto  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
MiB = 1 << 20


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def line_of(path, tag):
    """The line number of the line marked '# LINE:tag' (or 'LINE:tag')."""
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if "LINE:" + tag in text:
                return n
    raise KeyError(tag)


def trace(args, prog, argv, log, env_extra=None):
    env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_QUIET="1")
    env.update(env_extra or {})
    if os.path.exists(log):
        os.remove(log)   # the recorder never overwrites a log
    p = subprocess.run([sys.executable, prog] + argv, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (prog, p.returncode, p.stderr[-2000:]))
    if not os.path.exists(log):
        fail("no log written at " + log)


def report(args, log, *extra, status=0):
    """The report's output; its exit status is its verdict's (0 clean, 1
    violation, 3 inconclusive): logs of the fake CuPy pools here are not
    CuPy's placements, so the cupy model cannot follow them (3)."""
    p = subprocess.run([args.replay, "report", log] + list(extra), capture_output=True, text=True, timeout=300)
    if p.returncode != status:
        fail("trace-replay report exited %d, not %d: %s" % (p.returncode, status, p.stderr))
    return p.stdout


def gc_section(text):
    """From "Garbage collection" to the next section (a Python-only report
    puts it right after the findings)."""
    start = text.index("\nGarbage collection")
    nxt = re.search(r"\n\n[A-Z]", text[start + 1:])
    return text[start:start + 1 + nxt.start()] if nxt else text[start:]


def findings(text):
    """The Findings section at the top."""
    start = text.index("\nFindings\n")
    end = text.find("\n\n", start + 1)
    return text[start:end if end > 0 else len(text)]


def seed002(args, work):
    prog = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    alloc_line = "ctypes_cast.py:%d" % line_of(prog, "alloc")
    cast_log, nocast_log = os.path.join(work, "cast.tlog"), os.path.join(work, "nocast.tlog")
    trace(args, prog, ["cast"], cast_log)
    trace(args, prog, ["nocast"], nocast_log)

    text = report(args, cast_log)
    print(text)
    if "freed only by garbage collections: host buffers" not in findings(text):
        fail("the findings at the top do not mention the memory freed by collections")
    gc = gc_section(text)
    if alloc_line not in gc:
        fail("the GC section does not name the bytearray line %s" % alloc_line)
    m = re.search(r"Memory freed only inside collections: (device \S+ \S+, )?host buffers ([\d.]+) MiB", gc)
    if not m or float(m.group(2)) < 30 * 10:
        fail("expected at least 300 MiB of host buffers freed only inside collections")

    doc = json.loads(report(args, cast_log, "--json"))
    sites = {s["id"]: s for s in doc["sites"]}
    top = sites[doc["gc_sites"][0]]
    if alloc_line not in top["python"] or top["gc_host_bytes"] < 30 * 10 * MiB:
        fail("JSON gc_sites[0] is not the bytearray line: %r" % top)
    if top["gc_host_count"] < 30 or not 10 * MiB <= top["gc_host_bytes"] // top["gc_host_count"] < 10 * MiB + 4096:
        fail("expected 10 MiB buffers (bytearray adds one byte) freed by collections: %r" % top)
    if doc["memory"]["peak_host"]["bytes"] < 20 * MiB:
        fail("peak host buffers too small: %r" % doc["memory"]["peak_host"])

    # A log cut short (a killed process) still reports, and says so.
    cut = os.path.join(work, "cut.tlog")
    with open(cast_log, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:os.path.getsize(cast_log) - 20])
    text = report(args, cut)
    if "log        damaged:" not in text and "log        no end record" not in text:
        fail("a truncated log is reported as whole:\n" + text[:600])

    # Without the cast, reference counting frees every buffer at once.
    gc = gc_section(report(args, nocast_log))
    if "host buffers 0 B" not in gc or alloc_line in gc:
        fail("without the cycle nothing should be charged to collections:\n" + gc)


def device_cycles(args, work):
    prog = os.path.join(HERE, "workloads", "device_cycles.py")
    log = os.path.join(work, "dev.tlog")
    fake = os.path.join(ROOT, "tests", "python", "fake_cupy")
    trace(args, prog, [], log, {"PYTHONPATH": fake})
    text = report(args, log, status=3)   # the fake CuPy pool: the cupy model cannot follow it
    print(text)
    gc = gc_section(text)
    cycle = "device_cycles.py:%d" % line_of(prog, "cycle")
    plain = "device_cycles.py:%d" % line_of(prog, "plain")
    if "device 40.0 MiB" not in gc:
        fail("expected 5 x 8 MiB of device memory freed only inside collections")
    if cycle not in gc or plain in gc:
        fail("the GC section must name the cycle's allocation line, not the plain one")
    if "RE-ENTERED" in text:
        fail("a collection outside any pool operation is not a re-entry")
    doc = json.loads(report(args, log, "--json", status=3))
    if doc["gc"]["freed_in_collections_device_bytes"] != 40 * MiB:
        fail("JSON: freed_in_collections_device_bytes %r" % doc["gc"]["freed_in_collections_device_bytes"])
    if doc["memory"]["peak_allocated"]["bytes"] < 40 * MiB:
        fail("JSON: peak allocated %r" % doc["memory"]["peak_allocated"])


def trace_run(args, work):
    script = os.path.join(ROOT, "scripts", "trace-run")
    env = dict(os.environ, TRACE_LIB=args.preload, TRACE_REPLAY=args.replay)
    env.pop("LD_PRELOAD", None)
    for old in glob.glob(os.path.join(work, "*.tlog")):
        os.remove(old)   # the recorder never overwrites a log
    prog = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    log = os.path.join(work, "run-%p.tlog")
    # The command's exit status comes back, and the log and the report's
    # first lines are shown (on stderr: the command's stdout stays its own).
    code = "import runpy, sys; sys.argv = [%r, 'cast']; runpy.run_path(%r, run_name='__main__'); sys.exit(3)" % (
        prog, prog)
    p = subprocess.run([script, "--output", log, "--report-lines", "200", "--", sys.executable, "-c", code],
                       env=env, capture_output=True, text=True, timeout=300)
    print(p.stderr)
    if p.returncode != 3:
        fail("trace-run exited %d, the command 3" % p.returncode)
    m = re.search(r"log written to (\S+)", p.stderr)
    if not m or not os.path.exists(m.group(1)) or not m.group(1).startswith(os.path.join(work, "run-")):
        fail("trace-run did not say where the log went")
    if "trace-replay report: " + m.group(1) not in p.stderr or "ctypes_cast.py" not in p.stderr:
        fail("trace-run did not show the report")
    p = subprocess.run([script, "--quiet", "--output", os.path.join(work, "quiet.tlog"), "--", sys.executable,
                        "-c", "import sys; sys.exit(0)"], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or "trace-replay report" in p.stderr:
        fail("--quiet: exit %d, stderr %r" % (p.returncode, p.stderr))
    p = subprocess.run([script, "--output", os.path.join(work, "quiet.tlog"), "--", "true"], env=env,
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 0 or "exists" not in p.stderr:
        fail("an existing --output must be refused: exit %d, %r" % (p.returncode, p.stderr))
    p = subprocess.run([script, "--output", os.path.join(work, "none.tlog"), "--", os.path.join(work, "no-such-cmd")],
                       env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 127:
        fail("a command that cannot run: exit %d, expected 127" % p.returncode)
    p = subprocess.run([script, "--torch-no-caching", "--py-allocs", "7", "--output", os.path.join(work, "env.tlog"),
                        "--", sys.executable, "-c",
                        "import os, sys; sys.exit(os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING') == '1' and "
                        "os.environ.get('TRACE_PY_ALLOCS') == '7' and 40 or 41)"],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 40:
        fail("--torch-no-caching / --py-allocs did not reach the command (exit %d)" % p.returncode)


def perfetto(args, work):
    prog = os.path.join(HERE, "workloads", "device_cycles.py")
    log, out = os.path.join(work, "dev.tlog"), os.path.join(work, "dev.pftrace")
    trace(args, prog, [], log, {"PYTHONPATH": os.path.join(ROOT, "tests", "python", "fake_cupy")})
    p = subprocess.run([args.replay, "export", "--perfetto", out, log], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("export exited %d: %s" % (p.returncode, p.stderr))
    process, events = read_perfetto(out)
    # Compact: names, frames and stacks interned; on a long log the cost per
    # event is what is left (the fixed part dominates this small one).
    long_log, long_out = os.path.join(work, "long.tlog"), os.path.join(work, "long.pftrace")
    subprocess.run([args.gen, long_log, "200000"], check=True, capture_output=True, timeout=300)
    subprocess.run([args.replay, "export", "--perfetto", long_out, long_log], check=True, capture_output=True,
                   timeout=300)
    per_event = os.path.getsize(long_out) / 200001
    print("export of 200001 events: %.1f bytes per event" % per_event)
    if per_event >= 60:
        fail("the export takes %.1f bytes per event (aim: under 60)" % per_event)
    # Slices nest per thread the way the operations ran: replay the B/E pairs.
    open_slices, nested_in_gc, last_ts = {}, 0, {}
    for e in events:
        if e["ph"] not in "BE":
            continue
        stack = open_slices.setdefault(e["tid"], [])
        if e["ts"] < last_ts.get(e["tid"], 0):
            fail("slices out of time order: %r" % e)
        last_ts[e["tid"]] = e["ts"]
        if e["ph"] == "B":
            if e["name"].startswith("cupy ") and any(s["name"].startswith("gc generation") for s in stack):
                nested_in_gc += 1
            stack.append(e)
        elif not stack:
            fail("an E without its B: %r" % e)
        else:
            stack.pop()
    if any(open_slices.values()):
        fail("slices left open")
    if nested_in_gc < 5:
        fail("expected the 5 cycle frees as pool slices inside collection slices, got %d" % nested_in_gc)
    frees = [e for e in events if e["ph"] == "i" and e["name"].startswith("cupy free")]
    cycle = "device_cycles.py:%d" % line_of(prog, "cycle")
    allocs = [e for e in events if e["ph"] == "i" and e["name"].startswith("cupy alloc")]
    if len(frees) != 10 or len(allocs) != 10:
        fail("expected 10 pool allocations and frees as instant events")
    if not all("seq" in e["args"] and e["args"].get("ptr") for e in allocs):
        fail("instants carry seq and ptr: %r" % allocs[:1])
    if not any(cycle in frame for e in allocs for frame in e.get("stack", [])):
        fail("allocation instants carry no Python frame naming %s" % cycle)
    peak = max(e["value"] for e in events if e["ph"] == "C" and e["name"] == "device memory allocated")
    if peak < 40 << 20:
        fail("device memory counter peak %d" % peak)
    if not process:
        fail("no process name")
    small = os.path.join(work, "small.pftrace")
    subprocess.run([args.replay, "export", "--perfetto", small, "--no-stacks", log], check=True, timeout=300,
                   capture_output=True)
    lean = read_perfetto(small)[1]
    if len(lean) != len(events) or any("stack" in e for e in lean):
        fail("--no-stacks: the same events without stacks expected")
    part = os.path.join(work, "part.pftrace")
    subprocess.run([args.replay, "export", "--perfetto", part, "--range", "30:60", log], check=True, timeout=300,
                   capture_output=True)
    window = read_perfetto(part)[1]
    seqs = [e["args"]["seq"] for e in window if "seq" in e["args"]]
    depth = 0
    for e in window:
        depth += {"B": 1, "E": -1}.get(e["ph"], 0)
        if depth < 0:
            fail("--range: an E without its B")
    if not seqs or min(seqs) < 30 or max(seqs) > 60 or depth:
        fail("--range 30:60: seqs %r, open slices %d" % (seqs[:5], depth))


def cuda_cycles(args, work):
    """Device memory from cudaMalloc held by cycles: cudaFree inside a
    collection is charged to the cudaMalloc's line."""
    if not args.cuda_doubles:
        print("SKIP: no CUDA test doubles in this build")
        sys.exit(SKIP)
    prog = os.path.join(HERE, "workloads", "cuda_cycles.py")
    log = os.path.join(work, "cuda.tlog")
    trace(args, prog, [args.cuda_doubles], log, {"LD_LIBRARY_PATH": args.cuda_doubles})
    text = report(args, log)
    print(text)
    gc = gc_section(text)
    if "device 16.0 MiB" not in gc or "cuda_cycles.py:%d" % line_of(prog, "alloc") not in gc:
        fail("expected 4 x 4 MiB of cudaMalloc memory freed inside collections, at the Buffer line")


def pool_reentry(args, work):
    """Seed 000's shape: a collection inside a pool operation frees pooled
    memory back into the same pool (here CuPy's out-of-memory ladder)."""
    prog = os.path.join(ROOT, "tests", "python", "workloads", "cupy_pool.py")
    log = os.path.join(work, "ladder.tlog")
    trace(args, prog, [], log, {"PYTHONPATH": os.path.join(ROOT, "tests", "python", "fake_cupy")})
    # The fake pool is not CuPy's placement: the cupy model leaves it, and a
    # clean replay then proves nothing (inconclusive, exit 3).
    text = report(args, log, status=3)
    print(text)
    if "verdict: INCONCLUSIVE: no violation, but model auto diverged" not in text:
        fail("the verdict must say the model could not follow the fake pool")
    pools = text[text.index("\nMemory pools"):text.index("\nTop device")]
    if "RE-ENTERED 6 times" not in pools or "cupy_pool.py:%d" % line_of(prog, "ladder") not in pools:
        fail("the pools section must show 6 re-entries from the ladder's malloc")
    doc = json.loads(report(args, log, "--json", status=3))
    if doc["verdict"]["result"] != "inconclusive" or doc["verdict"]["exit_status"] != 3:
        fail("JSON verdict: %r" % doc["verdict"])
    pool = doc["pools"][0]
    if pool["name"] != "cupy" or pool["reentries"] != 6 or not pool["first_reentry"]["py_stack"]:
        fail("JSON pools: %r" % pool)


BUNDLE_LIB = r"""
#include <stdint.h>
#include "trace_api.h"

/* Two frames of our own on every stack of the pool's events. */
__attribute__((noinline)) void *bundle_fixture_allocate(int pool, uintptr_t at, size_t size)
{
    uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, size);
    trace_pool_segment(pool, TRACE_SEGMENT_GROW, (void *)at, 1 << 20);
    trace_pool_alloc(pool, (void *)at, size, size, 0);
    trace_pool_op_end(pool, op);
    return (void *)at;
}

__attribute__((noinline)) void bundle_fixture_run(void)
{
    int pool = trace_pool_register("bundle-pool");
    for (int i = 0; i < 3; i++)
        bundle_fixture_allocate(pool, 0x10000000 + ((uintptr_t)i << 20), 4096);
    bundle_fixture_allocate(pool, 0x10000000, 4096);   /* handed out twice: a violation */
}
"""

BUNDLE_MAIN = r"""
void bundle_fixture_run(void);
int main(void) { bundle_fixture_run(); return 0; }
"""


def bundle(args, work):
    """A bundle made here resolves the stacks on "another machine": in another
    folder, with the program and its library gone."""
    build = os.path.join(work, "build")
    os.makedirs(build, exist_ok=True)
    for name, text in (("lib.c", BUNDLE_LIB), ("main.c", BUNDLE_MAIN)):
        with open(os.path.join(build, name), "w") as f:
            f.write(text)
    cc = os.environ.get("CC", "cc")
    lib, exe = os.path.join(build, "libbundlefix.so"), os.path.join(build, "bundlefix")
    subprocess.run([cc, "-shared", "-fPIC", "-g", "-O1", "-Wl,--build-id", "-I" + os.path.join(ROOT, "preload"),
                    os.path.join(build, "lib.c"), "-o", lib], check=True)
    subprocess.run([cc, "-g", "-O1", "-Wl,--build-id", os.path.join(build, "main.c"), lib, "-o", exe,
                    "-Wl,-rpath," + build], check=True)
    log = os.path.join(work, "app.tlog")
    env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_QUIET="1")
    subprocess.run([exe], env=env, check=True, timeout=60)

    out = os.path.join(work, "app.bundle.tar.gz")
    env = dict(os.environ, TRACE_REPLAY=args.replay)
    p = subprocess.run([os.path.join(ROOT, "scripts", "trace-bundle"), "-o", out, log], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("trace-bundle exited %d: %s" % (p.returncode, p.stderr))
    print(p.stdout)

    # Another machine: the binaries are gone, the bundle unpacks elsewhere.
    shutil.rmtree(build)
    os.remove(log)
    elsewhere = os.path.join(work, "elsewhere")
    shutil.rmtree(elsewhere, ignore_errors=True)
    os.makedirs(elsewhere)
    with tarfile.open(out) as tar:
        tar.extractall(elsewhere)
    top = os.path.join(elsewhere, "app.tlog.bundle")
    for name in ("app.tlog", "README.md", "environment.txt", "report.txt", "report.html", "check.txt",
                 "minimized.tlog"):
        if not os.path.exists(os.path.join(top, name)):
            fail("the bundle lacks " + name)
    p = subprocess.run([args.replay, "check", "minimized.tlog"], cwd=top, capture_output=True, text=True)
    if p.returncode != 1 or "overlap" not in p.stdout:
        fail("the minimized log does not break the same invariant: %s" % p.stdout)
    with open(os.path.join(top, "environment.txt")) as f:
        if "cmdline: " + exe not in f.read():
            fail("environment.txt lacks the log's command line")

    with open(os.path.join(top, "report.txt")) as f:
        if "[overlap]" not in f.read():
            fail("report.txt does not list the violation")

    def native_frames(debug_dir):
        cmd = [args.replay, "report", "app.tlog", "--json"] + (["--debug-dir", debug_dir] if debug_dir else [])
        p = subprocess.run(cmd, cwd=top, capture_output=True, text=True, timeout=60)
        if p.returncode != 1:   # the overlap: a violation, as check says
            fail("report in the bundle: exit %d: %s" % (p.returncode, p.stderr))
        doc = json.loads(p.stdout)
        if [v["invariant"] for v in doc["violations"]] != ["overlap"]:
            fail("violations: %r" % doc["violations"])
        m = doc["model_check"]
        if not m["violated"] or m["violation"][0]["invariant"] != "overlap":
            fail("model_check: %r" % m)
        frames = [f for st in doc["device_stacks"] for f in st["native_stack"]] + doc["violations"][0]["at"]["native_stack"]
        # As text, the way people read them: "function (file:line) module+0xoffset".
        return ["%s (%s:%s) %s" % (f["function"], f["file"], f["line"], f["module"]) for f in frames]

    if any("bundle_fixture_allocate" in f for f in native_frames(None)):
        fail("stacks resolve without the bundle's debug folder: the test proves nothing")
    frames = native_frames("debug")
    for want in ("bundle_fixture_allocate (", "bundle_fixture_run (", "lib.c:"):
        if not any(want in f for f in frames):
            fail("through the bundle, no frame shows %r: %r" % (want, frames[:8]))


def dump_json(args, log):
    dump = os.path.join(os.path.dirname(args.replay), "trace-dump")
    p = subprocess.run([dump, "--json", log], capture_output=True, text=True, timeout=120, check=True)
    return p.stdout


def import_lines(args, text, out):
    p = subprocess.run([args.replay, "import", "-o", out, "-"], input=text, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("import exited %d: %s" % (p.returncode, p.stderr))


def import_roundtrip(args, work):
    """import is the inverse of trace-dump --json; definition lines name
    pools, threads and modules, and INFO records come back."""
    prog = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    log, again = os.path.join(work, "cast.tlog"), os.path.join(work, "again.tlog")
    trace(args, prog, ["cast"], log)
    lines = dump_json(args, log)
    import_lines(args, lines, again)

    def records(text):
        # END counts the zstd frames written, which depends on the writer's
        # flushing, not on the content.
        out = [json.loads(l) for l in text.splitlines()]
        out[-1].pop("frames", None)
        return out
    if records(dump_json(args, again)) != records(lines):
        fail("trace-dump --json | import | trace-dump --json changed the log")
    # Threads' names as the log ends, Python names included: the main
    # thread's comes after its first events, in a second thread line.
    def threads(path):
        out = subprocess.run([os.path.join(os.path.dirname(args.replay), "trace-dump"), "--summary", path],
                             capture_output=True, text=True).stdout
        return [l for l in out.splitlines() if l.startswith("threads ")]
    if threads(again) != threads(log) or "(MainThread)" not in "".join(threads(log)):
        fail("thread names after trace-dump --json | import: %s, before: %s" % (threads(again), threads(log)))
    kinds = [r["kind"] for r in records(lines)]
    for kind in ("thread", "module", "info"):
        if kind not in kinds:
            fail("trace-dump --json printed no %s line" % kind)
    if kinds.index("module") > kinds.index("end"):
        fail("module lines come after the events that need them")
    handmade = "\n".join(json.dumps(x) for x in [
        {"kind": "header", "pid": 42, "cmdline": "handmade", "mono_start_ns": 1000},
        {"kind": "pool", "pool": 3, "name": "handpool"},
        {"kind": "thread", "tid": 7, "name": "worker-7"},
        {"kind": "info", "key": "note", "value": "written by hand"},
        {"kind": "module", "id": 5, "path": "/opt/lib/libhand.so", "base": 0x7f0000000000,
         "build_id": "0123abcd", "segments": [{"vaddr": 0, "memsz": 0x10000, "flags": 5}]},
        {"seq": 10, "tid": 7, "t_ns": 2000, "kind": "pool_op_begin", "pool": 3, "op": 1, "arg": 4096,
         "native_stack": [0x7f0000001234]},
        {"seq": 11, "tid": 7, "t_ns": 2100, "kind": "pool_alloc", "parent": 10, "pool": 3, "ptr": 0x5000,
         "requested": 4096, "granted": 4096, "py_stack": [{"file": "hand.py", "line": 3, "function": "f"}]},
        {"seq": 12, "tid": 7, "t_ns": 2200, "kind": "pool_op_end", "pool": 3, "begin": 10},
        {"kind": "module_unload", "id": 5},
        {"seq": 13, "tid": 7, "t_ns": 2300, "kind": "end"},
    ]) + "\n"
    hand = os.path.join(work, "hand.tlog")
    import_lines(args, handmade, hand)
    text = report(args, hand)
    for want in ("pool 3 (handpool): 1 operations, 1 allocations", "worker-7", "info       note: written by hand",
                 "hand.py:3 (f)", "command    handmade"):
        if want not in text:
            fail("the imported log's report lacks %r:\n%s" % (want, text))
    hand_lines = [json.loads(l) for l in dump_json(args, hand).splitlines()]
    if {"kind": "module_unload", "id": 1} not in hand_lines:
        fail("the module_unload line did not come back: %r" % hand_lines)
    doc = json.loads(report(args, hand, "--json"))
    if [(m["path"], m["build_id"]) for m in doc["modules"]] != [("/opt/lib/libhand.so", "0123abcd")]:
        fail("module line not imported: %r" % doc["modules"])
    if not doc["log"]["clean_end"]:
        fail("the end line did not end the log")
    # A long run's collections: the JSON lists an even sample, and counts all.
    many = os.path.join(work, "many.tlog")
    import_lines(args, "".join('{"kind":"gc_start","t_ns":%d,"generation":0}\n{"kind":"gc_stop","t_ns":%d}\n'
                               % (10 * i, 10 * i + 5) for i in range(25000)), many)
    gc = json.loads(report(args, many, "--json"))["gc"]
    if gc["collections_total"] != 25000 or not 5000 <= len(gc["collections"]) <= 10000:
        fail("collections: %d listed of %d" % (len(gc["collections"]), gc["collections_total"]))
    if gc["generations"][0]["collections"] != 25000:
        fail("generation 0 collections: %r" % gc["generations"][0])
    for bad in ('{"kind":"header"}\n{"kind":"header"}\n', '{"kind":"nonsense"}\n', '{"kind": \n',
                '{"kind":"module_unload","id":3}\n'):
        p = subprocess.run([args.replay, "import", "-o", os.path.join(work, "bad.tlog"), "-"], input=bad,
                           capture_output=True, text=True)
        if p.returncode != 2 or ":1:" not in p.stderr and ":2:" not in p.stderr:
            fail("bad input %r: exit %d, %r" % (bad, p.returncode, p.stderr))


class Unimportable(object):
    """Stands for a torch class: the importer must not need it."""


class Trap(object):
    """Unpickling this with a plain Unpickler would run a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def torch_snapshot(args, work):
    """A snapshot-shaped pickle, made without torch, converted and checked
    with the PyTorch model; the state before the trace comes from the final
    segments (a block freed in the trace was allocated before it)."""
    MB = MiB
    seg, pre = 0x7f0000000000, 0x7f1000000000

    def frames(line, name="train_step"):
        return [{"filename": "/work/model.py", "line": 7, "name": "forward"},
                {"filename": "/work/train.py", "line": line, "name": name},
                {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"}]

    # Sizes as PyTorch places them: 1.5 MiB is past the small pool's 1 MiB,
    # so it gets a 20 MiB segment of the large pool; 4 KiB lives in a 2 MiB
    # small segment.  The model then follows every choice (the check's
    # verdict is clean only if the model follows the log).
    A = 3 * MB // 2
    trace_entries = [
        {"action": "segment_alloc", "addr": seg, "size": 20 * MB, "stream": 0, "frames": frames(10), "time_us": 100},
        {"action": "alloc", "addr": seg, "size": A, "stream": 0, "frames": frames(10), "time_us": 101},
        {"action": "alloc", "addr": seg + A, "size": 2 * MB, "stream": 0, "frames": frames(11), "time_us": 102},
        {"action": "free_requested", "addr": seg, "size": A, "stream": 0, "frames": frames(12, "cleanup"),
         "time_us": 103},
        {"action": "free_completed", "addr": seg, "size": A, "stream": 0, "frames": [], "time_us": 104},
        {"action": "free_requested", "addr": pre, "size": 4096, "stream": 0, "frames": frames(13, "cleanup"),
         "time_us": 105},
        {"action": "free_completed", "addr": pre, "size": 4096, "stream": 0, "frames": [], "time_us": 106},
        {"action": "oom", "addr": 0, "size": 80 << 30, "stream": 0, "device_free": 1024, "frames": frames(14),
         "time_us": 107},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": [], "time_us": 108},
    ]
    segments = [
        {"device": 0, "address": seg, "total_size": 20 * MB, "stream": 0, "segment_type": "large",
         "blocks": [{"address": seg, "size": A, "requested_size": A, "state": "inactive", "frames": []},
                    {"address": seg + A, "size": 2 * MB, "requested_size": 2 * MB, "state": "active_allocated",
                     "frames": frames(11)},
                    {"address": seg + A + 2 * MB, "size": 18 * MB - A, "requested_size": 0, "state": "inactive",
                     "frames": []}]},
        {"device": 0, "address": pre, "total_size": 2 * MB, "stream": 0, "segment_type": "small",
         "blocks": [{"address": pre, "size": 2 * MB, "requested_size": 0, "state": "inactive", "frames": []}]},
    ]
    marker = os.path.join(work, "trap-ran")
    odd = Unimportable()
    odd.field = 1
    snap = {"segments": segments, "device_traces": [trace_entries], "odd": odd, "trap": Trap(marker)}
    pickled, log = os.path.join(work, "snapshot.pickle"), os.path.join(work, "snapshot.tlog")
    with open(pickled, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    env = dict(os.environ, TRACE_REPLAY=args.replay)
    p = subprocess.run([os.path.join(ROOT, "scripts", "torch-snapshot-import"), pickled, "-o", log], env=env,
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("torch-snapshot-import exited %d: %s" % (p.returncode, p.stderr))
    if os.path.exists(marker):
        fail("unpickling the snapshot ran code from it")
    p = subprocess.run([args.replay, "check", log, "--model", "torch"], capture_output=True, text=True, timeout=120)
    print(p.stdout)
    # The model follows every choice but one: at the oom entry PyTorch (and
    # the model) try the device again after release_cached_blocks, and the
    # snapshot shows only the last refusal (torch-snapshot-import writes one
    # failed cudaMalloc).  One divergence in seven answers: inconclusive.
    fid = json.loads(subprocess.run([args.replay, "check", log, "--model", "torch", "--json"], capture_output=True,
                                    text=True, timeout=120).stdout)["fidelity"]
    if p.returncode != 3 or "model torch" not in p.stdout or "free_unknown" in p.stdout or \
            (fid["matched"], fid["diverged"], fid["first_diverged_seq"]) != (6, 1, 17):
        fail("check --model torch on the snapshot: exit %d, fidelity %s" % (p.returncode, fid))
    text = report(args, log, status=3)     # the report's verdict is check's
    print(text)
    doc = json.loads(report(args, log, "--json", status=3))
    pool = doc["pools"][0]
    if (pool["name"], pool["ops"], pool["allocs"], pool["frees"]) != ("torch", 5, 3, 2):
        fail("pools: %r" % pool)
    top = {s["id"]: s for s in doc["sites"]}[doc["top_device_sites"][0]]
    if "train.py:11 (train_step)" not in top["python"] or any("CUDACachingAllocator" in (f["file"] or "") + (f["function"] or "") for f in top["py_stack"]):
        fail("top device site: %r" % top)
    if doc["violations_total"] or not any(w["invariant"] == "alloc_failed" for w in doc["warnings"]):
        fail("expected no violation and the OOM as a failed allocation")
    if doc["memory"]["peak_reserved"]["bytes"] != 22 * MB:
        fail("peak reserved %r" % doc["memory"]["peak_reserved"])
    # The report replays the pool model as check does (auto: by the pool's name).
    m = doc["model_check"]
    if m["model"] != "auto" or m["violated"] or not m["ops"] or m["diverged"] != 1 or m["following"]:
        fail("model_check: %r" % m)
    if "Pool models (replayed as trace-replay check does, model auto)\n" not in text:
        fail("the text report lacks the pool model's verdict")
    if json.loads(report(args, log, "--json", "--model", "none"))["model_check"] is not None:
        fail("--model none still replayed a model")
    p = subprocess.run([args.replay, "report", log, "--model", "nonsense"], capture_output=True, text=True)
    if p.returncode != 2 or "unknown model" not in p.stderr:
        fail("an unknown model: exit %d, %r" % (p.returncode, p.stderr))


DOUBLE_INIT_PROGRAM = """
import double_init as d
for i in range(7):
    d.make_twice()                                 # LINE:twice
    d.make_var_twice()
    d.make_once()
d.make_twice()                                     # LINE:again
extra = [                                          # six more places, one object each
    lambda: d.make_twice(),
    lambda: d.make_twice(),
    lambda: d.make_twice(),
    lambda: d.make_twice(),
    lambda: d.make_twice(),
    lambda: d.make_twice(),
]
for f in extra:
    f()
"""


MANY_PLACES_PROGRAM = """
import double_init as d
for i in range(130):
    exec(compile("\\n" * i + "d.make_twice()", "many_%d.py" % i, "exec"))
"""

# The many places, and one place met all through the run (in every segment
# of a log kept within a budget, and after 3.13 specialised the call).
SEGMENTS_PROGRAM = MANY_PLACES_PROGRAM.replace("130", "1500") + """\
    d.make_twice()                                 # LINE:every
    if i % 100 == 0:
        buffer = bytearray(1 << 20)                # LINE:buffer
"""


def double_init(args, work):
    """Seed 001: each object initialised twice is listed, with both stacks."""
    cfg = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                          "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                         capture_output=True, text=True, check=True).stdout.split()
    fixture = os.path.join(ROOT, "tests", "fixtures", "double_init", "double_init.c")
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-g", "-O1", "-I" + cfg[0], fixture, "-o",
                    os.path.join(work, "double_init" + cfg[1])], check=True)
    prog, log = os.path.join(work, "program.py"), os.path.join(work, "dinit.tlog")
    with open(prog, "w") as f:
        f.write(DOUBLE_INIT_PROGRAM)
    trace(args, prog, [], log, {"PYTHONPATH": work})
    text = report(args, log)
    print(text)
    # Two types, one of them from eight places: the types are counted once;
    # a type's five places with most objects are listed, the rest in a line.
    if "double initialisations: 21 objects of 2 types, from 9 places" not in findings(text):
        fail("the findings at the top do not count the double initialisations")
    start = text.index("\nDouble initialisations")
    section = text[start:text.index("\n\n", start + 1)]
    if "py_double_init: off" in text:
        print("SKIP: the interpreter's PyObject_Init cannot be interposed here")
        sys.exit(SKIP)
    for want in ("7 x double_init.Thing", "7 x double_init.VarThing", "1 x double_init.Thing",
                 "program.py:%d" % line_of(prog, "twice"), "program.py:%d" % line_of(prog, "again"), "make_twice",
                 "... 3 more of double_init.Thing from 3 more places"):
        if want not in section:
            fail("the double-initialisation section lacks %r" % want)
    if section.count(" x double_init.Thing, first at seq") != 5:
        fail("the double-initialisation section lists %d places of double_init.Thing, not 5"
             % section.count(" x double_init.Thing, first at seq"))
    doc = json.loads(report(args, log, "--json"))
    counts = sorted((d["type"], d["count"]) for d in doc["double_inits"])
    if counts != [("double_init.Thing", 1)] * 7 + [("double_init.Thing", 7), ("double_init.VarThing", 7)]:
        fail("JSON double_inits: %r" % counts)
    totals = [(t["type"], t["count"], t["places"], t["listed"]) for t in doc.get("double_init_types", [])]
    if totals != [("double_init.Thing", 14, 8, 8), ("double_init.VarThing", 7, 1, 1)]:
        fail("JSON double_init_types: %r" % totals)
    # A bug reached from more places than are listed (a helper's log had
    # 7,391, and an 88 MB report): 100 of each type, and the totals.
    prog, log = os.path.join(work, "many.py"), os.path.join(work, "many.tlog")
    with open(prog, "w") as f:
        f.write(MANY_PLACES_PROGRAM)
    trace(args, prog, [], log, {"PYTHONPATH": work})
    doc = json.loads(report(args, log, "--json"))
    listed = [(d["type"], d["count"]) for d in doc["double_inits"]]
    totals = [(t["type"], t["count"], t["places"], t["listed"]) for t in doc.get("double_init_types", [])]
    if listed != [("double_init.Thing", 1)] * 100 or totals != [("double_init.Thing", 130, 130, 100)]:
        fail("130 places: JSON double_inits %d entries %r, double_init_types %r"
             % (len(listed), sorted(set(listed)), totals))
    text = report(args, log)
    if "... 125 more of double_init.Thing from 125 more places (report --json lists up to 100" not in text:
        fail("130 places: the text's line for the places not shown is missing")
    # A log in segments (TRACE_MAX_BYTES) defines the type's name again in
    # each, under a new id, as the recorder does after it forgot what it
    # interned (a pandas run with every allocation recorded): one type still.
    # A frame each millisecond: the log is about 46K in 5 files on a quick
    # machine, and grows with the run's length (a frame per ms): under ASan
    # on a slow VM, 8 files and over 64K, so a 64K budget deleted the
    # first segment after the log's own file (the check below looked for
    # it, and the host buffers counted below went with it).  128K: segments
    # of 16K (an eighth of the budget), so at least two files for the
    # events alone, and room for twice that slow run's frames.
    prog = os.path.join(work, "segments.py")
    with open(prog, "w") as f:
        f.write(SEGMENTS_PROGRAM)
    logs = []
    for name in ("segments", "other"):
        for old in glob.glob(os.path.join(work, name + "*.tlog")):
            os.remove(old)
        logs.append(os.path.join(work, name + ".tlog"))
        trace(args, prog, [], logs[-1], {"PYTHONPATH": work, "TRACE_MAX_BYTES": "128K", "TRACE_FLUSH_MS": "1"})
        if not os.path.exists(os.path.join(work, name + ".seg1.tlog")):
            fail("1500 places within 128K: the log has no second segment")
    log = logs[0]
    doc = json.loads(report(args, log, "--json"))
    types = [t["type"] for t in doc.get("double_init_types", [])]
    if types != ["double_init.Thing"]:
        fail("a log in segments: double_init_types %r, not one type" % types)
    if "objects of 1 type, from" not in findings(report(args, log)):
        fail("a log in segments: the findings count the type more than once")
    # The place met in every segment is one place: its stacks are defined
    # again in each segment under new ids, and were grouped by id (a place
    # per segment, "from 6 places" for what was one), and on 3.13 the
    # first call's native stack differs from the specialised ones' inside
    # the interpreter's frames, which print the same.
    every = "segments.py:%d" % line_of(prog, "every")
    at_every = [x for x in doc["double_inits"] if x["py_stack"] and
                "%s:%d" % (os.path.basename(x["py_stack"][0]["file"]), x["py_stack"][0]["line"]) == every]
    total = doc["double_init_types"][0]
    if len(at_every) != 1 or at_every[0]["count"] != total["count"] - (total["places"] - 1):
        fail("a log in segments: %s is %d places (%s), of %r" % (every, len(at_every),
                                                                   [x["count"] for x in at_every], total))
    # The flame graph's stacks (here the large host buffers, one line in
    # every segment): each stack once, whatever ids it had.
    tallies = [json.dumps([x["native_stack"], x["py_stack"]]) for x in doc["host_stacks"]]
    buffers = sum(x["count"] for x in doc["host_stacks"] if x["py_stack"] and
                  x["py_stack"][0]["line"] == line_of(prog, "buffer"))
    if buffers != 15 or len(set(tallies)) != len(tallies):
        fail("a log in segments: %d host buffers in %d stacks, %d of them different" % (
            buffers, len(tallies), len(set(tallies))))
    text = report(args, log)
    if text.count("%s (<module>)" % every) != 1:
        fail("a log in segments: the text lists %s %d times" % (every, text.count("%s (<module>)" % every)))
    # Another run's segment beside a log (a run under the same name before
    # it): the reader stops there, and its note says whose it is; its reason
    # was an uninitialised buffer (stack bytes, not UTF-8: the report could
    # not be decoded).
    shutil.copyfile(os.path.join(work, "other.seg1.tlog"), os.path.join(work, "segments.seg1.tlog"))
    p = subprocess.run([args.replay, "report", log], capture_output=True, timeout=300)
    try:
        text = p.stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("a log beside another run's segment: the report is not UTF-8 (%s)" % e)
    if "segment 1 is not a segment of this log: another run's (pid " not in text:
        fail("a log beside another run's segment: the note does not say whose it is")
    # One line called in a loop, on every interpreter found: one place.  On
    # 3.13 the first call reaches the extension's function through other
    # code of the interpreter than the specialised calls after it do (the
    # native stacks differ inside the folded CPython frames and print the
    # same): it was a place of its own, "1 x" beside "29 x".
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import pytrace
    for python, version in pytrace.find_interpreters():
        where = os.path.join(work, "py" + version)
        os.makedirs(where, exist_ok=True)
        cfg = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                              "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                             capture_output=True, text=True, check=True).stdout.split()
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-g", "-O1", "-I" + cfg[0], fixture, "-o",
                        os.path.join(where, "double_init" + cfg[1])], check=True)
        prog, log = os.path.join(where, "loop.py"), os.path.join(where, "loop.tlog")
        with open(prog, "w") as f:
            f.write("import double_init as d\nfor i in range(30):\n    d.make_twice()\n")
        if os.path.exists(log):
            os.remove(log)
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_QUIET="1", PYTHONPATH=where)
        p = subprocess.run([python, prog], env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or not os.path.exists(log):
            fail("%s: %s exited %d: %s" % (version, prog, p.returncode, p.stderr[-2000:]))
        if "py_double_init: off" in report(args, log):
            print("%s: PyObject_Init not interposed here" % version)
            continue
        doc = json.loads(report(args, log, "--json"))
        places = [(x["type"], x["count"]) for x in doc["double_inits"]]
        print("%s: %s" % (version, places))
        if places != [("double_init.Thing", 30)]:
            fail("Python %s, one line in a loop: places %s" % (version, places))


# The child of a fork made with the collector off (start-up runs
# collections before a program can turn it off): its log has allocations
# and no collection.
NO_GC_FREES_PROGRAM = """
import gc, os
gc.disable()
pid = os.fork()
if pid == 0:
    keep = [[i] for i in range(1000)]
    os._exit(0)
os.waitpid(pid, 0)
print(pid)
"""


def gc_objects_none(args, work):
    """Every allocation recorded (TRACE_PY_ALLOCS=1) and no collection that
    freed one: the report says none were freed, not that frees were not
    recorded (which would send the user to turn on what is on), and its
    JSON says they were recorded.  With a sample (=7) they are not."""
    prog = os.path.join(work, "no_gc_frees.py")
    with open(prog, "w") as f:
        f.write(NO_GC_FREES_PROGRAM)
    for setting, recorded in (("1", True), ("7", False)):
        for old in glob.glob(os.path.join(work, "nofrees-%s-*.tlog" % setting)):
            os.remove(old)   # the recorder never overwrites a log
        env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_QUIET="1", TRACE_PY_ALLOCS=setting,
                   TRACE_OUTPUT=os.path.join(work, "nofrees-%s-%%p.tlog" % setting))
        p = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True, timeout=300)
        log = os.path.join(work, "nofrees-%s-%s.tlog" % (setting, p.stdout.strip()))
        if p.returncode != 0 or not os.path.exists(log):
            fail("no_gc_frees.py: exit %d, no log %s: %s" % (p.returncode, log, p.stderr[-1000:]))
        text = report(args, log)
        start = text.index("Objects collected by the GC")
        section = text[start:text.index("\n\n", start)]
        print(section)
        want = ("none: no collection freed an object" if recorded else
                "none recorded (frees inside collections are recorded with TRACE_PY_ALLOCS=1)")
        if want not in section:
            fail("TRACE_PY_ALLOCS=%s without frees in collections: the report does not say %r"
                 % (setting, want))
        oc = json.loads(report(args, log, "--json"))["gc"]["objects_collected"]
        if not oc or oc["recorded"] is not recorded or oc["count"] != 0:
            fail("TRACE_PY_ALLOCS=%s: JSON objects_collected %r" % (setting, oc))


def finalizer_temps(args, work):
    """A finalizer's temporaries, allocated and freed while the collection
    runs, are not what the collection freed: only the buffer the cycle held
    is charged to it (the findings said 28 MiB, the finalizer's 16 MiB
    line first), and with every allocation recorded the finalizer's 1000
    objects are not among the objects collected."""
    prog = os.path.join(HERE, "workloads", "finalizer_temps.py")
    where = {tag: "finalizer_temps.py:%d" % line_of(prog, tag)
             for tag in ("temp_buffer", "temp_objects", "holder", "cycle_buffer")}
    for setting in ("0", "1"):
        log = os.path.join(work, "finalizer-%s.tlog" % setting)
        trace(args, prog, [], log, {"TRACE_PY_ALLOCS": setting})
        text = report(args, log)
        print(text)
        if "freed only by garbage collections: host buffers 12.0 MiB" not in findings(text):
            fail("TRACE_PY_ALLOCS=%s: the findings do not say 12.0 MiB freed only by collections:\n%s"
                 % (setting, findings(text)))
        doc = json.loads(report(args, log, "--json"))
        sites = {s["id"]: s for s in doc["sites"]}
        charged = [os.path.basename((sites[i]["python"] or "").split(" ")[0]) for i in doc["gc_sites"]]
        if charged != [where["cycle_buffer"]]:
            fail("TRACE_PY_ALLOCS=%s: sites charged with bytes collections freed: %s, expected %s alone"
                 % (setting, charged, where["cycle_buffer"]))
        if setting == "1":
            objects = {os.path.basename((sites[i]["python"] or "").split(" ")[0]): sites[i]["gc_object_count"]
                       for i in doc["gc_object_sites"]}
            if where["temp_objects"] in objects or where["holder"] not in objects:
                fail("objects collected by site: %s; expected %s and not %s"
                     % (objects, where["holder"], where["temp_objects"]))
        if doc["gc"]["open_at_end"] != [] or "the log ends inside a collection" in text:
            fail("a log that ends after its collections: open_at_end %s" % doc["gc"]["open_at_end"])
    # The finalizer aborts the process: the report says it ended inside the
    # collection (it said only how many collections ended).
    log = os.path.join(work, "finalizer-abort.tlog")
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, LD_PRELOAD=args.preload, TRACE_OUTPUT=log, TRACE_QUIET="1")
    p = subprocess.run([sys.executable, prog, "abort"], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != -signal.SIGABRT or not os.path.exists(log):
        fail("finalizer_temps.py abort: exit %d, log %s" % (p.returncode, os.path.exists(log)))
    text = report(args, log)
    open_at_end = json.loads(report(args, log, "--json"))["gc"]["open_at_end"]
    if (not re.search(r"the log ends inside a collection: generation 2 on thread \d+, from event \d+", findings(text))
            or [c["generation"] for c in open_at_end] != [2]):
        fail("a process that died in a collection: open_at_end %s, findings:\n%s" % (open_at_end, findings(text)))


def progress(args, work):
    """A long read shows a progress line when stderr is a terminal, and
    nothing when it is a pipe (CI logs, files)."""
    import pty
    log = os.path.join(work, "big.tlog")
    # Long enough that check --model none takes well over the 250 ms before
    # the first line (replay/progress.c) on a fast, quiet machine: 5,000,000
    # events took 0.28 to 0.48 s here, and the line sometimes never came.
    subprocess.run([args.gen, log, "20000000"], check=True, capture_output=True, timeout=300)
    for cmd in (["report", log], ["check", log, "--model", "none"]):
        master, slave = pty.openpty()
        env = dict(os.environ)
        env.pop("TRACE_NO_PROGRESS", None)
        p = subprocess.Popen([args.replay] + cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        p.stdout.read()
        p.wait()
        os.close(master)
        if not re.search(rb"\rtrace-replay " + cmd[0].encode() + rb": [\d.]+M events, \d+ s", shown) or \
                not shown.endswith(b"\r\x1b[K"):
            fail("%s: no progress line on a terminal (or not erased): %r" % (cmd[0], shown[-200:]))
        piped = subprocess.run([args.replay] + cmd, capture_output=True, env=env, timeout=300)
        if piped.stderr:
            fail("%s: progress written to a pipe: %r" % (cmd[0], piped.stderr[:200]))


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def html(args, work):
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium (Debian package 'chromium')")
        sys.exit(SKIP)
    prog = os.path.join(ROOT, "tests", "python", "workloads", "ctypes_cast.py")
    log, page = os.path.join(work, "cast.tlog"), os.path.join(work, "report.html")
    trace(args, prog, ["cast"], log)
    report(args, log, "--html", page)
    with open(page) as f:
        source = f.read()
    if re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:)?//""", source):
        fail("the page loads something from the network")
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--allow-file-access-from-files",
           "--user-data-dir=" + os.path.join(work, "profile"), "--virtual-time-budget=5000", "--dump-dom",
           "file://" + page]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = p.stdout
    m = re.search(r'id="status" data-status="(\w+)">([^<]*)', dom)
    if not m:
        fail("no status element in the rendered page (chromium exit %d): %s" % (p.returncode, p.stderr[-2000:]))
    if m.group(1) != "rendered":
        fail("page status %s: %s" % (m.group(1), m.group(2)))
    chart = dom[dom.index('id="memory-chart"'):]
    chart = chart[:chart.index("</svg>")]
    if chart.count('class="series"') < 1 or chart.count('class="gc-mark"') < 1:
        fail("the memory chart has no series or no collection marks")
    if "ctypes_cast.py:%d" % line_of(prog, "alloc") not in dom:
        fail("the page's tables do not name the bytearray line")
    # Text from the log is data, never markup: a command line or a function
    # name that looks like HTML neither breaks the page nor runs.
    nasty = "</script><!--<script>document.title='owned'</script>"
    hostile_log, hostile_page = os.path.join(work, "hostile.tlog"), os.path.join(work, "hostile.html")
    import_lines(args, "\n".join(json.dumps(x) for x in [
        {"kind": "header", "cmdline": nasty, "mono_start_ns": 1},
        {"kind": "pool", "pool": 1, "name": nasty},
        {"kind": "pool_alloc", "t_ns": 10, "pool": 1, "ptr": 4096, "requested": 64, "granted": 64,
         "py_stack": [{"file": nasty, "line": 1, "function": nasty}]},
        {"kind": "end", "t_ns": 20}]) + "\n", hostile_log)
    report(args, hostile_log, "--html", hostile_page)
    dom = subprocess.run(cmd[:-1] + ["file://" + hostile_page], capture_output=True, text=True, timeout=120).stdout
    if 'data-status="rendered"' not in dom or "owned" in dom.split("<title>")[1].split("</title>")[0]:
        fail("a log with markup in its strings broke the page")
    if "&lt;/script&gt;&lt;!--&lt;script&gt;" not in dom:
        fail("the hostile strings are not shown as text")
    # A stack the recorder cut, with a recursion in it: the cut is named as
    # such and the repeated frame shown three times, then counted.
    deep_log, deep_page = os.path.join(work, "deep.tlog"), os.path.join(work, "deep.html")
    frames = ([{"file": "/app/deep.py", "line": 3, "function": "leaf"}] +
              [{"file": "/app/deep.py", "line": 7, "function": "walk"}] * 8 +
              [{"file": "", "line": 0, "function": "<outer frames not recorded>"}])
    import_lines(args, "\n".join(json.dumps(x) for x in [
        {"kind": "header", "mono_start_ns": 1},
        {"kind": "py_double_init", "t_ns": 10, "obj": 4096, "type_name": "app.Thing", "py_stack": frames},
        {"kind": "end", "t_ns": 20}]) + "\n", deep_log)
    report(args, deep_log, "--html", deep_page)
    dom = subprocess.run(cmd[:-1] + ["file://" + deep_page], capture_output=True, text=True, timeout=120).stdout
    if 'data-status="rendered"' not in dom or "... outer frames not recorded" not in dom or \
            "[the frame above repeated 5 more times]" not in dom or "&lt;outer frames" in dom:
        fail("the page does not show a cut stack's end and its recursion as such")
    shot = os.path.join(work, "report.png")
    subprocess.run(cmd[:-2] + ["--screenshot=" + shot, "--window-size=1280,2000", "file://" + page],
                   capture_output=True, timeout=120)
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        fail("no screenshot")
    print("rendered; screenshot at " + shot)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["finalizer_temps", "seed002", "device_cycles", "cuda_cycles", "pool_reentry", "double_init", "bundle", "import_roundtrip",
                                      "torch_snapshot", "progress", "html", "trace_run", "perfetto",
                                      "gc_objects_none"])
    p.add_argument("--preload", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--gen", help="replay-bench-gen (synthetic logs)")
    p.add_argument("--workdir")
    p.add_argument("--cuda-doubles", help="folder of the CUDA test doubles (libcudart.so.13)")
    args = p.parse_args()
    args.replay = os.path.abspath(args.replay)
    work = args.workdir or tempfile.mkdtemp(prefix="report-")
    os.makedirs(work, exist_ok=True)
    {"finalizer_temps": finalizer_temps, "seed002": seed002, "device_cycles": device_cycles, "html": html, "trace_run": trace_run, "perfetto": perfetto, "double_init": double_init, "pool_reentry": pool_reentry, "bundle": bundle, "cuda_cycles": cuda_cycles,
     "import_roundtrip": import_roundtrip, "torch_snapshot": torch_snapshot,
     "progress": progress, "gc_objects_none": gc_objects_none}[args.case](args, work)
    print("ok")


if __name__ == "__main__":
    main()
