#!/usr/bin/env python3
"""Seed 000's workload (tests/fixtures/cupy5_pool/workload.py) for the
follower's end-to-end test: the same iterations, audited after each one
(--check-arena's audit), and on the first iteration that left the arena
broken in a way the pool cannot live with (its bin index out of order, a
free list that does not match: what leads to the AssertionError; free
neighbours left unmerged CuPy 5.2 lives with) it waits for --go FILE (at
most --wait seconds) before going on.

While it waits the damage is done and the AssertionError it leads to has not
fired: a follower that stops the process then has stopped it before the
assertion, whatever the machine's load.  Once FILE exists it runs on, and
the assertion fires (or the cap is reached) as it would have.

    follow_workload.py --module-dir DIR --seed N --iterations N --go FILE [--wait S]

Prints what workload.py prints: "OK ..." or "FAILED ... iteration=N ...",
with "arena broken after iteration N: PROBLEM" when the audit saw it and
"waiting at iteration N" where it waits.
"""
import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "cupy5_pool"))
import workload  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module-dir", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iterations", type=int, default=100000)
    p.add_argument("--go", required=True)
    p.add_argument("--wait", type=float, default=120)
    args = p.parse_args()
    sys.path.insert(0, args.module_dir)
    import cupy5_pool

    pool = cupy5_pool.Pool()
    rng = random.Random(args.seed)
    working_set = [None] * workload.WORKING_SET
    broken_since = waited = None
    for iteration in range(1, args.iterations + 1):
        try:
            workload.step(pool, rng, working_set)
        except AssertionError as error:
            print("FAILED seed=%d iteration=%d arena_broken_since=%s: AssertionError: %s"
                  % (args.seed, iteration, broken_since, error), flush=True)
            return 1
        if waited is not None:
            continue
        problem = pool.audit()
        if problem is None:
            continue
        if broken_since is None:
            broken_since = iteration
            print("arena broken after iteration %d: %s" % (iteration, problem), flush=True)
        if "not merged" not in problem:
            waited = iteration
            print("waiting at iteration %d: %s" % (iteration, problem), flush=True)
            deadline = time.monotonic() + args.wait
            while not os.path.exists(args.go) and time.monotonic() < deadline:
                time.sleep(0.01)
    print("OK seed=%d iterations=%d arena_broken_since=%s" % (args.seed, args.iterations, broken_since),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
