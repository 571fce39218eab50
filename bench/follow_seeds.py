#!/usr/bin/env python3
"""bench/follow_seeds.py - issue 16.5's figure, as a user runs it: seed 000's
workload (tests/fixtures/cupy5_pool, unpaced, no waiting anywhere) under

    scripts/trace-run --check cupy5 --on-violation=stop -- python workload.py --seed S

for seeds 0 to N-1.  For each seed: trace-run's exit status (147: the
process was left stopped), the violation the follower printed, how long
after the violating event it was found (the follower's own figure), how
many events the process recorded after the violating one before the stop
(the process is left stopped for PAUSE seconds before it is let go with
SIGCONT: in the log, the events after the violating one up to that gap in
their times), and whether the AssertionError had fired by then (a process stopped
while alive is let go with SIGCONT: "FAILED" after that means the assertion
came after the stop).

    follow_seeds.py [--build DIR] [--python PY] [--seeds N] [--iterations N]

Prints a markdown section for bench/RESULTS.md.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "cupy5_pool")
PAUSE = 0.5


def state_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def wait_gone(pid, bound=600):
    """The stopped process is not our child (trace-run's, reparented)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline and state_of(pid) not in (None, "Z", "X"):
        time.sleep(0.02)
    return state_of(pid) in (None, "Z", "X")


def events(build, log):
    p = subprocess.run([os.path.join(build, "tests", "bin", "tlog_events"), log], capture_output=True, text=True)
    return [x for x in (json.loads(line) for line in p.stdout.splitlines()) if x.get("type") == "event"]


def one(args, work, seed):
    log_pattern = os.path.join(work, "s%d-%%p.tlog" % seed)
    out_path, err_path = os.path.join(work, "s%d.out" % seed), os.path.join(work, "s%d.err" % seed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env.pop("LD_PRELOAD", None)
    env.update(TRACE_LIB=os.path.join(args.build, "lib", "libtrace.so"),
               TRACE_REPLAY=os.path.join(args.build, "bin", "trace-replay"), PYTHONHASHSEED="0",
               LD_LIBRARY_PATH=os.path.join(args.build, "tests", "cuda", "doubles"))
    cmd = [os.path.join(ROOT, "scripts", "trace-run"), "--check", "cupy5", "--on-violation=stop", "--quiet",
           "--output", log_pattern, "--", args.python, os.path.join(FIXTURE, "workload.py"),
           "--module-dir", args.module_dir, "--seed", str(seed), "--iterations", str(args.iterations)]
    # Files, not pipes: a stopped process holds what it inherited open.
    with open(out_path, "w") as out, open(err_path, "w") as err:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=err).returncode
    said = open(err_path).read()
    logs = glob.glob(log_pattern.replace("%p", "*"))
    pid = int(re.search(r"-(\d+)\.tlog$", logs[0]).group(1)) if logs else 0
    if rc == 147 and pid:
        time.sleep(PAUSE)   # the stop shows in the log as a gap this long
        os.kill(pid, signal.SIGCONT)
        wait_gone(pid)
    printed = open(out_path).read()
    found = re.search(r"VIOLATION (\w+) at seq (\d+)", said)
    late = re.search(r"found ([\d.]+) ms after the event", said)
    row = {"seed": seed, "rc": rc, "stopped": rc == 147, "failed": "FAILED" in printed,
           "violation": found.group(1) if found else None, "seq": int(found.group(2)) if found else None,
           "ms": float(late.group(1)) if late else None, "after": None}
    if found and late and logs:
        lines = sorted(events(args.build, logs[0]), key=lambda x: x["seq"])
        later = [x for x in lines if x["seq"] > row["seq"]]
        if rc == 147:
            gap = next((i for i in range(1, len(later)) if later[i]["t"] - later[i - 1]["t"] > PAUSE * 0.6e9), None)
            row["after"] = gap if gap is not None else (len(later) if later else 0)
        row["events"] = len(lines)
    for path in glob.glob(os.path.join(work, "s%d*" % seed)):
        os.unlink(path)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", default="/root/.pyenv/versions/3.11.7/bin/python3")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--iterations", type=int, default=200000)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="follow_seeds.")
    args.module_dir = os.path.join(work, "cupy5_pool")
    subprocess.run([os.path.join(FIXTURE, "build.sh"), args.python, args.module_dir], check=True,
                   capture_output=True)
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    rows = []
    for seed in range(args.seeds):
        r = one(args, work, seed)
        rows.append(r)
        print("seed %d: %s" % (seed, r), file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    end = " ".join(open("/proc/loadavg").read().split()[:3])
    broke = [r for r in rows if r["violation"]]
    before = [r for r in broke if r["stopped"] and r["failed"]]
    no_assert = [r for r in broke if r["stopped"] and not r["failed"]]
    first = [r for r in broke if not r["stopped"]]
    clean_failed = [r for r in rows if not r["violation"] and r["failed"]]
    ms = [r["ms"] for r in broke if r["ms"] is not None]
    after = [r["after"] for r in broke if r["after"] is not None]
    print("`bench/follow_seeds.py --seeds %d --iterations %d`: seed 000's workload, unpaced, under "
          "`scripts/trace-run --check cupy5 --on-violation=stop` (TRACE_FLUSH_MS=10, as trace-run --check sets "
          "it). Load average %s at the start, %s at the end (2 shared cores)." % (args.seeds, args.iterations, load,
                                                                                  end))
    print()
    print("Of %d seeds, %d broke the pool (a violation found). Stopped before the AssertionError (the process "
          "left stopped, exit 147, and the assertion fired once it was let go): %d. Stopped, and no assertion "
          "followed by the end of the run: %d. Not stopped in time (the AssertionError came first): %d. "
          "AssertionError with no violation found: %d. Found a median %.1f ms (max %.1f) after the violating "
          "event; events recorded after it before the stop: median %s, max %s."
          % (len(rows), len(broke), len(before), len(no_assert), len(first), len(clean_failed),
             statistics.median(ms) if ms else float("nan"), max(ms) if ms else float("nan"),
             statistics.median(after) if after else "-", max(after) if after else "-"))
    print()
    print("| seed | trace-run exit | violation (seq) | found after, ms | events after it before the stop | "
          "AssertionError |")
    print("|---:|---:|---|---:|---:|---|")
    for r in rows:
        print("| %d | %d | %s | %s | %s | %s |"
              % (r["seed"], r["rc"], "%s (%d)" % (r["violation"], r["seq"]) if r["violation"] else "none",
                 "%.1f" % r["ms"] if r["ms"] is not None else "-",
                 r["after"] if r["after"] is not None else "-",
                 ("after the stop" if r["stopped"] else "before the violation was found") if r["failed"]
                 else "none"))


if __name__ == "__main__":
    main()
