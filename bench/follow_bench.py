#!/usr/bin/env python3
"""bench/follow_bench.py - check --follow's figures: throughput, detection
latency, seed 000 stopped before its AssertionError, disk used against
TRACE_MAX_BYTES.  Prints a markdown section (scripts/bench --only follow puts
it into bench/RESULTS.md).

    follow_bench.py --build DIR [--python PY] [--seeds N] [--quick]

1. Throughput.  Seed 000's workload (tests/fixtures/cupy5_pool, with the GC
   guard so every run has the same length) traced, alone and with a
   follower beside it (trace-replay check --follow --model cupy5): the
   app's event rate, the follower's CPU per event, and how long after the
   app's end the follower was done (its lag).  Also check on the finished
   log, for comparison.
2. Seed 000 caught while it runs: the unpaced workload, seed after seed,
   under the follower with --on-violation=stop (TRACE_FLUSH_MS=10, as
   trace-run --check sets it) until N runs whose pool broke; for each, how
   long after the event it was found at the violation was found (both on
   CLOCK_MONOTONIC), how many events the process recorded after the
   violating one before it stopped, and whether the AssertionError had
   fired by then.  The process is let go afterwards (SIGCONT) and runs to
   its end, so the log shows where the assertion came.
3. A double free made through the CUDA test doubles (tests/follow's
   prog_churn, unpaced, 10 ms and 100 ms flushes): the same latency.
4. Disk used against the budget: runs with TRACE_MAX_BYTES, the files'
   total sampled every 20 ms (its peak) and at the end, against the budget
   and the log the same run writes without one.
"""
import argparse
import glob
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "cupy5_pool")
ARGS = None


def tool(name):
    for sub in ("bin", "tests/bin"):
        path = os.path.join(ARGS.build, sub, name)
        if os.path.exists(path):
            return path
    sys.exit("follow_bench: %s not built in %s" % (name, ARGS.build))


def preload():
    return os.path.join(ARGS.build, "lib", "libtrace.so")


def env_for(log, **settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env.update(LD_PRELOAD=preload(), TRACE_OUTPUT=log, TRACE_QUIET="1", PYTHONHASHSEED="0",
               LD_LIBRARY_PATH=os.path.join(ARGS.build, "tests", "cuda", "doubles"))
    env.update({k: str(v) for k, v in settings.items()})
    return env


def workload(seed, iterations, guard=False):
    cmd = [ARGS.python, os.path.join(FIXTURE, "workload.py"), "--module-dir", ARGS.module_dir,
           "--seed", str(seed), "--iterations", str(iterations)]
    return cmd + (["--gc-guard"] if guard else [])


def follower(log, pid, *extra):
    return subprocess.Popen([tool("trace-replay"), "check", "--follow", log, "--pid", str(pid), "--json"] +
                            list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def dump(log):
    """The log's events, decoded without symbolising (tests/cuda's
    tlog_events: seq, kind, t, parent and the kind's fields)."""
    p = subprocess.run([tool("tlog_events"), log], capture_output=True, text=True)
    return [x for x in (json.loads(line) for line in p.stdout.splitlines()) if x.get("type") == "event"]


def events_in(log):
    p = subprocess.run([tool("trace-dump"), "--summary", log], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("events"):
            return int(line.split()[1])
    return 0


def cpu_of(usage):
    return usage.ru_utime + usage.ru_stime


def state_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def median(values):
    return statistics.median(values) if values else float("nan")


# ------------------------------------------------------------ throughput

def throughput(work):
    iterations = 50000 if ARGS.quick else 200000
    rows = []
    for flush in (100, 10):
        log = os.path.join(work, "alone-%d.tlog" % flush)
        t0 = time.monotonic()
        subprocess.run(workload(0, iterations, guard=True), env=env_for(log, TRACE_FLUSH_MS=flush),
                       capture_output=True, check=True)
        rows.append((flush, time.monotonic() - t0, events_in(log)))
    # With a follower beside it (10 ms flushes, as trace-run --check runs it).
    log = os.path.join(work, "followed.tlog")
    t0 = time.monotonic()
    app = subprocess.Popen(workload(0, iterations, guard=True), env=env_for(log, TRACE_FLUSH_MS=10),
                           stdout=subprocess.DEVNULL)
    f = follower(log, app.pid, "--model", "cupy5")
    _, _, app_usage = os.wait4(app.pid, 0)
    app_end = time.monotonic()
    _, _, f_usage = os.wait4(f.pid, 0)
    f_end = time.monotonic()
    doc = json.loads(f.stdout.read())
    events = doc["events"]
    # check on the finished log, for comparison.
    c0 = time.monotonic()
    subprocess.run([tool("trace-replay"), "check", "--model", "cupy5", log], capture_output=True)
    check_s = time.monotonic() - c0
    app_rate = events / (app_end - t0)
    f_cpu = cpu_of(f_usage)
    out = ["| measure | value |", "|---|---:|"]
    for flush, seconds, n in rows:
        out.append("| workload alone, TRACE_FLUSH_MS=%d: %d events in | %.2f s (%s events/s) |"
                   % (flush, n, seconds, format(int(n / seconds), ",")))
    out += [
        "| workload with a follower beside it: %d events in | %.2f s (%s events/s) |"
        % (events, app_end - t0, format(int(app_rate), ",")),
        "| follower's CPU for those events | %.2f s (%s events per CPU second) |"
        % (f_cpu, format(int(events / f_cpu) if f_cpu else 0, ",")),
        "| follower's capacity / the app's event rate | %.1f |" % ((events / f_cpu) / app_rate if f_cpu else 0),
        "| follower done after the app ended (its lag) | %.0f ms |" % ((f_end - app_end) * 1000),
        "| follower's verdict | %s, %s |" % (doc["status"], doc["follow"]["ended"]),
        "| check --model cupy5 on the finished log | %.2f s (%s events/s) |"
        % (check_s, format(int(events / check_s), ",")),
        "| app's wall time with 10 ms flushes / with 100 ms | %.2f |" % (rows[1][1] / rows[0][1]),
    ]
    return "\n".join(out)


# ------------------------------------------------------- seed 000 stopped

def raising_op(lines):
    """The allocation the AssertionError came from: the last pool_op_begin
    of an allocation that handed nothing out (no pool_alloc nested in it;
    the fixture ends its operation on the way out of an error too)."""
    served = {x.get("parent") for x in lines if x.get("kind") == "pool_alloc"}
    allocs = [x for x in lines if x.get("kind") == "pool_op_begin" and x.get("op") == 1 and x["seq"] not in served]
    return allocs[-1] if allocs else None


def seed000(work):
    wanted = 4 if ARGS.quick else ARGS.seeds
    rows, caught, found_ms, after = [], 0, [], []
    for seed in range(400):
        if len(rows) == wanted:
            break
        log = os.path.join(work, "s%d.tlog" % seed)
        app = subprocess.Popen(workload(seed, 200000), env=env_for(log, TRACE_FLUSH_MS=10),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        f = follower(log, app.pid, "--model", "cupy5", "--on-violation=stop")
        out, err = f.communicate()
        doc = json.loads(out) if out.strip() else {}
        violation = doc.get("violation")
        stopped = (doc.get("follow") or {}).get("action", "") or ""
        stopped = stopped.startswith("STOPPED")
        if stopped:
            os.kill(app.pid, signal.SIGCONT)
        printed = app.communicate()[0]
        if not violation:
            continue   # this seed's pool stayed sound
        fr = doc["follow"]
        lines = dump(log)
        at = violation["seq"]
        before_stop = [x for x in lines if x["seq"] > at and x["t"] <= fr["found_ns"]]
        raised = raising_op(lines) if "FAILED" in printed else None
        fired_before = raised is not None and raised["t"] <= fr["found_ns"]
        verdict = ("yes" if stopped and raised and not fired_before
                   else "no assertion followed" if stopped and not raised
                   else "no (the assertion came first)" if raised and fired_before
                   else "no (not stopped)")
        if verdict == "yes":
            caught += 1
        ms = (fr["found_ns"] - fr["event_ns"]) / 1e6
        found_ms.append(ms)
        after.append(len(before_stop))
        rows.append("| %d | %s at %d | %.1f | %d | %s | %s |"
                    % (seed, violation["invariant"], at, ms, len(before_stop),
                       raised["seq"] if raised else "-", verdict))
        print("  seed %d: %s" % (seed, rows[-1]), file=sys.stderr, flush=True)
        for path in glob.glob(log[:-5] + "*"):
            os.unlink(path)
    failing = sum(1 for r in rows if "yes" in r or "assertion came first" in r)
    head = ["| seed | violation found (invariant at seq) | found after, ms | events recorded after it "
            "before the stop | AssertionError's operation (seq) | stopped before the AssertionError |",
            "|---:|---|---:|---:|---:|---|"]
    summary = ("Stopped before the AssertionError in %d of the %d runs whose pool broke (%d of them went on to "
               "the assertion: the others' damage had not led to it by the end of the run); found a median "
               "%.1f ms (max %.1f ms) after the event, %d events recorded after the violating one before the "
               "stop (median; max %d)."
               % (caught, len(rows), failing, median(found_ms), max(found_ms) if found_ms else 0,
                  median(after), max(after) if after else 0))
    return summary + "\n\n" + "\n".join(head + rows)


# -------------------------------------------------- double free latency

def double_free(work):
    out = ["| flush interval | runs | found after, ms (median) | max | events after the double free before the stop "
           "(median) |", "|---:|---:|---:|---:|---:|"]
    for flush in (100, 10):
        ms, after = [], []
        for run in range(3 if ARGS.quick else 10):
            log = os.path.join(work, "df-%d-%d.tlog" % (flush, run))
            app = subprocess.Popen([tool("prog_churn"), "0", "--double-free-at", "20000"],
                                   env=env_for(log, TRACE_FLUSH_MS=flush), stdout=subprocess.DEVNULL)
            f = follower(log, app.pid, "--on-violation=stop")
            doc = json.loads(f.communicate()[0])
            fr = doc["follow"]
            os.kill(app.pid, signal.SIGTERM)
            os.kill(app.pid, signal.SIGCONT)
            app.wait()
            at = doc["violation"]["seq"]
            after.append(sum(1 for x in dump(log) if x["seq"] > at and x["t"] <= fr["found_ns"]))
            ms.append((fr["found_ns"] - fr["event_ns"]) / 1e6)
            os.unlink(log)
        out.append("| %d ms | %d | %.1f | %.1f | %d |" % (flush, len(ms), median(ms), max(ms), median(after)))
    return "\n".join(out)


# ---------------------------------------------------------- disk budget

def sample_disk(pattern, stop, peak):
    while not stop.is_set():
        total = 0
        for path in glob.glob(pattern):
            try:
                total += os.path.getsize(path)
            except OSError:
                pass
        peak[0] = max(peak[0], total)
        time.sleep(0.02)


def disk(work):
    out = ["| run | budget | log without a budget | files on disk at the peak | at the end | files kept | "
           "peak / budget |", "|---|---:|---:|---:|---:|---:|---:|"]
    iterations = 100000 if ARGS.quick else 400000
    runs = [("seed 000 workload, %d iterations (GC guard)" % iterations, workload(0, iterations, guard=True)),
            ("prog_churn, %d iterations" % (iterations * 5), [tool("prog_churn"), str(iterations * 5)])]
    for name, cmd in runs:
        free_log = os.path.join(work, "free.tlog")
        subprocess.run(cmd, env=env_for(free_log), capture_output=True, check=True)
        unbounded = os.path.getsize(free_log)
        os.unlink(free_log)
        for budget in ("1M", "4M", "16M"):
            log = os.path.join(work, "b%s.tlog" % budget)
            stop, peak = threading.Event(), [0]
            sampler = threading.Thread(target=sample_disk, args=(os.path.join(work, "b%s*.tlog" % budget), stop,
                                                                   peak))
            sampler.start()
            subprocess.run(cmd, env=env_for(log, TRACE_MAX_BYTES=budget), capture_output=True, check=True)
            stop.set()
            sampler.join()
            files = glob.glob(os.path.join(work, "b%s*.tlog" % budget))
            end = sum(os.path.getsize(p) for p in files)
            nbytes = int(budget[:-1]) << 20
            peak_bytes = max(peak[0], end)
            out.append("| %s | %s | %s | %s | %s | %d | %.2f |"
                       % (name, budget, format(unbounded, ","), format(peak_bytes, ","), format(end, ","),
                          len(files), peak_bytes / nbytes))
            for p in files:
                os.unlink(p)
    return "\n".join(out)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", default="/root/.pyenv/versions/3.11.7/bin/python3")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--quick", action="store_true")
    ARGS = p.parse_args()
    work = tempfile.mkdtemp(prefix="follow_bench.")
    ARGS.module_dir = os.path.join(work, "cupy5_pool")
    subprocess.run([os.path.join(FIXTURE, "build.sh"), ARGS.python, ARGS.module_dir], check=True,
                   capture_output=True)
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    parts = []
    for title, fn in (("Throughput: the follower beside seed 000's workload", throughput),
                      ("Seed 000 stopped at the damage (unpaced workload, --on-violation=stop)", seed000),
                      ("Detection latency: a double free through the CUDA doubles", double_free),
                      ("Disk used against TRACE_MAX_BYTES", disk)):
        print(title, file=sys.stderr, flush=True)
        parts.append("### " + title + "\n\n" + fn(work))
    shutil.rmtree(work, ignore_errors=True)
    print("Load average %s at the start of this section, %s at its end (2 shared cores: the follower and the "
          "program compete for them)." % (load, " ".join(open("/proc/loadavg").read().split()[:3])))
    print()
    print("\n\n".join(parts))


if __name__ == "__main__":
    main()
