#!/bin/sh
# dump_export_bench.sh - what reading a log with deep stacks costs: trace-dump
# (text and --json) and trace-replay export --perfetto, against the reader
# alone (trace-dump --summary), one core.
#
#   bench/dump_export_bench.sh [BUILD_DIR] [SCALE]
#   LOG=path bench/dump_export_bench.sh      # time that log instead
#   BASE=DIR bench/dump_export_bench.sh      # also DIR/bin's programs (an older build)
#
# The log is bench/deep_stacks.py traced with TRACE_PY_ALLOCS=1 under
# BUILD_DIR/lib/libtrace.so (default stack depth, 32 native frames): SCALE 3.2
# (the default) gives about 800,000 events, most with a 32-frame native stack
# and a Python stack as deep.  Every symbol of it resolves (libpython, libc)
# from the modules on this machine.  Prints the log's shape, then per command
# the CPU seconds (user + system of the child, best of 3, pinned to core 0
# with taskset when there is one), the output's size and its bytes per event.
# BASE's programs run on a log of SCALE_BASE (default 0.01, about 15,000
# events) only, with one run: before stacks were cached they needed about a
# millisecond an event; their seconds per 100k events are printed beside.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
scale=${2:-3.2}
py=${PYTHON:-python3}
tmp=${TMPDIR:-/tmp}/dump_export_bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"

trace() {  # out scale
    TRACE_QUIET=1 TRACE_PY_ALLOCS=1 TRACE_OUTPUT="$1" LD_PRELOAD="$(cd "$build" && pwd)/lib/libtrace.so" \
        "$py" "$here/deep_stacks.py" "$2" >/dev/null
}

log=${LOG:-}
if [ -z "$log" ]; then
    log=$tmp/deep.tlog
    trace "$log" "$scale"
fi

# The log's shape, and CPU seconds of each command: best of RUNS runs.
python3 - "$build" "$log" "${BASE:-}" "$tmp" "${SCALE_BASE:-0.01}" "$pin" "$py" "$here" <<'PY'
import json, os, resource, subprocess, sys
build, log, base, tmp, scale_base, pin, py, here = sys.argv[1:]
pin = pin.split()

def cpu(argv, out=None, runs=3):
    best = None
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(out or os.devnull, "wb") as f:
            p = subprocess.run(pin + argv, stdout=f, stderr=subprocess.DEVNULL)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode not in (0, 1, 3):
            sys.exit("%s: exit %d" % (" ".join(argv), p.returncode))
        t = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        best = t if best is None or t < best else best
    return best

def shape(dump, log):
    n = deep = 0
    stacks, frames = set(), set()
    p = subprocess.Popen([dump, "--json", log], stdout=subprocess.PIPE)
    for line in p.stdout:
        d = json.loads(line)
        if "seq" not in d:
            continue
        n += 1
        st = tuple(f["ip"] for f in d.get("native_stack") or ())
        deep += len(st) == 32
        stacks.add(st)
        frames.update(st)
    p.wait()
    return n, deep, len(stacks), len(frames)

def measure(bindir, log, runs, label):
    dump, replay = os.path.join(bindir, "trace-dump"), os.path.join(bindir, "trace-replay")
    n = shape(os.path.join(build, "bin", "trace-dump"), log)[0]
    print("%s: %s" % (label, bindir))
    rows = [("trace-dump --summary (the reader)", [dump, "--summary", log], None),
            ("trace-dump (text)", [dump, log], os.path.join(tmp, "dump.txt")),
            ("trace-dump --json", [dump, "--json", log], os.path.join(tmp, "dump.jsonl")),
            ("export --perfetto", [replay, "export", "--perfetto", os.path.join(tmp, "out.trace"), log], None)]
    for name, argv, out in rows:
        s = cpu(argv, out, runs)
        path = out or (argv[3] if name.startswith("export") else None)
        size = os.path.getsize(path) if path else 0
        print("  %-36s %8.2f s  %7.2f s per 100k events%s" % (
            name, s, s / n * 1e5,
            "  %11d bytes  %6.1f bytes/event" % (size, size / n) if size else ""))

n, deep, stacks, frames = shape(os.path.join(build, "bin", "trace-dump"), log)
print("log: %d events, %d bytes; %d events with a 32-frame native stack; %d distinct native stacks "
      "over %d distinct frames" % (n, os.path.getsize(log), deep, stacks, frames))
measure(os.path.join(build, "bin"), log, 3, "this build")
if base:
    small = os.path.join(tmp, "small.tlog")
    env = dict(os.environ, TRACE_QUIET="1", TRACE_PY_ALLOCS="1", TRACE_OUTPUT=small,
               LD_PRELOAD=os.path.abspath(os.path.join(build, "lib", "libtrace.so")))
    subprocess.run([py, os.path.join(here, "deep_stacks.py"), scale_base], env=env, stdout=subprocess.DEVNULL,
                   check=True)
    print("small log: %d events" % shape(os.path.join(build, "bin", "trace-dump"), small)[0])
    measure(os.path.join(build, "bin"), small, 1, "this build, small log")
    measure(os.path.join(base, "bin"), small, 1, "BASE, small log")
PY
