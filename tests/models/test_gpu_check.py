#!/usr/bin/env python3
"""scripts/gpu-check's replay side, without a GPU: the code that, on a GPU
machine, replays the real CuPy log and PyTorch's memory history through
their models and reports fidelity (matched/diverged) as table rows, run here
on logs of the same shape (imported JSON, a snapshot pickle).

  * a CuPy 14.2 log the model follows: "check finds no violation (model
    cupy-next)" and "fidelity: the model followed the real pool" pass
  * the same log with one address the model would not choose: the fidelity
    row fails and names the first divergence
  * a PyTorch snapshot with expandable segments, through
    torch-snapshot-import: both rows pass, and no note says the model does
    not follow expandable segments
  * --no-build with a directory that lacks the tools fails and names them;
    --prepare's check of what it left; without a GPU the script says so and
    exits 77

    test_gpu_check.py --replay TRACE_REPLAY
"""
import argparse
import atexit
import importlib.machinery
import importlib.util
import io
import os
import pickle
import shutil
import contextlib
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from test_models_cli import ALLOC, Log, MiB  # noqa: E402

fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)
    return cond


def load_gpu_check():
    path = os.path.join(REPO, "scripts", "gpu-check")
    loader = importlib.machinery.SourceFileLoader("gpu_check", path)
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def rows(table, prefix):
    return {r[0]: r for r in table.rows if r[0].startswith(prefix)}


def cupy_log(path, second):
    """CuPy 14.2 (cupy-next): a 2048-byte segment, freed, then two
    512-byte blocks split from it; the real pool put the second one at
    `second`."""
    log = Log((1, "cupy"))
    log.info("cupy_version", "14.2.0")
    log.alloc(1, 2048, 0x100000, segments=[(0x100000, 2048)])
    log.free(1, 0x100000)
    log.alloc(1, 512, 0x100000)
    with log.op(1, ALLOC, 512):
        log.ev("pool_alloc", pool=1, ptr=second, requested=512, granted=512, stream=0)
    log.end()
    src = path + ".jsonl"
    log.write(src)
    return src


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay", required=True)
    args = ap.parse_args()
    gc = load_gpu_check()
    tmp = tempfile.mkdtemp(prefix="test-gpu-check-")
    atexit.register(shutil.rmtree, tmp, True)
    # A --no-build directory as --prepare leaves it (empty libtrace.so and
    # tlog_events stand in: these checks run neither).
    build = os.path.join(tmp, "build")
    os.makedirs(os.path.join(build, "bin"))
    os.makedirs(os.path.join(build, "lib"))
    os.symlink(os.path.abspath(args.replay), os.path.join(build, "bin", "trace-replay"))
    open(os.path.join(build, "lib", "libtrace.so"), "w").close()
    check(gc.tools_missing(build) == [os.path.join(build, "bin", "tlog_events")],
          "tools_missing names what --no-build lacks: %s" % gc.tools_missing(build))
    open(os.path.join(build, "bin", "tlog_events"), "w").close()
    check(gc.tools_missing(build) == [], "tools_missing: nothing missing: %s" % gc.tools_missing(build))
    replay = os.path.join(build, "bin", "trace-replay")

    quiet = io.StringIO()
    for second, follows in ((0x100200, True), (0x100400, False)):
        src = cupy_log(os.path.join(tmp, "cupy%d" % follows), second)
        log = src[:-6] + ".tlog"
        subprocess.run([args.replay, "import", "-o", log, src], check=True, capture_output=True)
        table = gc.Table()
        with contextlib.redirect_stdout(quiet):
            doc, err = gc.replay_check(replay, log, "auto")
            gc.fidelity_rows(table, "cupy: replay", doc, err)
        r = rows(table, "cupy: replay")
        verdict = [v for k, v in r.items() if "no violation" in k]
        fid = [v for k, v in r.items() if "fidelity" in k]
        check(len(verdict) == 1 and "cupy-next" in verdict[0][0] and verdict[0][3] == "PASS",
              "cupy log (%s): the verdict row names the model and passes: %s" % (follows, verdict))
        if follows:
            check(len(fid) == 1 and fid[0][2] == "4 matched, 0 diverged" and fid[0][3] == "PASS",
                  "cupy log the model follows: the fidelity row passes: %s" % fid)
        else:
            check(len(fid) == 1 and fid[0][3] == "FAIL" and "1 diverged" in fid[0][2] and "first at seq" in fid[0][2],
                  "cupy log with an address the model would not choose: the fidelity row fails: %s" % fid)

    # PyTorch with expandable segments: the allocator's history as
    # _dump_snapshot writes it.
    A = 0x7f0000000000

    def entry(action, addr, size, time):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": [], "time_us": time}
    trace = [entry("segment_map", A, 20 * MiB, 1), entry("alloc", A, 5 * MiB, 2),
             entry("alloc", A + 5 * MiB, 5 * MiB, 3), entry("free_requested", A, 5 * MiB, 4),
             entry("free_completed", A, 5 * MiB, 5), entry("free_requested", A + 5 * MiB, 5 * MiB, 6),
             entry("free_completed", A + 5 * MiB, 5 * MiB, 7), entry("segment_unmap", A, 20 * MiB, 8)]
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": True,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    snapshot = os.path.join(tmp, "torch-expandable-snapshot.pickle")
    with open(snapshot, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [trace], "allocator_settings": settings}, f)
    ns = argparse.Namespace(build=build)
    table = gc.Table()
    with contextlib.redirect_stdout(quiet):
        doc = gc.snapshot_fidelity(ns, table, "torch (expandable segments)", snapshot, tmp)
    r = rows(table, "torch (expandable segments) snapshot")
    check(len(r) == 2 and all(v[3] == "PASS" for v in r.values()),
          "torch snapshot with expandable segments: verdict and fidelity rows pass: %s" % list(r.values()))
    check(doc is not None and not [n for n in doc.get("notes", []) if "expandable" in n],
          "torch snapshot: no note that expandable segments are not followed: %s" % (doc or {}).get("notes"))
    table = gc.Table()
    with contextlib.redirect_stdout(quiet):
        gc.snapshot_fidelity(ns, table, "torch", os.path.join(tmp, "absent.pickle"), tmp)
    check(len(table.rows) == 1 and table.rows[0][3] == "FAIL", "a missing snapshot is a failed row: %s" % table.rows)

    # The script itself: a --no-build directory without the tools, and no GPU.
    script = os.path.join(REPO, "scripts", "gpu-check")
    if not gc.have_gpu():
        p = subprocess.run([sys.executable, script, "--no-build", "--build", build], capture_output=True, text=True)
        check(p.returncode == 77 and "no NVIDIA GPU" in p.stdout, "no GPU: skipped, exit 77 (%d): %s"
              % (p.returncode, p.stdout))
    if fails:
        print("%d check(s) failed" % len(fails))
        return 1
    print("all gpu-check replay checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
