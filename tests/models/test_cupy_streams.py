#!/usr/bin/env python3
"""The CuPy stream of every pool request (preload/python_cupy.c), against the
fake cupy package of tests/python (its pool keeps an arena per stream, its
segments come from the CUDA runtime double):

1. Two streams: each pool_alloc carries the stream that was current, the
   log has CuPy's version, and trace-replay's cupy model follows every
   choice (no divergence: a model that merged the arenas would hand stream
   2 the chunk stream 1 freed).
2. The per-thread default stream (CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1):
   one arena per thread, recorded as minus the thread id.

    test_cupy_streams.py --preload LIB --pylog PYLOG --replay TRACE_REPLAY
                         --stream-lib LIB --doubles DIR [--python PY ...]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import pytrace as pt  # noqa: E402

FAKE = os.path.join(HERE, "..", "python", "fake_cupy")
WORKLOAD = os.path.join(HERE, "workloads", "cupy_streams.py")


def extra(p):
    p.add_argument("--replay", required=True)
    p.add_argument("--stream-lib", required=True)
    p.add_argument("--doubles", required=True)


args = pt.parse_args(extra)
fails = pt.Failures()
cudart = os.path.join(args.doubles, "libcudart.so.13")
if not os.path.exists(cudart):
    print("SKIP: no CUDA runtime double in %s" % args.doubles)
    sys.exit(pt.SKIP)


def traced(python, tmp, extra_env, name):
    """(process, events, infos, log path) of the workload under the tracer."""
    log = os.path.join(tmp, name + ".tlog")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env.update({"LD_PRELOAD": args.preload, "TRACE_OUTPUT": log, "PYTHONPATH": FAKE,
                "FAKE_CUPY_STREAM_LIB": args.stream_lib, "FAKE_CUPY_CUDART": cudart,
                "LD_LIBRARY_PATH": args.doubles})
    env.update(extra_env)
    proc = subprocess.run([python, WORKLOAD], env=env, capture_output=True, text=True, timeout=120)
    events, infos, _ = pt.read_log(args.pylog, log) if os.path.exists(log) else ([], [], {})
    return proc, events, infos, log


def replay(log):
    p = subprocess.run([args.replay, "check", log, "--model", "cupy", "--json"], capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {}


def check(python, version):
    tag = "%s (%s)" % (version, python)
    with tempfile.TemporaryDirectory() as tmp:
        proc, events, infos, log = traced(python, tmp, {}, "streams")
        if not fails.check(proc.returncode == 0 and proc.stdout.startswith("streams"),
                           "%s: workload failed: %s %s" % (tag, proc.stdout, proc.stderr[-800:])):
            return
        s1, s2 = (int(x) for x in proc.stdout.split()[1:3])
        streams = [e["stream"] for e in events if e["kind"] == "pool_alloc"]
        fails.check(streams == [s1, s2, s1, s2], "%s: pool_alloc streams %s, expected %s" %
                    (tag, streams, [s1, s2, s1, s2]))
        fails.check(["13.6.0"] == [v for k, v in infos if k == "cupy_version"],
                    "%s: cupy_version INFO: %s" % (tag, infos))
        rc, d = replay(log)
        fid = d.get("fidelity", {})
        fails.check(rc == 0 and d.get("violation") is None, "%s: check --model cupy: exit %d" % (tag, rc))
        fails.check(fid.get("diverged") == 0 and fid.get("matched") == 6,
                    "%s: the model follows both arenas (2 segments, 4 chunks): %s" % (tag, fid))

        proc, events, infos, log = traced(python, tmp, {"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}, "per-thread")
        if not fails.check(proc.returncode == 0, "%s: per-thread workload failed: %s" % (tag, proc.stderr[-800:])):
            return
        allocs = [e for e in events if e["kind"] == "pool_alloc"]
        fails.check(len(allocs) == 4 and all(e["stream"] == (1 << 64) - e["tid"] for e in allocs),
                    "%s: per-thread default stream recorded as minus the thread id: %s" %
                    (tag, [(e["tid"], e["stream"]) for e in allocs]))
        fails.check(len({e["tid"] for e in allocs}) == 2, "%s: two threads allocated" % tag)
        fails.check(["1"] == [v for k, v in infos if k == "env:CUPY_CUDA_PER_THREAD_DEFAULT_STREAM"],
                    "%s: the setting is in the log: %s" % (tag, infos))
        rc, d = replay(log)
        fid = d.get("fidelity", {})
        fails.check(rc == 0 and fid.get("diverged") == 0 and fid.get("matched") == 6,
                    "%s: one arena per thread (2 segments, 4 chunks): exit %d %s" % (tag, rc, fid))


pt.for_each_interpreter(args.python, check, fails)
