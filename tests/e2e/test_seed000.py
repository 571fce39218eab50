#!/usr/bin/env python3
"""Seed 000 end to end: the cupy5_pool fixture (CuPy 5.2's pool) traced on
Python 3.11, then trace-replay.

1. A run that failed with split's AssertionError: the workload's own audit
   (--check-arena) marks the log right after the iteration where the arena
   first broke and says what it saw.  `check --model cupy5` must report that
   damage at that step, or stop earlier with a reason:
   - it stops at one of that iteration's operations, and the invariant the
     audit saw is among every invariant broken at that step (the audit and
     the replay may name different faces of one corruption first); or
   - the audit saw something the model calls a warning (free neighbours not
     merged: CuPy 5.2 lives with it), the replay warned about it at that
     step and went on; or
   - it stops at an earlier operation, with an invariant the workload's
     audit does not look for, on a replay that had not left the pool (no
     divergence before it): the model saw damage the audit cannot see.
   Anything else (a later stop, a divergence before an early stop) fails.
   Where it stops, the report shows the collection that re-entered the pool
   inside _append_to_free_list's set(): its Python stack (the workload's
   Array.__init__) and its native stack (append_to_free_list).
2. `check --model cupy` (CuPy 5.4+, no re-entry) on the same log: no
   violation (clean, or inconclusive when the model cannot follow a log
   whose pool was re-entered).
3. A run where the bug did not fire: `check --model cupy5` is clean and
   `explore --model cupy5` finds the collection that would break it.
4. `minimize` writes a smaller log on which `check --model cupy5` still
   breaks the same invariant.
5. check and explore print the same bytes when run again on the same log
   (minimize, which takes longest, runs once).
6. Recorded without native stacks (TRACE_STACK_DEPTH=0): no violation where
   the arena stayed sound, and a replay the unplaced collections put off the
   log says that is why.

    test_seed000.py --build-dir DIR --preload LIBTRACE --replay TRACE_REPLAY --pylog PYLOG

Logs and outputs stay in DIR/seed000 for a look after a failure.
"""
import argparse
import json
import os
import subprocess

import e2e

FAILING_SEEDS = range(60)  # about one in six fails within the cap
FAILING_CAP = 25000        # iterations: a run takes about a second; the log stays small
CLEAN_SEEDS = range(30)
NO_NATIVE_SEEDS = 60       # runs of 8000 iterations without native stacks: at most, until one leaves the log
CLEAN_RUN = 3000           # iterations: a few collections, and most seeds stay sound
MARK = "cupy5 workload: arena broken after iteration "
# What the workload's audit says, and the replay invariant that says the same.
AUDIT_TO_INVARIANT = (("bin index not increasing", "sorted_index"),
                      ("holds a chunk of", "bin_membership"),
                      ("are neighbours, not merged", "coalesced"),
                      ("a_flag[", "flag_consistent"),
                      ("nor on its bin's free list: unreachable", "reachable"))


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--preload", required=True)
    parser.add_argument("--replay", required=True)
    parser.add_argument("--pylog", required=True)
    return parser.parse_args()


class Setup:
    def __init__(self, args):
        self.args = args
        self.python, version = e2e.require_python(("3.11",))
        self.module_dir = e2e.build_fixture(self.python, version, args.build_dir)
        self.out = os.path.join(args.build_dir, "seed000")
        os.makedirs(self.out, exist_ok=True)

    def path(self, name):
        return os.path.join(self.out, name)

    def traced(self, seed, iterations, log, settings=None):
        if os.path.exists(log):
            os.unlink(log)
        return e2e.run_workload(self.python, self.module_dir, seed, iterations, check_arena=True,
                                preload=self.args.preload, log=log, settings=settings)

    def replay(self, *argv):
        """(exit status, stdout) of trace-replay; stdout is also kept in DIR."""
        # minimize takes 0.2 to 20 s of CPU on these logs (85 s once, before
        # it was made faster): 300 s of CPU is a runaway, not a busy machine.
        done = e2e.run_bounded([self.args.replay] + list(argv), 300, capture_output=True, text=True)
        name = "-".join(os.path.basename(a).replace(".tlog", "") for a in argv if not a.startswith("-"))
        with open(self.path(name + (".json" if "--json" in argv else ".txt")), "w") as f:
            f.write(done.stdout + done.stderr)
        return done.returncode, done.stdout

    def events(self, log):
        done = subprocess.run([self.args.pylog, log], capture_output=True, text=True, check=True)
        return [json.loads(line) for line in done.stdout.splitlines()
                if json.loads(line)["kind"] != "infos"]


def find_failing_run(setup):
    """The first traced run that failed (logs of the others are deleted)."""
    for seed in FAILING_SEEDS:
        log = setup.path("failing-%d.tlog" % seed)
        outcome = setup.traced(seed, FAILING_CAP, log)
        print("failing run, seed %d: %s" % (seed, outcome), flush=True)
        if outcome.failed and outcome.broken_since is not None:
            return log, outcome
        os.unlink(log)
    return None


def find_clean_run(setup):
    for seed in CLEAN_SEEDS:
        log = setup.path("clean-%d.tlog" % seed)
        outcome = setup.traced(seed, CLEAN_RUN, log)
        print("clean run, seed %d: %s" % (seed, outcome), flush=True)
        if not outcome.failed and outcome.broken_since is None and outcome.done.returncode == 0:
            return log, outcome
        os.unlink(log)
    return None


def damage(setup, log):
    """(the mark event, the audit's words, the seqs of the top-level pool
    operations of the iteration before it): where the run went wrong."""
    events = setup.events(log)
    marks = [e for e in events if e["kind"] == "mark" and e["text"].startswith(MARK)]
    if not marks:
        return None, "", []
    mark = marks[0]
    ops = [e["seq"] for e in events
           if e["kind"] == "pool_op_begin" and e["parent"] == 0 and e["seq"] < mark["seq"]]
    # An iteration makes at most three top-level pool operations: a
    # temporary's malloc, a result's malloc, and the free of the result it
    # replaces (the frees a collection runs are nested in it).
    return mark, mark["text"].split(": ", 2)[-1], ops[-3:]


def frames(stack, key):
    return [frame.get(key) or "" for frame in stack]


def audit_invariant(audit):
    """The replay's name for what the audit saw, or None."""
    names = [inv for words, inv in AUDIT_TO_INVARIANT if words in audit]
    return names[0] if names else None


def judge(report, audit, mark_seq, blamed):
    """(ok, why): does the replay report the audit's damage at the step the
    audit blames, or stop earlier with a reason?"""
    violation = report.get("violation") or {}
    op = (violation.get("op") or {}).get("seq")
    broken = [b["invariant"] for b in violation.get("broken", [])]
    wanted = audit_invariant(audit)
    if not blamed:
        return False, "the audit's iteration has no pool operation"
    diverged = report.get("fidelity", {}).get("first_diverged_seq") or 0
    if op in blamed:
        return wanted in broken, ("stopped at operation %d of the blamed iteration; broken there: %s; the audit "
                                  "saw %s" % (op, broken, wanted))
    step = [w for w in report.get("warnings", [])
            if w["invariant"] == wanted and blamed[0] <= w["seq"] < mark_seq]
    if step and (op is None or op > blamed[-1]):
        return True, ("warned %s at seq %d, in the blamed iteration (the model lives with it, as CuPy 5.2 does), "
                      "and went on" % (wanted, step[0]["seq"]))
    if op is not None and op < blamed[0]:
        audited = {inv for _, inv in AUDIT_TO_INVARIANT}
        early = [inv for inv in broken if inv not in audited]
        if diverged and diverged <= violation["seq"]:
            return False, ("stopped early (operation %d) after the model left the pool (first divergence at seq "
                           "%d): not a finding to trust" % (op, diverged))
        return bool(early) and not (set(broken) & audited), (
            "stopped early (operation %d) at %s, which the workload's audit does not look for" % (op, broken))
    return False, ("stopped at operation %s (broken: %s), after the blamed iteration %s, without a warning of %s "
                   "there" % (op, broken, blamed, wanted))


def judge_knows_the_cases(failures):
    """judge() on made-up reports: each way to pass, and the ways to fail."""
    def report(op, broken, warnings=(), diverged=0, seq=None):
        return {"violation": {"seq": seq or op + 5, "op": {"seq": op},
                              "broken": [{"invariant": b} for b in broken]},
                "warnings": [{"invariant": i, "seq": s} for i, s in warnings],
                "fidelity": {"first_diverged_seq": diverged}}
    merged, order = "free chunks at 0x1 and 0x2 are neighbours, not merged", "bin index not increasing at 3"
    cases = [
        (report(100, ["sorted_index", "coalesced"]), merged, True),      # one step, two faces
        (report(100, ["sorted_index"]), merged, False),                  # the audit's face is missing
        (report(900, ["sorted_index"], [("coalesced", 104)]), merged, True),   # warned at the step
        (report(900, ["sorted_index"], [("coalesced", 50)]), merged, False),   # warned elsewhere
        (report(10, ["index_range"]), order, True),                      # earlier, unseen by the audit
        (report(10, ["index_range"], diverged=12), order, False),        # earlier, after a divergence
        (report(10, ["sorted_index"]), order, False),                    # earlier, yet the audit would see it
        (report(10, ["reachable"]), order, False),                       # the audit's fourth step sees that
        (report(900, ["sorted_index"]), order, False),                   # later
    ]
    for rep, audit, want in cases:
        ok, why = judge(rep, audit, 110, [100, 103, 106])
        failures.check(ok == want, "judge(%s) is %s: %s" % (rep, want, why))


def check_violation(failures, setup, log):
    mark, audit, last_ops = damage(setup, log)
    if not failures.check(mark is not None, "the failing run's log has the workload's mark"):
        return
    print("the workload's audit: %s (mark at seq %d; last operations %s)" % (audit, mark["seq"], last_ops))
    status, out = setup.replay("check", "--model", "cupy5", "--json", log)
    report = json.loads(out) if out.strip() else {}
    violation = report.get("violation")
    failures.check(status == 1 and violation, "check --model cupy5 finds a violation (status %d)" % status)
    if not violation:
        return
    op = violation.get("op") or {}
    print("check --model cupy5: %s at seq %d, %s op at seq %s; broken at that step: %s" % (
        violation["invariant"], violation["seq"], op.get("kind"), op.get("seq"),
        [b["invariant"] for b in violation.get("broken", [])]))
    failures.check(audit_invariant(audit), "the audit's words are known: %s" % audit)
    ok, why = judge(report, audit, mark["seq"], last_ops)
    print("verdict of the comparison: %s" % why)
    failures.check(ok, "the replay reports the audit's damage at its step, or earlier with a reason: %s" % why)
    check_reentry(failures, violation)


def check_reentry(failures, violation):
    reentries = [r for r in violation.get("reentries", []) if "_append_to_free_list" in r["point"]]
    if not failures.check(reentries, "a collection re-entered the operation at _append_to_free_list's set()"):
        return
    gc = reentries[0]["gc"]
    failures.check(reentries[0]["nested_ops"] > 0, "the collection ran pool frees")
    failures.check(any(f.endswith("workload.py") for f in frames(gc["py_stack"], "file")),
                   "the collection's Python stack is the workload's: %s" % gc["py_stack"][:3])
    native = frames(gc["native_stack"], "function")
    failures.check("append_to_free_list" in native,
                   "the collection's native stack shows append_to_free_list: %s" % native[:12])


def check_cupy54_clean(failures, setup, log):
    status, out = setup.replay("check", "--model", "cupy", log)
    # No violation; but CuPy 5.4+ cannot produce a log where the pool was
    # re-entered, so the model may well leave it: clean (0) or, when it
    # diverged on more than 1 % of its answers, inconclusive (3).
    failures.check(status in (0, 3) and "verdict: VIOLATION" not in out,
                   "check --model cupy (5.4+, no re-entry) finds no violation (status %d): %s"
                   % (status, out[-400:]))


def check_explore(failures, setup, log):
    status, out = setup.replay("check", "--model", "cupy5", log)
    failures.check(status == 0, "check --model cupy5 on the clean run is clean (status %d)" % status)
    status, out = setup.replay("explore", "--model", "cupy5", "--json", log)
    found = (json.loads(out).get("explore") or {}).get("found") if out.strip() else None
    failures.check(status == 1 and found, "explore --model cupy5 finds a breaking collection (status %d)"
                   % status)
    if found:
        print("explore: %s at seq %d, injected at %s" % (found["invariant"], found["seq"], found["point"]))
        failures.check("_append_to_free_list" in (found.get("point") or ""),
                       "explore injects at _append_to_free_list's set(): %s" % found.get("point"))


def check_orphan(failures, setup):
    """A chunk orphaned on purpose (tests/fixtures/cupy5_pool/orphan.py): the
    audit's reachability step and the model see the same damage at the same
    free, and CuPy 5.4's model, which has no re-entry, sees none."""
    log = setup.path("orphan.tlog")
    if os.path.exists(log):
        os.unlink(log)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "cupy5_pool", "orphan.py")
    env = dict(os.environ, LD_PRELOAD=setup.args.preload, TRACE_OUTPUT=log)
    done = e2e.run_bounded([setup.python, script, setup.module_dir], 120, capture_output=True, text=True,
                           env=env)
    if not failures.check(done.returncode == 0 and "unreachable" in done.stdout,
                          "traced orphan.py: the audit sees the orphan: %s %s" % (done.stdout, done.stderr[-300:])):
        return
    status, out = setup.replay("check", "--model", "cupy5", "--json", log)
    violation = json.loads(out).get("violation") or {} if out.strip() else {}
    broken = [violation.get("invariant")] + [b.get("invariant") for b in violation.get("broken") or []]
    frees = [e["seq"] for e in setup.events(log) if e["kind"] == "pool_op_begin" and e["parent"] == 0
             and e.get("op") == 2]
    failures.check(status == 1 and "reachable" in broken, "check --model cupy5 on orphan.py: reachable "
                   "(status %d, broken %s)" % (status, broken))
    failures.check((violation.get("op") or {}).get("seq") in frees,
                   "the violation is at a top-level free (%s in %s)" % (violation.get("op"), frees))
    # The other chunk a whole segment: it dies with the overwritten set and
    # its segment goes back to the device inside the free: no damage.
    lone = setup.path("orphan-lone.tlog")
    if os.path.exists(lone):
        os.unlink(lone)
    env["TRACE_OUTPUT"] = lone
    done = e2e.run_bounded([setup.python, script, setup.module_dir, "--lone"], 120, capture_output=True,
                           text=True, env=env)
    if not failures.check(done.returncode == 0 and "fired: 1 audit: None" in done.stdout,
                          "traced orphan.py --lone: the collection ran inside the free and nothing was lost: %s %s"
                          % (done.stdout, done.stderr[-300:])):
        return
    status, out = setup.replay("check", "--model", "cupy5", lone)
    failures.check(status == 0, "check --model cupy5 on orphan.py --lone is clean (status %d): %s"
                   % (status, out[:600]))


def check_minimize(failures, setup, log):
    smaller = setup.path("minimized.tlog")
    status, said = setup.replay("minimize", "--model", "cupy5", log, "-o", smaller)
    if not failures.check(status == 1 and os.path.exists(smaller), "minimize writes a log (status %d)" % status):
        return
    _, before = setup.replay("check", "--model", "cupy5", "--json", log)
    status, after = setup.replay("check", "--model", "cupy5", "--json", smaller)
    failures.check(os.path.getsize(smaller) < os.path.getsize(log), "the minimized log is smaller")
    failures.check(status == 1 and json.loads(after)["violation"]["invariant"] ==
                   json.loads(before)["violation"]["invariant"],
                   "the minimized log still breaks the same invariant (status %d)" % status)
    # Where the original's model followed the log to its violation and the
    # small log's does not, minimize's verdict says so (it did not: the
    # small log showed the model's break as the pool's).
    left = json.loads(after)["fidelity"]["diverged_before_violation"]
    faithful = json.loads(before)["fidelity"]["diverged_before_violation"] == 0
    failures.check(("leaves the log %d time(s)" % left in said) == bool(left and faithful),
                   "minimize's verdict and the small log's fidelity (%d divergences before the violation) "
                   "disagree: %s" % (left, said.strip().splitlines()[-1:]))
    # One replay: every event up to the violation kept, written again.  It
    # must still take fewer bytes than the recorder's log (written as
    # records it took about twice as many: a search stopped by its budget
    # once wrote 295,389 bytes from 214,588).
    whole = setup.path("minimized-1.tlog")
    status, _ = setup.replay("minimize", "--model", "cupy5", "--max-replays", "1", log, "-o", whole)
    failures.check(status == 1 and os.path.exists(whole), "minimize --max-replays 1 writes a log (status %d)" % status)
    if os.path.exists(whole):
        failures.check(os.path.getsize(whole) < os.path.getsize(log),
                       "the log minimize wrote after one replay (%d bytes) is smaller than the recorder's (%d)"
                       % (os.path.getsize(whole), os.path.getsize(log)))
        status, again = setup.replay("check", "--model", "cupy5", "--json", whole)
        failures.check(status == 1 and json.loads(again)["violation"]["invariant"] ==
                       json.loads(before)["violation"]["invariant"],
                       "the log written after one replay breaks the same invariant (status %d)" % status)


def check_without_native_stacks(failures, setup):
    """Recorded with TRACE_STACK_DEPTH=0, no stack says where a collection
    inside a pool operation started: a run whose arena stayed sound is never
    a violation, and a replay that the unplaced collections put off the log
    says so (its verdict asked "is it the right --model?", which it was)."""
    # Which seeds break the arena depends on when collections run, which
    # differs between machines: here 4 of the first 30 seeds left the log
    # (the first at seed 3), where CI once saw none in seeds 0 to 11.  So
    # every seed up to the 12th is checked for false findings, and the
    # search goes on until one leaves the log (about 0.6 s a seed).
    inconclusive = None
    for seed in range(NO_NATIVE_SEEDS):
        if seed >= 12 and inconclusive:
            break
        log = setup.path("no-native-%d.tlog" % seed)
        outcome = setup.traced(seed, 8000, log, settings={"TRACE_STACK_DEPTH": "0"})
        status, out = setup.replay("check", "--model", "cupy5", log)
        if outcome.broken_since is None:
            failures.check(status != 1, "seed %d without native stacks, arena sound: no violation (status %d): %s"
                           % (seed, status, out[-600:]))
        if status == 3 and inconclusive is None:
            inconclusive = (seed, out)
    if not failures.check(inconclusive, "a replay without native stacks left the log (%d seeds of 8000 iterations)"
                          % NO_NATIVE_SEEDS):
        return
    seed, out = inconclusive
    verdict = [line for line in out.splitlines() if line.startswith("verdict: ")][-1]
    failures.check("no native stacks (TRACE_STACK_DEPTH=0)" in verdict and "is it the right --model" not in verdict,
                   "seed %d without native stacks: the verdict names the missing stacks, not the model: %s"
                   % (seed, verdict))


def check_repeatable(failures, setup, failing, clean):
    commands = (("check", "--model", "cupy5", failing), ("check", "--model", "cupy5", "--json", failing),
                ("check", "--model", "cupy", failing), ("explore", "--model", "cupy5", clean))
    for argv in commands:
        first, second = setup.replay(*argv), setup.replay(*argv)
        failures.check(first == second, "trace-replay %s prints the same bytes twice" % " ".join(argv[:3]))


def main():
    setup = Setup(parse_args())
    failures = e2e.Failures()
    judge_knows_the_cases(failures)
    check_orphan(failures, setup)
    failing = find_failing_run(setup)
    clean = find_clean_run(setup)
    if failures.check(failing, "a traced run failed within %d iterations" % FAILING_CAP):
        check_violation(failures, setup, failing[0])
        check_cupy54_clean(failures, setup, failing[0])
        check_minimize(failures, setup, failing[0])
    if failures.check(clean, "a traced run of %d iterations stayed sound" % CLEAN_RUN):
        check_explore(failures, setup, clean[0])
    if failing and clean:
        check_repeatable(failures, setup, failing[0], clean[0])
    check_without_native_stacks(failures, setup)
    failures.finish()


if __name__ == "__main__":
    main()
