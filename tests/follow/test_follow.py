#!/usr/bin/env python3
"""check --follow, --on-violation, trace-run --check and TRACE_MAX_BYTES on a
CUDA program traced through the test doubles (prog_churn: allocations and
frees through the runtime, a mark each iteration, double frees on demand).

    test_follow.py NAME --preload P --bin DIR --doubles DIR --work DIR
                        --trace-replay EXE --trace-dump EXE --trace-run SCRIPT

Nothing here waits for a time to pass: a program that must still be running
when the follower acts either runs until it is killed or blocks on a file
the test creates once the follower said what it saw.  Bounds are generous
timeouts, never the measure of a test.
"""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

ARGS = None
LONG = 300   # seconds: a bound for a hung run, not a measure


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def churn(*args):
    return [os.path.join(ARGS.bin, "prog_churn")] + [str(a) for a in args]


def traced_env(log=None, **settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env["LD_PRELOAD"] = ARGS.preload
    env["LD_LIBRARY_PATH"] = ARGS.doubles
    env["TRACE_QUIET"] = "1"
    if log:
        env["TRACE_OUTPUT"] = log
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run_env():
    """trace-run's environment: it preloads the library itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_")}
    env.pop("LD_PRELOAD", None)
    env["LD_LIBRARY_PATH"] = ARGS.doubles
    env["TRACE_LIB"] = ARGS.preload
    env["TRACE_REPLAY"] = ARGS.trace_replay
    return env


def replay_cmd(*args):
    return [ARGS.trace_replay] + [str(a) for a in args]


def work(name):
    return os.path.join(ARGS.work, name)


def no_cores():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def read_until(stream, needle, lines):
    """Lines from stream until one holds needle (kept in lines); False at EOF."""
    for line in iter(stream.readline, ""):
        lines.append(line)
        if needle in line:
            return True
    return False


def rest_of(proc, err_file):
    """What a follower still prints, read through the stream read_until
    used (its buffer holds lines already read from the pipe), and its
    stderr from a file."""
    out = proc.stdout.read()
    proc.wait(timeout=LONG)
    err_file.seek(0)
    return out, err_file.read()


def wait_state(pid, states):
    """The process's state letter once it is one of states (it gets there on
    its own; the bound is only for a hang)."""
    deadline = time.monotonic() + LONG
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return None
        if state in states:
            return state
        time.sleep(0.01)
    fail("process %d never got to state %s" % (pid, states))


def dump_json(log):
    p = subprocess.run([ARGS.trace_dump, "--json", log], capture_output=True, text=True)
    return [json.loads(line) for line in p.stdout.splitlines()], p


def events_of(lines):
    return [x for x in lines if "seq" in x]


def strip_follow(text):
    """check's text without the lines --follow adds."""
    return [line for line in text.splitlines() if not line.startswith("follow:")]


# ------------------------------------------------------------------ tests

def test_running():
    """A follower started before the program: it waits for the log, reads
    each frame as it is written (it reports the double free while the
    program is blocked right after it), reads to END, and prints what check
    prints on the finished log.  --json: the same document plus "follow"."""
    log, go = work("run.tlog"), work("run.go")
    errs = open(work("run.err"), "w+")
    follower = subprocess.Popen(replay_cmd("check", "--follow", log), stdout=subprocess.PIPE, stderr=errs,
                                text=True)
    prog = subprocess.Popen(churn(4000, "--double-free-at", 1500, "--wait-file", go),
                            env=traced_env(log), stdout=subprocess.PIPE, text=True)
    seen = []
    check(read_until(follower.stdout, "VIOLATION double_free", seen),
          "the follower did not report the double free while the program waited: %s" % "".join(seen))
    check(prog.poll() is None, "the program ended before the follower reported")
    open(go + "-1", "w").close()
    out, err = rest_of(follower, errs)
    check(prog.wait(timeout=LONG) == 0, "the program failed")
    check(follower.returncode == 1, "follower exit status %d: %s" % (follower.returncode, err))
    text = "".join(seen) + out
    check("follow: process %d, stopped reading at the violation" % prog.pid in text, "no follow line: %s" % text)
    plain = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(plain.returncode == 1, "check on the finished log: %d" % plain.returncode)
    check(strip_follow(text) == strip_follow(plain.stdout),
          "follow printed\n%s\ncheck printed\n%s" % (text, plain.stdout))
    # The same in JSON, after the fact (the log is whole, its writer gone).
    j = subprocess.run(replay_cmd("check", "--follow", log, "--json"), capture_output=True, text=True)
    c = subprocess.run(replay_cmd("check", log, "--json"), capture_output=True, text=True)
    doc, ref = json.loads(j.stdout), json.loads(c.stdout)
    follow = doc.pop("follow")
    check(doc == ref, "JSON differs from check's:\n%s\n%s" % (doc, ref))
    check(follow["ended"] == "stopped reading at the violation (event %d)" % ref["violation"]["seq"] and
          follow["violations"] == 1 and follow["on_violation"] == "report", "follow section %s" % follow)


def test_continue():
    """--on-violation=continue: every violation as it comes (text blocks;
    --json: one line each, then the document), and the program runs on to
    its end; trace-run --check keeps the command's exit status."""
    log = work("cont.tlog")
    p = subprocess.run(churn(3000, "--double-free-at", 1000, "--double-free-at", 2000),
                       env=traced_env(log), capture_output=True, text=True)
    check(p.returncode == 0, "prog_churn failed")
    j = subprocess.run(replay_cmd("check", "--follow", log, "--json", "--on-violation=continue"),
                       capture_output=True, text=True)
    lines = [json.loads(line) for line in j.stdout.splitlines()]
    check(j.returncode == 1 and len(lines) == 3, "want 2 violation lines and the document: %s" % j.stdout)
    check([x.get("kind") for x in lines[:2]] == ["violation", "violation"] and
          all(x["violation"]["invariant"] == "double_free" for x in lines[:2]), "violation lines %s" % lines[:2])
    check(lines[0]["violation"]["seq"] < lines[1]["violation"]["seq"], "violations out of order")
    doc = lines[2]
    check(doc["follow"]["violations"] == 2 and doc["follow"]["ended"] == "the log ended with its END record",
          "document %s" % doc["follow"])
    check(doc["violation"]["seq"] == lines[0]["violation"]["seq"], "the document's violation is the first")
    # The same through trace-run, text: both blocks, and exit status 0.
    run = subprocess.run([ARGS.trace_run, "--check", "--on-violation=continue", "--output", work("cont-run-%p.tlog"),
                          "--", *churn(3000, "--double-free-at", 1000, "--double-free-at", 2000)],
                         env=run_env(), capture_output=True, text=True, timeout=LONG)
    check(run.returncode == 0, "trace-run --check continue: exit %d, %s" % (run.returncode, run.stderr))
    check(run.stderr.count("\nVIOLATION double_free") + run.stderr.startswith("VIOLATION double_free") == 2 and
          "verdict: VIOLATION double_free at seq" in run.stderr, "two violations and the verdict in %s" % run.stderr)
    check("done 3000" in run.stdout, "the command's output is its own: %r" % run.stdout)


def test_stop():
    """trace-run --check --on-violation=stop at a double free made through
    the CUDA doubles: the program (which would run until killed) is left
    stopped, trace-run exits 147, the follower says how to look at it.  How
    many events it recorded after the double free: the log, once it is let
    go with SIGTERM pending, says."""
    # Files, not pipes: the stopped program holds what it inherited open.
    out_file, err_file = open(work("stop.out"), "w+"), open(work("stop.err"), "w+")
    run = subprocess.Popen([ARGS.trace_run, "--check", "--on-violation=stop", "--output", work("stop-%p.tlog"),
                            "--", *churn(0, "--double-free-at", 3000)],
                           env=run_env(), stdout=out_file, stderr=err_file, text=True)
    run.wait(timeout=LONG)
    err_file.seek(0)
    err = err_file.read()
    check(run.returncode == 147, "trace-run exit status %d (want 147): %s" % (run.returncode, err))
    logs = glob.glob(work("stop-*.tlog"))
    check(len(logs) == 1, "logs %s" % logs)
    pid = int(logs[0].rsplit("-", 1)[1].split(".")[0])
    check(wait_state(pid, "T") == "T", "process %d is not stopped" % pid)
    for want in ("VIOLATION double_free", "STOPPED process %d (SIGSTOP)" % pid, "gdb -p %d" % pid,
                 "py-spy dump --pid %d" % pid, "kill -CONT %d" % pid, "stays stopped"):
        check(want in err, "%r not in trace-run's output:\n%s" % (want, err))
    violation = int(err.split("VIOLATION double_free at seq ")[1].split()[0])
    os.kill(pid, signal.SIGTERM)   # pending while stopped: handled first thing after SIGCONT
    os.kill(pid, signal.SIGCONT)
    check(wait_state(pid, "Z") in ("Z", None), "process %d did not end" % pid)
    lines, _ = dump_json(logs[0])
    last = events_of(lines)[-1]["seq"]
    endings = [x["value"] for x in lines if x.get("kind") == "info" and x.get("key") == "ending"]
    check(endings == ["signal SIGTERM"], "ending %s" % endings)
    print("stopped %d events after the double free (seq %d, last %d)" % (last - violation, violation, last))


def test_stop_job():
    """trace-run as a shell's job (its own process group, its parent in
    another group of the session): once it exited, the stopped command's
    job would be orphaned and the kernel would end it with SIGHUP, so
    trace-run waits while it is stopped, and exits 147 once it has gone on
    and ended."""
    out_file, err_file = open(work("job.out"), "w+"), open(work("job.err"), "w+")
    run = subprocess.Popen([ARGS.trace_run, "--check", "--on-violation=stop", "--output", work("job-%p.tlog"),
                            "--", *churn(0, "--double-free-at", 3000)],
                           env=run_env(), stdout=out_file, stderr=err_file, text=True,
                           preexec_fn=lambda: os.setpgid(0, 0))
    deadline = time.monotonic() + LONG
    err = ""
    while "trace-run waits here" not in err:
        check(run.poll() is None, "trace-run exited %s while the command was stopped: %s" % (run.returncode, err))
        check(time.monotonic() < deadline, "trace-run never said it waits: %s" % err)
        time.sleep(0.05)
        err_file.seek(0)
        err = err_file.read()
    logs = glob.glob(work("job-*.tlog"))
    pid = int(logs[0].rsplit("-", 1)[1].split(".")[0])
    check(wait_state(pid, "T") == "T", "process %d is not stopped" % pid)
    time.sleep(0.2)   # a SIGHUP, had trace-run left, would have come by now
    check(wait_state(pid, "T") == "T" and run.poll() is None, "process %d did not stay stopped" % pid)
    os.kill(pid, signal.SIGTERM)   # pending while stopped
    os.kill(pid, signal.SIGCONT)
    check(run.wait(timeout=LONG) == 147, "trace-run exit status %d (want 147)" % run.returncode)
    err_file.seek(0)
    err = err_file.read()
    check("went on and ended (signal 15)" in err, err)
    lines, _ = dump_json(logs[0])
    endings = [x["value"] for x in lines if x.get("kind") == "info" and x.get("key") == "ending"]
    check(endings == ["signal SIGTERM"], "ending %s (not the SIGTERM sent: SIGHUP?)" % endings)


def test_abort():
    """--on-violation=abort: SIGABRT at the violation; trace-run's status is
    the command's death (134), and the log ends there ("signal SIGABRT")."""
    run = subprocess.run([ARGS.trace_run, "--check", "--on-violation=abort", "--output", work("abort-%p.tlog"),
                          "--", *churn(0, "--double-free-at", 2000)],
                         env=run_env(), capture_output=True, text=True, timeout=LONG, preexec_fn=no_cores)
    check(run.returncode == 134, "trace-run exit status %d (want 134): %s" % (run.returncode, run.stderr))
    check("ABORTED process" in run.stderr and "VIOLATION double_free" in run.stderr, run.stderr)
    logs = glob.glob(work("abort-*.tlog"))
    lines, _ = dump_json(logs[0])
    endings = [x["value"] for x in lines if x.get("kind") == "info" and x.get("key") == "ending"]
    check(endings == ["signal SIGABRT"], "ending %s" % endings)


def test_gone():
    """The writer killed with SIGKILL while the follower waits: the follower
    reads what is there and ends, "the log ended without END", clean."""
    log, go = work("gone.tlog"), work("gone.go")
    prog = subprocess.Popen(churn(0, "--double-free-at", 1000000000, "--sleep-us", 100),
                            env=traced_env(log))
    follower = subprocess.Popen(replay_cmd("check", "--follow", log, "--pid", prog.pid),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Let it record a while: a few frames on disk (the bound is a hang's).
    deadline = time.monotonic() + LONG
    while time.monotonic() < deadline and (not os.path.exists(log) or os.path.getsize(log) < 20000):
        time.sleep(0.01)
    prog.kill()
    prog.wait()
    out, err = follower.communicate(timeout=LONG)
    check(follower.returncode == 0, "follower exit %d: %s%s" % (follower.returncode, out, err))
    check("the writer is gone: the log ended without END" in out, out)
    check("\nverdict: clean" in out and "VIOLATION" not in out, out)
    # --pid of a process that ends with no log: no wait forever.
    p = subprocess.Popen(["true"])
    p.wait()
    nolog = subprocess.run(replay_cmd("check", "--follow", work("never.tlog"), "--pid", p.pid),
                           capture_output=True, text=True, timeout=LONG)
    check(nolog.returncode == 2 and "ended without writing" in nolog.stderr, nolog.stderr)
    bad = subprocess.run(replay_cmd("check", log, "--on-violation=stop"), capture_output=True, text=True)
    check(bad.returncode == 2 and "--follow" in bad.stderr, bad.stderr)


def segments(log):
    stem, ext = os.path.splitext(log)
    found = glob.glob(stem + ".seg*" + ext)
    return [log] + sorted(found, key=lambda p: int(p[len(stem) + 4:-len(ext)]))


def test_rotation():
    """TRACE_MAX_BYTES without a follower: the files stay within the budget
    (plus a frame), the first segment and the newest ones are kept, the log
    reads as one with a note of what was deleted (trace-dump, check), a
    double free in the kept window is found, and a clean run finds nothing
    (a free of a block allocated in a deleted segment is no finding)."""
    budget = 512 * 1024
    for name, extra, want_rc in (("clean", [], 0), ("dirty", ["--double-free-at", 299000], 1)):
        log = work("rot-%s.tlog" % name)
        p = subprocess.run(churn(300000, *extra), env=traced_env(log, TRACE_MAX_BYTES="512K"),
                           capture_output=True, text=True, timeout=LONG)
        check(p.returncode == 0, "prog_churn failed")
        files = segments(log)
        total = sum(os.path.getsize(f) for f in files)
        print("%s: %d files, %d bytes on disk for a budget of %d" % (name, len(files), total, budget))
        check(len(files) >= 3, "no rotation: %s" % files)
        check(total <= budget + budget // 8, "%d bytes on disk, budget %d" % (total, budget))
        lines, dump = dump_json(log)
        check(dump.returncode == 1 and "were deleted with segments 1 to" in dump.stderr, dump.stderr)
        header = lines[0]
        check(header["max_bytes"] == budget and header["segment"] == 0, "header %s" % header)
        seqs = [x["seq"] for x in events_of(lines)]
        check(seqs == sorted(seqs) and seqs[-1] == lines[-1]["seq"], "events out of order")
        check(lines[-1]["kind"] == "end", "the log does not end with END")
        c = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
        check(c.returncode == want_rc, "check: exit %d\n%s" % (c.returncode, c.stdout))
        check("events are missing before event" in c.stdout and "were deleted" in c.stdout, c.stdout)
        if want_rc:
            check("VIOLATION double_free" in c.stdout, c.stdout)
        # report says so, and its model-free checks make no finding of the
        # partial history either (they took the frees of blocks from the
        # deleted segments for frees of unknown blocks).
        rj = subprocess.run(replay_cmd("report", "--json", log), capture_output=True, text=True)
        rep = json.loads(rj.stdout)
        check("were deleted with segments 1 to" in (rep["log"]["damage"] or ""), "report: %s" % rep["log"])
        check([v["invariant"] for v in rep["violations"]] == (["double_free"] if want_rc else []),
              "report's model-free findings: %s" % rep["violations"][:3])
        check(rj.returncode == want_rc, "report: exit %d, verdict %s" % (rj.returncode, rep["verdict"]))
        # Given its last segment, the log reads the same, from its first.
        again, _ = dump_json(files[-1])
        check(again == lines, "the log read from its last segment differs")
    # Segments larger than the reader's first window (1 MiB): a budget of
    # 16M makes 2 MiB segments, and this run fills two of them and part of
    # a third, deleting none.  Every frame reads whole, and every event is
    # there (a frame across the window's end read as corrupt, and the rest
    # of its segment as not a frame: half a million events lost).
    log = work("rot-big.tlog")
    p = subprocess.run(churn(1500000), env=traced_env(log, TRACE_MAX_BYTES="16M"), capture_output=True,
                       text=True, timeout=LONG)
    files = segments(log)
    check(p.returncode == 0 and len(files) >= 2 and os.path.getsize(files[0]) > 1 << 20,
          "16M budget: %s" % [(f, os.path.getsize(f)) for f in files])
    s = subprocess.run([ARGS.trace_dump, "--summary", log], capture_output=True, text=True)
    m = re.search(r"^events\s+(\d+) \(seq 1\.\.(\d+)\)", s.stdout, re.M)
    check(s.returncode == 0 and "(0 corrupt" in s.stdout and "damage      none" in s.stdout and m
          and m.group(1) == m.group(2), "segments over 1 MiB read:\n%s%s" % (s.stdout, s.stderr))
    # trace-run's flag.
    run = subprocess.run([ARGS.trace_run, "--max-bytes", "256K", "--quiet", "--output", work("rot-run-%p.tlog"),
                          "--", *churn(200000)], env=run_env(), capture_output=True, text=True, timeout=LONG)
    first = [p for p in glob.glob(work("rot-run-*.tlog")) if ".seg" not in p]
    check(run.returncode == 0 and len(first) == 1 and len(segments(first[0])) >= 3, run.stderr)
    # One log in several files, not several logs (%p matches the segments'
    # names too: they are not logs of other processes).
    said = run.stdout + run.stderr
    check("trace-run: log written to %s" % first[0] in said and "logs written" not in said, said)
    # report over the directory: four logs (the three runs above and
    # trace-run's), each read once through its first file, not one process
    # per segment file.
    tree = subprocess.run(replay_cmd("report", ARGS.work), capture_output=True, text=True)
    check(tree.stdout.startswith("trace-replay report: 4 processes (4 logs) from"), tree.stdout[:1500] + tree.stderr)


def test_rotation_follower():
    """A follower that keeps up with a log rotating under it reads every
    event of every segment (no gap, no missing history) and reports each
    double free as it comes; the recorder deletes segments the follower has
    read.  The program waits after each double free until the follower has
    reported it, so the follower is never more than a few segments behind
    however loaded the machine is."""
    log, go = work("rotf.tlog"), work("rotf.go")
    # A double free (a wait) every 5,000 iterations: about one and a half
    # segments of a 96K budget (12K each, column blocks; the window keeps
    # about eight).  Every 20,000 the follower, slower under ASan and a
    # loaded machine, fell a whole window behind between two waits and a
    # segment was deleted unread.  The budget is below the log's size (about
    # 150K), so segments are deleted.
    points = [5000 * i for i in range(1, 8)]
    errs = open(work("rotf.err"), "w+")
    follower = subprocess.Popen(replay_cmd("check", "--follow", log, "--on-violation=continue", "--json"),
                                stdout=subprocess.PIPE, stderr=errs, text=True)
    args = [40000, "--wait-file", go]
    for k in points:
        args += ["--double-free-at", k]
    prog = subprocess.Popen(churn(*args), env=traced_env(log, TRACE_MAX_BYTES="96K"), stdout=subprocess.PIPE,
                            text=True)
    lines = []
    for i in range(1, len(points) + 1):
        check(read_until(follower.stdout, '"kind":"violation"', lines), "violation %d not reported: %s" % (i, lines))
        open("%s-%d" % (go, i), "w").close()
    out, err = rest_of(follower, errs)
    check(prog.wait(timeout=LONG) == 0, "prog_churn failed")
    doc = json.loads(out.splitlines()[-1])
    check(follower.returncode == 1 and doc["follow"]["violations"] == len(points), "follower: %s %s" % (out, err))
    check(doc["history_lost_at"] is None, "the follower missed events: %s" % doc)
    check(doc["follow"]["ended"] == "the log ended with its END record", doc["follow"])
    files = segments(log)
    check(len(files) >= 3 and os.path.basename(files[1]) != "rotf.seg1.tlog", "no segment deleted: %s" % files)
    dumped, _ = dump_json(log)
    end = [x for x in dumped if x.get("kind") == "end"]
    check(doc["events"] == end[0]["seq"], "the follower read %d events of %d" % (doc["events"], end[0]["seq"]))


def test_checkpoint():
    """A follower that sees the whole stream of a log kept within a budget
    writes checkpoints of the replay's state beside the segments (before
    each one's first event, deleting the older ones: one on disk); a later check of what
    is left starts from it and finds a double free whose first free was in
    a deleted segment, says the log was cut and which checkpoint it went on
    from.  Without the checkpoint (what is lost with no follower) the
    partial history cannot see it; a damaged or foreign checkpoint is
    refused with the reason, never half used."""
    stem = work("ckpt")
    log = stem + ".tlog"
    errs = open(work("ckpt.err"), "w+")
    follower = subprocess.Popen(replay_cmd("check", "--follow", log, "--json"), stdout=subprocess.PIPE, stderr=errs,
                                text=True)
    # The double free at the very end: the follower stops there, and the
    # program waits for no checkpoint after it.  The budget is below the
    # log's size (about 150K with column blocks), so segments are deleted.
    p = subprocess.run(churn(40000, "--free-again", 40000, 200, "--wait-checkpoints", stem),
                       env=traced_env(log, TRACE_MAX_BYTES="96K"), capture_output=True, text=True, timeout=LONG)
    check(p.returncode == 0, "prog_churn: %s" % p.stderr)
    out, err = rest_of(follower, errs)
    doc = json.loads(out.splitlines()[-1])
    fr = doc["follow"]
    print("follower: %d checkpoints, the last %d bytes written in %.1f ms, %d deleted" %
          (fr["checkpoints"], fr["checkpoint_bytes"], fr["checkpoint_write_ns"] / 1e6, fr["checkpoints_deleted"]))
    check(follower.returncode == 1 and doc["violation"]["invariant"] == "double_free", "follower: %s %s" % (out, err))
    check(doc["history_lost_at"] is None and fr["checkpoint_error"] is None, "follower: %s" % doc)
    files = segments(log)
    ckpts = sorted(glob.glob(stem + ".seg*.tlog.ckpt"))
    check(len(files) >= 3 and os.path.basename(files[1]) != "ckpt.seg1.tlog", "no segment deleted: %s" % files)
    check(fr["checkpoints"] >= 2 and fr["checkpoints_deleted"] == fr["checkpoints"] - 1, "checkpoints: %s" % fr)
    # The newest only, beside a segment still there.
    check(len(ckpts) == 1 and ckpts[0][:-len(".ckpt")] in files[1:], "checkpoints %s for segments %s" %
          (ckpts, files))
    print("on disk: %d bytes of segments, %d bytes of checkpoints (budget 98304)" %
          (sum(os.path.getsize(f) for f in files), sum(os.path.getsize(f) for f in ckpts)))
    # check from the oldest checkpoint on what remains.
    c = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(c.returncode == 1 and "VIOLATION double_free" in c.stdout, "check: %s %s" % (c.stdout, c.stderr))
    check("were deleted with segments 1 to" in c.stdout, "check does not say the log was cut:\n" + c.stdout)
    check("went on from checkpoint %s" % ckpts[0] in c.stdout, "check does not say its checkpoint:\n" + c.stdout)
    j = subprocess.run(replay_cmd("check", log, "--json"), capture_output=True, text=True)
    jd = json.loads(j.stdout)
    check(jd["checkpoint"] == ckpts[0] and jd["violation"]["invariant"] == "double_free", "check --json: %s" % jd)
    check("were deleted" in (jd["damage"] or "") and jd["history_lost_at"] is None, "check --json: %s" % jd)
    # Given a later segment, the same.
    c2 = subprocess.run(replay_cmd("check", files[-1]), capture_output=True, text=True)
    check(c2.stdout == c.stdout, "check of the last segment differs:\n%s" % c2.stdout)
    # The report (no model) says the log was cut too.
    rj = subprocess.run(replay_cmd("report", "--json", log), capture_output=True, text=True)
    check("were deleted with segments 1 to" in (json.loads(rj.stdout)["log"]["damage"] or ""), rj.stdout[:600])
    # Without the checkpoints: partial history after the gap, and the free
    # of a block freed in a deleted segment is no finding.
    for f in ckpts:
        os.rename(f, f + ".away")
    n = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(n.returncode == 0 and "events are missing before event" in n.stdout, "without: %s" % n.stdout)
    # A damaged checkpoint: refused (it does not read whole), said, and
    # the check goes on as without one.
    data = bytearray(open(ckpts[0] + ".away", "rb").read())
    open(ckpts[0], "wb").write(data[:len(data) // 2])
    d = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check("checkpoint %s not used" % ckpts[0] in d.stdout, "damaged checkpoint not said: %s" % d.stdout)
    check(d.returncode == 0 and "partial history" in d.stdout, "damaged: %s" % d.stdout)
    os.rename(ckpts[0] + ".away", ckpts[0])
    # A reproducer from the checkpoint: minimize starts every replay from
    # the state and writes it before the events it keeps.
    small = work("ckpt-small.tlog")
    m = subprocess.run(replay_cmd("minimize", log, "-o", small), capture_output=True, text=True)
    check(m.returncode == 1 and "went on from checkpoint" in m.stderr, "minimize: %s %s" % (m.stdout, m.stderr))
    s = subprocess.run(replay_cmd("check", small), capture_output=True, text=True)
    check(s.returncode == 1 and "VIOLATION double_free" in s.stdout and "starts from a replay state" in s.stdout,
          "the reproducer: %s %s" % (s.stdout, s.stderr))
    kept = int(re.search(r"kept in (\d+) of", m.stderr).group(1))
    check(kept <= 10, "the reproducer keeps %d events after the state" % kept)
    # Another model: the state is another replay's, refused with the reason.
    o = subprocess.run(replay_cmd("check", log, "--model", "torch"), capture_output=True, text=True)
    check("saved by a check with other options" in o.stdout and o.returncode == 0, "other options: %s" % o.stdout)


def test_checkpoint_open_op():
    """A pool operation open across every later segment (the follower's
    model gathers it the whole time: no point where no operation is open
    ever comes) and a double free inside it, whose first free was in a
    segment deleted since.  The follower's checkpoints are taken before
    each segment's first event with the operation open, so the newest is
    always beside a segment still on disk; a check of what is left goes on
    from it and finds the double free at the follower's event.  (Checkpoints
    taken at quiet points only: none after the operation began, and the
    program, which waits for a recent checkpoint every 500 iterations,
    gives up after 120 s.)"""
    stem = work("ckop")
    log = stem + ".tlog"
    errs = open(work("ckop.err"), "w+")
    follower = subprocess.Popen(replay_cmd("check", "--follow", log, "--json", "--model", "cupy5"),
                                stdout=subprocess.PIPE, stderr=errs, text=True)
    p = subprocess.run(churn(40000, "--free-again", 40000, 200, "--open-op-from", 300, "--wait-checkpoints", stem),
                       env=traced_env(log, TRACE_MAX_BYTES="256K"), capture_output=True, text=True, timeout=LONG)
    check(p.returncode == 0, "prog_churn: %s" % p.stderr)
    out, err = rest_of(follower, errs)
    doc = json.loads(out.splitlines()[-1])
    fr = doc["follow"]
    print("follower: %d checkpoints, the last %d bytes written in %.1f ms, %d deleted" %
          (fr["checkpoints"], fr["checkpoint_bytes"], fr["checkpoint_write_ns"] / 1e6, fr["checkpoints_deleted"]))
    found = doc.get("violation") or {}
    check(follower.returncode == 1 and found.get("invariant") == "double_free", "follower: %s %s" % (out, err))
    check(doc["history_lost_at"] is None and fr["checkpoint_error"] is None, "follower: %s" % doc)
    files = segments(log)
    ckpts = sorted(glob.glob(stem + ".seg*.tlog.ckpt"))
    check(len(files) >= 3 and os.path.basename(files[1]) != "ckop.seg1.tlog", "no segment deleted: %s" % files)
    check(fr["checkpoints"] >= 3 and fr["checkpoints_deleted"] == fr["checkpoints"] - 1, "checkpoints: %s" % fr)
    check(len(ckpts) == 1 and ckpts[0][:-len(".ckpt")] in files[1:], "checkpoints %s for segments %s" %
          (ckpts, files))
    j = subprocess.run(replay_cmd("check", log, "--json", "--model", "cupy5"), capture_output=True, text=True)
    jd = json.loads(j.stdout) if j.stdout.strip() else {}
    got = jd.get("violation") or {}
    print("check of what is left: %s at %s, from checkpoint %s (state after event %s); the follower's: %s" %
          (got.get("invariant"), got.get("seq"), jd.get("checkpoint"), jd.get("checkpoint_seq"), found.get("seq")))
    check(j.returncode == 1 and got.get("invariant") == "double_free" and got.get("seq") == found.get("seq"),
          "check: %s %s" % (j.stdout[-3000:], j.stderr))
    check(jd.get("checkpoint") == ckpts[0] and "were deleted" in (jd.get("damage") or ""), "check --json: %s" % jd)
    # Without it: no finding, and the verdict says from where the pool
    # model asked for was off (not only that events were deleted).
    os.rename(ckpts[0], ckpts[0] + ".away")
    n = subprocess.run(replay_cmd("check", log, "--model", "cupy5"), capture_output=True, text=True)
    said = n.stdout.strip().splitlines()[-1] if n.stdout.strip() else ""
    print("without the checkpoint:", said)
    check(n.returncode in (0, 3) and not said.startswith("verdict: VIOLATION") and
          re.search(r"the pool models were off from event \d+ on", said), "without: %s" % n.stdout[-2000:])
    os.rename(ckpts[0] + ".away", ckpts[0])


def test_rotation_threads():
    """TRACE_MAX_BYTES with a great many short-lived threads (a ten-hour run
    with a thread per request, a data loader's workers): the files stay
    within the budget, and every event of the kept window has its thread's
    name before it.  A segment's opening restated every THREAD record ever
    written, so it grew with every thread the process had run, dead or
    alive: after 40,000 threads each segment (an eighth of the budget, 16 KiB)
    opened with about 200 KB of names, and the files took 433,092 bytes for a
    budget of 131,072 (now about 111,000)."""
    budget = 128 * 1024
    log = work("rot-threads.tlog")
    p = subprocess.run(churn(40000, "--thread-every", 1), env=traced_env(log, TRACE_MAX_BYTES="128K"),
                       capture_output=True, text=True, timeout=LONG)
    check(p.returncode == 0, "prog_churn failed: %s" % p.stderr[-500:])
    files = segments(log)
    sizes = [os.path.getsize(f) for f in files]
    total = sum(sizes)
    print("%d files, %d bytes on disk for a budget of %d (newest: %s)" % (len(files), total, budget, sizes[-3:]))
    check(len(files) >= 3, "no rotation: %s" % files)
    check(total <= budget + budget // 8, "%d bytes on disk, budget %d: %s" % (total, budget, sizes))
    lines, dump = dump_json(log)
    check(dump.returncode == 1 and "were deleted with segments 1 to" in dump.stderr, dump.stderr)
    # Each short-lived thread marks its own name: the name its tid has at
    # that event is that one (tids are reused, so the latest THREAD record
    # counts), and every event's thread is named.
    names, marks, unnamed = {}, 0, []
    for x in lines:
        if x.get("kind") == "thread":
            names[x["tid"]] = x["name"]
        elif "seq" in x:
            if x["tid"] not in names:
                unnamed.append(x["seq"])
            elif x["kind"] == "mark" and x.get("text", "").startswith("churn-"):
                marks += 1
                check(names[x["tid"]] == x["text"], "event %d of thread %d named %r, marked %r" %
                      (x["seq"], x["tid"], names[x["tid"]], x["text"]))
    check(not unnamed, "%d events of threads without a name, the first %s" % (len(unnamed), unnamed[:5]))
    check(marks > 1000, "only %d marks of short-lived threads kept" % marks)
    c = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(c.returncode == 0 and "were deleted" in c.stdout, "check: exit %d\n%s" % (c.returncode, c.stdout[-1500:]))


def test_rotation_modules():
    """TRACE_MAX_BYTES with a library loaded and unloaded over and over (a
    plugin reloaded through a long run): the files stay within the budget,
    and the modules still loaded resolve the kept events' stacks.  A
    segment's opening restated every MODULE_LOAD and MODULE_UNLOAD ever
    written: after 20,000 reloads of a small library each segment opened
    with their records, and the files took 212,223 bytes for a budget of
    131,072 (segments of 97 KB; now about 123,000)."""
    budget = 128 * 1024
    log = work("rot-modules.tlog")
    lib = os.path.join(ARGS.bin, "libaudit_noop.so")
    p = subprocess.run(churn(20000, "--dlopen", lib), env=traced_env(log, TRACE_MAX_BYTES="128K"),
                       capture_output=True, text=True, timeout=LONG)
    check(p.returncode == 0, "prog_churn failed: %s" % p.stderr[-500:])
    files = segments(log)
    sizes = [os.path.getsize(f) for f in files]
    total = sum(sizes)
    print("%d files, %d bytes on disk for a budget of %d (newest: %s)" % (len(files), total, budget, sizes[-3:]))
    check(len(files) >= 3, "no rotation: %s" % files)
    check(total <= budget + budget // 8, "%d bytes on disk, budget %d: %s" % (total, budget, sizes))
    lines, dump = dump_json(log)
    check(dump.returncode == 1 and "were deleted with segments 1 to" in dump.stderr, dump.stderr)
    kept = [x for x in events_of(lines) if x["kind"] == "mark"]
    check(kept and all(any(f.get("module", "").endswith("prog_churn") for f in x["native_stack"])
                       for x in kept[-50:]), "the last marks' stacks do not resolve to prog_churn")
    c = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(c.returncode == 0 and "were deleted" in c.stdout, "check: exit %d\n%s" % (c.returncode, c.stdout[-1500:]))


def test_interned_bound():
    """A long run whose content to intern never repeats (here a mark text of
    its own each iteration; in Python, the stacks of code made by exec, a
    call site per request): the recorder's intern tables are forgotten once
    they hold 32 MiB (recorder.c INTERNED_MAX), so the traced process stops
    growing, and the log still reads every text.  Without it, 2,000,000
    texts grew the process by about 170 MB over the same run with one text
    (1,000,000: 99 MB peak against 14 MB)."""
    peaks = {}
    for name, extra in (("plain", []), ("unique", ["--unique-marks", 1])):
        log = work("interned-%s.tlog" % name)
        p = subprocess.Popen(churn(2000000, *extra), env=traced_env(log), stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        check(status == 0, "prog_churn %s: status %d" % (name, status))
        peaks[name] = usage.ru_maxrss
    grew = (peaks["unique"] - peaks["plain"]) // 1024
    print("peak RSS: %d KB with one text, %d KB with a text per iteration (+%d MB)" %
          (peaks["plain"], peaks["unique"], grew))
    check(grew < 64, "the traced process grew by %d MB with texts that never repeat" % grew)
    # Every text reads back, defined again after each forgetting (read as
    # it streams: six million events are too many to hold as JSON).
    d = subprocess.Popen([ARGS.trace_dump, "--kinds", "mark", log], stdout=subprocess.PIPE, text=True)
    count, first, last = 0, None, None
    for line in d.stdout:
        at = line.find(" mark text=")
        if at >= 0:
            count += 1
            last = line[at + 11:].split(" native#")[0].strip()
            first = first or last
    check(d.wait() == 0, "trace-dump: exit %d" % d.returncode)
    check(count == 2000000 and first == '"iteration 1, a text of its own"' and
          last == '"iteration 2000000, a text of its own"', "marks: %d, first %s, last %s" % (count, first, last))


def said_by(env_log, argv, **settings):
    """Run a traced prog_churn with its warnings and exit line on stderr:
    (status, stderr, the log's path from the exit line)."""
    env = traced_env(env_log, TRACE_QUIET="0", TRACE_EXIT_LINE="1", **settings)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=LONG)
    m = re.search(r"^trace: \d+ events -> (.*)$", p.stderr, re.M)
    return p.returncode, p.stderr, m.group(1) if m else None


def test_rotation_stale():
    """A log name used again beside segment files another run left under it
    (its first file removed: "rm trace.tlog" and the same command again).
    The new run takes the next free name, as it does when the first file
    exists (docs/settings.md), touches none of the other run's files, and
    keeps its own log within the budget to its END: it went on into the
    other run's seg1 (said "cannot create the next segment: File exists; the
    log goes on in" that file, not the current one), then lost it (Stale
    file handle) and stopped tracing.  A segment name taken after the log
    started: the log goes on in its current segment, and the warning names
    both files; the reader stops at the END and does not read the other
    file as a damaged part of this log."""
    stale = work("stale.tlog")
    code, err, first = said_by(stale, churn(60000), TRACE_MAX_BYTES="96K")
    check(code == 0 and first == stale and len(segments(stale)) >= 3, "first run: %s %s" % (err, segments(stale)))
    left = segments(stale)[1:]
    os.remove(stale)
    if not os.path.exists(work("stale.seg1.tlog")):
        shutil.copyfile(left[-1], work("stale.seg1.tlog"))
        left.insert(0, work("stale.seg1.tlog"))
    before = {f: (os.path.getsize(f), os.stat(f).st_mtime_ns) for f in left}
    code, err, log = said_by(stale, churn(60000), TRACE_MAX_BYTES="96K")
    check(code == 0, "second run: exit %d: %s" % (code, err))
    check("cannot create" not in err and "lost" not in err and "tracing stopped" not in err,
          "second run beside another run's segments:\n" + err)
    check(log == work("stale.1.tlog"), "second run's log: %s, not the next free name\n%s" % (log, err))
    check(before == {f: (os.path.getsize(f), os.stat(f).st_mtime_ns) for f in left},
          "the other run's segments were touched")
    files = segments(log)
    total = sum(os.path.getsize(f) for f in files)
    check(len(files) >= 3 and total <= 96 * 1024 + 12 * 1024, "second run: %d bytes in %s" % (total, files))
    s = subprocess.run([ARGS.trace_dump, "--summary", log], capture_output=True, text=True)
    check("not a segment of this log" not in s.stdout + s.stderr and "without an END" not in s.stdout,
          "second run's log:\n" + s.stdout + s.stderr)
    c = subprocess.run(replay_cmd("check", log), capture_output=True, text=True)
    check(c.returncode == 0 and "not a segment of this log" not in c.stdout, c.stdout[-1500:])
    # A segment's name taken while the log is written (after its first
    # file was made, before its first rotation: the program waits at its
    # first double free, iteration 20, the first block freed at 16).
    mid, go = work("mid.tlog"), work("mid.go")
    env = traced_env(mid, TRACE_QUIET="0", TRACE_EXIT_LINE="1", TRACE_MAX_BYTES="96K", TRACE_FLUSH_MS="1")
    errs = open(work("mid.err"), "w+")
    p = subprocess.Popen(churn(60000, "--double-free-at", 20, "--wait-file", go), env=env, stdout=subprocess.DEVNULL,
                         stderr=errs)
    deadline = time.monotonic() + LONG
    while not os.path.exists(mid) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.005)
    check(os.path.exists(mid), "no log at %s" % mid)
    shutil.copyfile(left[0], work("mid.seg1.tlog"))
    open(go + "-1", "w").close()
    check(p.wait(timeout=LONG) == 0, "prog_churn failed")
    errs.seek(0)
    err = errs.read()
    want = "cannot create the next segment %s: File exists; the log goes on in %s, past TRACE_MAX_BYTES" % (
        work("mid.seg1.tlog"), mid)
    check(want in err and "lost" not in err and "tracing stopped" not in err and "-> %s\n" % mid in err,
          "a segment's name taken during the run:\n" + err)
    lines, dump = dump_json(mid)
    check(lines and lines[-1].get("kind") == "end", "the log does not end with END: %s" % dump.stderr)
    check(dump.returncode == 0 and "not a segment of this log" not in dump.stderr, dump.stderr)
    seqs = [x["seq"] for x in events_of(lines)]
    check(seqs == list(range(1, len(seqs) + 1)), "events missing from the log")


TESTS = {"checkpoint": test_checkpoint, "checkpoint_open_op": test_checkpoint_open_op, "running": test_running, "continue": test_continue, "stop": test_stop, "stop_job": test_stop_job,
         "abort": test_abort,
         "gone": test_gone, "rotation": test_rotation, "rotation_threads": test_rotation_threads, "rotation_modules": test_rotation_modules, "interned_bound": test_interned_bound, "rotation_follower": test_rotation_follower,
         "rotation_stale": test_rotation_stale}


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("name", choices=sorted(TESTS))
    for opt in ("--preload", "--bin", "--doubles", "--work", "--trace-replay", "--trace-dump", "--trace-run"):
        p.add_argument(opt, required=True)
    ARGS = p.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    os.environ["TRACE_REPLAY"] = ARGS.trace_replay
    os.environ["TRACE_LIB"] = ARGS.preload.split(":")[-1]
    TESTS[ARGS.name]()
    print("ok")


if __name__ == "__main__":
    main()
