#!/usr/bin/env python3
"""Every command of trace-replay, and trace-dump, over a fuzz corpus.

The fuzzers drive the reader, the checks, the models, explore and import;
report, stats, export and minimize are only reachable through the command
line, so this runs each of them on every input of the replay fuzzer's
checked-in corpus (the damaged, forged and minimized logs it kept). An exit
status other than the documented ones (0 clean, 1 violation, 2 usage or
unreadable log, 3 inconclusive: the model diverged too often), a sanitizer
report, or a command over its CPU-time bound fails the test. Inputs that are raw records are wrapped in a zstd frame first, as the
fuzzer does.

usage: cli_corpus.py --trace-replay R --trace-dump D --zstd Z --work DIR CORPUS...
"""
import argparse
import os
import resource
import signal
import subprocess
import sys

# "dump" and "replay" stand for the two programs.
COMMANDS = [["dump", "--json", "{log}"],
            ["replay", "check", "{log}", "--json"], ["replay", "stats", "{log}", "--json"],
            ["replay", "explore", "{log}"], ["replay", "report", "{log}"],
            ["replay", "report", "{log}", "--json"], ["replay", "report", "{log}", "--html", "{work}/out.html"],
            ["replay", "export", "{log}", "--perfetto", "{work}/out.pftrace"],
            ["replay", "minimize", "{log}", "-o", "{work}/min.tlog"]]
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def as_log(path, work, zstd):
    with open(path, "rb") as f:
        data = f.read()
    log = os.path.join(work, "in.tlog")
    if data[:4] == ZSTD_MAGIC:
        with open(log, "wb") as f:
            f.write(data)
    else:
        with open(log, "wb") as f:
            subprocess.run([zstd, "-q", "-c"], input=data, stdout=f, check=True)
    return log


# Each command is bounded by its own CPU time, not by the wall clock: this
# test is CPU-bound (about 18 s of CPU in all in a plain build, ten times that
# under ASan), and on a loaded machine a wall-clock bound measures the load.
# A command over CPU_SECONDS is a hang or a blow-up in the tool (it gets
# SIGXCPU); the wall-clock guard only catches one that sleeps.
CPU_SECONDS = 30
WALL_GUARD = 600


def limit_cpu():
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 5))


def run(argv, env):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=WALL_GUARD,
                           env=env, preexec_fn=limit_cpu)
    except subprocess.TimeoutExpired:
        return f"still running after {WALL_GUARD} s of wall clock (asleep?)", 2
    if p.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"over its CPU bound ({CPU_SECONDS} s): {p.stderr[-2000:]}", 2
    bad = p.returncode not in (0, 1, 2, 3) or "Sanitizer" in p.stderr or "runtime error" in p.stderr
    return (f"exit {p.returncode}: {p.stderr[-2000:]}" if bad else None), p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-replay", required=True)
    ap.add_argument("--trace-dump", required=True)
    ap.add_argument("--zstd", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("corpus", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    inputs = sorted(os.path.join(d, name) for d in args.corpus for name in os.listdir(d))
    failures, readable, runs = 0, 0, 0
    slowest = (0.0, "")
    for path in inputs:
        log = as_log(path, args.work, args.zstd)
        for command in COMMANDS:
            program = args.trace_dump if command[0] == "dump" else args.trace_replay
            argv = [program] + [a.format(log=log, work=args.work) for a in command[1:]]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            why, rc = run(argv, env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            if cpu > slowest[0]:
                slowest = (cpu, f"{command[0]} {command[1]} on {os.path.basename(path)}")
            runs += 1
            if command[1] == "check" and rc != 2:
                readable += 1
            if why:
                failures += 1
                print(f"FAIL: {' '.join(argv)} on {os.path.basename(path)}: {why}", file=sys.stderr)
    print(f"{len(inputs)} inputs, {readable} readable as logs, {runs} runs, {failures} failures; "
          f"most CPU for one command: {slowest[0]:.2f} s ({slowest[1]}; bound {CPU_SECONDS} s)")
    # The corpora must hold real logs, or this test proves nothing.
    if readable < len(inputs) // 4:
        print("FAIL: too few inputs read as logs", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
