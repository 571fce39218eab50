#!/usr/bin/env python3
"""Checkpoints of the replay's state (replay/state.h): a replay restarted
from its saved state after event k says exactly what a replay of the whole
log says, byte for byte, with the same exit status, for every model.

trace-replay check/stats --restart-at K saves the state after event K
(operations being gathered included: a follower's checkpoint is taken at a
segment's start, wherever the operations are), frees the replay, loads the
state into a new one and goes on: what check does when it starts from a
checkpoint.  It restarts after event K itself, not at a later quiet point,
and many restarts load a state with operations open.  The scenario logs (nested collections, shadows, ambiguities,
raised operations, releases that failed) are restarted after every event;
the synthetic workload logs at random events (the seed is printed: rerun
with STATE_SEED=N)."""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli  # noqa: E402  (mklog: the scenario logs as test_cli writes them)

failures = []
MODELS = ["cupy", "cupy5", "cupy-next", "tf-bfc", "torch"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def replay(args):
    p = subprocess.run([A.replay] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def events_of(log):
    rc, out, _ = replay(["stats", log, "--model", "none"])
    m = re.search(r"(\d+) events", out)
    return int(m.group(1)) if m else 0


WHOLE = {}


def compare(args, k, stats):
    if tuple(args) not in WHOLE:
        WHOLE[tuple(args)] = replay(args)
    full = WHOLE[tuple(args)]
    rc, out, err = replay(args + ["--restart-at", str(k)])
    what = "%s --restart-at %d" % (" ".join(os.path.basename(a) for a in args), k)
    said = re.search(r"restarted from the state after event (\d+), (\d+) operation\(s\) being gathered", err)
    restarted = said is not None
    stats["restarts"] += restarted
    stats["runs"] += 1
    check("--restart-at" not in err or restarted, "%s: the state loads (%s)" % (what, err.strip()))
    if said:
        check(int(said.group(1)) == k, "%s: restarted after event %s, not %d" % (what, said.group(1), k))
        stats["open"] += int(said.group(2)) > 0
    check(rc == full[0], "%s: exit %d, a whole replay %d" % (what, rc, full[0]))
    if out != full[1]:
        a, b = out.splitlines(), full[1].splitlines()
        first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        check(False, "%s: output differs from a whole replay's at line %d:\n  restarted: %r\n  whole:     %r" %
              (what, first + 1, a[first] if first < len(a) else "(end)", b[first] if first < len(b) else "(end)"))
    return full


def main():
    global A
    ap = argparse.ArgumentParser()
    for k in ("replay", "mklog", "libpool", "gen", "scenarios"):
        ap.add_argument("--" + k, required=True)
    A = ap.parse_args()
    test_cli.A = A
    mklog = test_cli.mklog
    seed = int(os.environ.get("STATE_SEED", random.randrange(1 << 30)))
    print("STATE_SEED=%d" % seed)
    rnd = random.Random(seed)
    stats = {"runs": 0, "restarts": 0, "open": 0}
    verdicts = set()
    with tempfile.TemporaryDirectory() as tmp:
        debug = ["--debug-dir", os.path.dirname(A.libpool)]
        # Every scenario, every model, restarted after every event; with and
        # without the symbols that place nested collections.
        for name in sorted(os.listdir(A.scenarios)):
            if not name.endswith(".txt"):
                continue
            log = mklog(name, tmp)
            n = events_of(log)
            check(n > 0, "%s: has events" % name)
            models = MODELS if name.startswith("cupy") else ["cupy5", "torch"]
            for model in models:
                # After every event for the models the scenario is about
                # (CuPy's: nesting, shadows, ambiguities); a few for others.
                every = model in ("cupy", "cupy5")
                for extra in ([debug, []] if name.startswith("cupy5") and every else [debug]):
                    for k in (range(1, n + 1) if every else sorted(rnd.sample(range(1, n + 1), min(n, 4)))):
                        full = compare(["check", log, "--model", model] + extra, k, stats)
                        verdicts.add(full[1].strip().splitlines()[-1].split(" ")[1] if full[1].strip() else "")
                compare(["check", log, "--model", model, "--json"] + debug, rnd.randint(1, n), stats)
                compare(["stats", log, "--model", model] + debug, rnd.randint(1, n), stats)
        # Synthetic workloads: long enough that the state has grown (free
        # lists, freed blocks, many segments), a violation at the end.
        for flags in ([], ["--big-garbage"]):
            log = os.path.join(tmp, "gen%s.log" % "".join(flags))
            subprocess.run([A.gen, log, "20000", "--double-free"] + flags, check=True, capture_output=True)
            for model in MODELS:
                for k in sorted(rnd.sample(range(1, 20000), 3)):
                    compare(["check", log, "--model", model], k, stats)
                compare(["stats", log, "--model", model], rnd.randint(1, 20000), stats)
    print("%d restarted replays of %d compared with whole ones, %d of them with operations open; verdicts met: %s" %
          (stats["restarts"], stats["runs"], stats["open"], ", ".join(sorted(v for v in verdicts if v))))
    check(stats["restarts"] > 500 and stats["restarts"] > stats["runs"] * 0.9, "most runs restarted from a state")
    check(stats["open"] > 200, "restarts with operations being gathered: %d" % stats["open"])
    check({"VIOLATION", "clean"} <= verdicts, "violations and clean runs among them")
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
