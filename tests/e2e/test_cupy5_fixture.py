#!/usr/bin/env python3
"""The cupy5_pool fixture on its own, without the tracer: seed 000's bug
fires on an interpreter that collects inside allocations (3.11, else 3.8 to
3.10), never with CuPy 5.4's fix (--gc-guard), and never on 3.12+, where a
collection only runs between bytecodes.

    test_cupy5_fixture.py --build-dir DIR
"""
import argparse
import os
import subprocess

import e2e

ORPHAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "cupy5_pool", "orphan.py")

SEEDS = range(10)          # every seed tried so far fails within 1,000,000 iterations
CAP = 300000               # most fail well before; a run takes about a second
CLEAN_RUN = 100000         # iterations the fixed variants must survive


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    return parser.parse_args()


def first_failure(python, module_dir):
    """The first seed's Outcome that failed within CAP, or the last one run."""
    for seed in SEEDS:
        outcome = e2e.run_workload(python, module_dir, seed, CAP, check_arena=True)
        print("seed %d: %s" % (seed, outcome), flush=True)
        if outcome.failed:
            return seed, outcome
    return seed, outcome


def check_failure(failures, outcome):
    failures.check(outcome.failed, "no seed failed within %d iterations" % CAP)
    if not outcome.failed:
        return
    failures.check(outcome.done.returncode == 1, "a failed run exits with 1")
    failures.check("AssertionError: _Chunk.split" in outcome.done.stderr,
                   "the traceback shows split's assertion: " + outcome.done.stderr[-500:])
    failures.check(outcome.broken_since is not None and outcome.broken_since <= outcome.iteration,
                   "the arena was broken at or before the failure: %s" % outcome)


def check_clean(failures, what, outcome):
    print("%s: %s" % (what, outcome), flush=True)
    failures.check(not outcome.failed and outcome.done.returncode == 0,
                   "%s runs %d iterations cleanly: %s" % (what, CLEAN_RUN, outcome))
    failures.check(outcome.broken_since is None, "%s keeps the arena sound" % what)


def check_orphan(failures, python, module_dir):
    """The audit's fourth step sees a chunk a re-entrant free left on no list
    the arena reaches (the first three cannot), and CuPy 5.4's fix makes none."""
    for guard, expect in (((), "is neither in use nor on its bin's free list: unreachable"),
                          (("--gc-guard",), "audit: None")):
        done = subprocess.run([python, ORPHAN, module_dir] + list(guard), capture_output=True, text=True)
        print("orphan.py %s: %s" % (" ".join(guard), done.stdout.strip()), flush=True)
        failures.check(done.returncode == 0 and expect in done.stdout,
                       "orphan.py %s says %r: %s %s" % (" ".join(guard), expect, done.stdout, done.stderr[-500:]))
        failures.check(("fired: 1" in done.stdout) == (not guard),
                       "the collection freed the other chunk inside the outer free only without the guard: "
                       + done.stdout)


def main():
    args = parse_args()
    python, version = e2e.require_python()
    module_dir = e2e.build_fixture(python, version, args.build_dir)
    failures = e2e.Failures()

    check_orphan(failures, python, module_dir)
    seed, outcome = first_failure(python, module_dir)
    check_failure(failures, outcome)
    check_clean(failures, "--gc-guard (CuPy 5.4)",
                e2e.run_workload(python, module_dir, seed, CLEAN_RUN, gc_guard=True, check_arena=True))

    later = e2e.find_python(("3.12", "3.13"))
    if later:
        later_dir = e2e.build_fixture(later[0], later[1], args.build_dir)
        check_clean(failures, "Python " + later[1],
                    e2e.run_workload(later[0], later_dir, seed, CLEAN_RUN, check_arena=True))
    else:
        print("no Python 3.12+ here: the deferred-collection check is left out")
    failures.finish()


if __name__ == "__main__":
    main()
