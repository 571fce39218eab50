#!/usr/bin/env python3
"""Runs one CUDA/recorder test: a program under LD_PRELOAD=libtrace.so with
the CUDA test doubles, then checks the decoded log (tlog_events: JSON lines).

    cuda_test.py NAME --preload P --bin DIR --doubles DIR --work DIR
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ARGS = None


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def prog(name):
    return os.path.join(ARGS.bin, name)


def env_for(traced=True, doubles=True, **settings):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if traced:
        env["LD_PRELOAD"] = ARGS.preload
    if doubles:
        env["LD_LIBRARY_PATH"] = ARGS.doubles
    else:
        env.pop("LD_LIBRARY_PATH", None)
    env.setdefault("TRACE_OUTPUT", os.path.join(ARGS.work, "trace-%p.tlog"))
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run(cmd, env, timeout=300):
    p = subprocess.run(cmd, env=env, cwd=ARGS.work, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def logs():
    return sorted(glob.glob(os.path.join(ARGS.work, "trace-*.tlog")))


def only_log():
    found = logs()
    check(len(found) == 1, "expected one log, found %s" % found)
    return found[0]


def decode(path):
    out = subprocess.run([prog("tlog_events"), path], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def of_type(records, kind):
    return [r for r in records if r["type"] == kind]


def events(records, *kinds):
    return [r for r in of_type(records, "event") if not kinds or r["kind"] in kinds]


def cuda_events(records):
    return events(records, "cuda_alloc", "cuda_free")


def printed_calls(stdout):
    """'api result ptr' lines the programs print."""
    calls = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith("cu") and parts[1].lstrip("-").isdigit():
            calls.append((parts[0], int(parts[1]), int(parts[2])))
    return calls


def match_calls(records, calls, exe):
    """Each printed call is one event, in order, with its result and pointer;
    nothing else was recorded; stacks start in the program itself."""
    evs = cuda_events(records)
    got = [(e["api"], e["result"], e["ptr"]) for e in evs]
    check(got == calls, "events %s\n  != calls %s" % (got, calls))
    for e in evs:
        check(e["depth"] > 0 and e["top"].endswith(exe),
              "stack of seq %d starts in %r, not %s" % (e["seq"], e["top"], exe))
        check(e["device"] == expected_device(e), "device of %s" % e)
    return evs


# The doubles' current device is 0; the virtual-memory calls have none.
NO_DEVICE = ("cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree")


def expected_device(e):
    if e["api"] == "cuMemCreate":
        return e["device"]          # from the call's properties, checked by the test
    return 0 if e["result"] == 0 and e["api"] not in NO_DEVICE else -1


def status(records):
    return of_type(records, "status")[0]


# ---------------------------------------------------------------- tests

def test_runtime():
    rc, out, err = run([prog("prog_runtime")], env_for())
    check(rc == 0, "exit %d: %s" % (rc, err))
    calls = printed_calls(out)
    check(len(calls) == 11, "calls: %s" % out)
    records = decode(only_log())
    evs = match_calls(records, calls, "prog_runtime")
    by_api = {e["api"]: e for e in evs}
    check(by_api["cudaMallocPitch"]["size"] == 1024 * 10, "pitch size")
    check(by_api["cudaMallocAsync"]["stream"] == 0x5eed, "stream")
    check(by_api["cudaHostAlloc"]["flags"] == 1, "flags")
    check(evs[-1]["result"] == 2 and evs[-1]["size"] == 1 << 50, "failed call recorded")
    check(evs[0]["device"] == 0 and evs[-1]["device"] == -1, "devices")
    check(status(records)["clean_end"] == 1, "clean end")
    infos = {i["key"]: i["value"] for i in of_type(records, "info")}
    check(infos.get("cuda_driver_version") == "13000", "driver version: %s" % infos)
    check(infos.get("cuda_runtime", "").endswith("/libcudart.so.13 version=13000"),
          "runtime: %s" % infos)


def test_real_runtime():
    rc, out, err = run([prog("prog_runtime_real")], env_for(doubles=False))
    check(rc == 0, "exit %d: %s" % (rc, err))
    calls = printed_calls(out)
    check(len(calls) == 11 and calls[0] == ("cudaMalloc", 35, 0), "calls: %s" % out)
    records = decode(only_log())
    match_calls(records, calls, "prog_runtime_real")
    infos = {i["key"]: i["value"] for i in of_type(records, "info")}
    check("libcudart.so.13 version=" in infos.get("cuda_runtime", ""), "runtime: %s" % infos)


def test_driver_procaddr():
    rc, out, err = run([prog("prog_driver_procaddr")], env_for())
    check(rc == 0 and "missing" not in out, "exit %d: %s %s" % (rc, out, err))
    check("export_table 42" in out, "cuGetExportTable was not passed through: %s" % out)
    calls = printed_calls(out)
    check(len(calls) == 16, "calls: %s" % out)
    records = decode(only_log())
    evs = match_calls(records, calls, "prog_driver_procaddr")
    by_api = {e["api"]: e for e in evs}
    check(by_api["cuMemMap"]["stream"] == by_api["cuMemCreate"]["ptr"], "map carries handle")
    check(by_api["cuMemCreate"]["device"] == 0, "create's device from its properties")
    check(by_api["cuMemCreate"]["kind"] == "cuda_alloc" and
          by_api["cuMemRelease"]["kind"] == "cuda_free", "create/release kinds")


def test_driver_exports():
    """cuGetProcAddress handing out the driver's exports (our wrappers, under
    the preload) from a libcuda opened RTLD_LOCAL: still one event per call,
    each reaching the real function."""
    env = env_for()
    env["LD_LIBRARY_PATH"] = ARGS.doubles_exports
    rc, out, err = run([prog("prog_driver_procaddr")], env)
    check(rc == 0 and "missing" not in out, "exit %d: %s %s" % (rc, out, err))
    calls = printed_calls(out)
    check(len(calls) == 16 and all(r == 0 for _, r, _ in calls), "calls: %s" % out)
    match_calls(decode(only_log()), calls, "prog_driver_procaddr")


def test_entrypoint():
    rc, out, err = run([prog("prog_entrypoint")], env_for())
    check(rc == 0, "exit %d: %s" % (rc, err))
    records = decode(only_log())
    evs = match_calls(records, printed_calls(out), "prog_entrypoint")
    check(len(evs) == 3 and evs[2]["device"] == 3, "events: %s" % evs)


def test_ctypes():
    rc, out, err = run([sys.executable, ARGS.ctypes_script, ARGS.doubles],
                       env_for(TRACE_PYTHON=0))
    check(rc == 0, "exit %d: %s" % (rc, err))
    calls = printed_calls(out)
    check(len(calls) == 4, "calls: %s" % out)
    evs = cuda_events(decode(only_log()))
    got = [(e["api"], e["result"], e["ptr"]) for e in evs]
    check(got == calls, "events %s != calls %s" % (got, calls))


def test_threads():
    rc, out, err = run([prog("prog_threads"), "16", "50000"], env_for(), timeout=580)
    check(rc == 0 and "done 16 x 50000" in out, "exit %d: %s" % (rc, err))
    p = subprocess.run([prog("check_order"), only_log()], capture_output=True, text=True)
    check(p.returncode == 0, "order: %s" % p.stdout)
    check(p.stdout.split() == ["800000", "800000", "clean_end=1", "truncated=0", "corrupt=0"],
          "counts: %s" % p.stdout)


def test_fork():
    rc, out, err = run([prog("prog_fork")], env_for())
    check(rc == 0, "exit %d: %s" % (rc, err))
    lines = [l.split() for l in out.splitlines()]
    parent_pid = int(lines[0][1])
    child_pid = next(int(l[1]) for l in lines if l[0] == "child")
    found = logs()
    check(len(found) == 2, "logs: %s" % found)
    by_pid = {}
    for path in found:
        records = decode(path)
        header = of_type(records, "header")[0]
        check(path.endswith("trace-%d.tlog" % header["pid"]), "name of %s" % path)
        by_pid[header["pid"]] = records
    child = by_pid[child_pid]
    check(of_type(child, "header")[0]["ppid"] == parent_pid, "child's ppid")
    for pid, who in ((parent_pid, "parent"), (child_pid, "child")):
        want = [int(l[3]) for l in lines if l[0] == who]
        got = [e["ptr"] for e in cuda_events(by_pid[pid])]
        check(got == want, "%s's log has %s, expected %s" % (who, got, want))
        check(status(by_pid[pid])["clean_end"] == 1, who + " clean end")
        check(any(m["path"].endswith("prog_fork") for m in of_type(by_pid[pid], "module")),
              who + "'s modules")


def test_kill9():
    env = env_for()
    proc = subprocess.Popen([prog("prog_progress")], env=env, cwd=ARGS.work,
                            stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    killed_at = time.monotonic_ns()
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    printed = [tuple(map(int, l.split())) for l in out.splitlines() if len(l.split()) == 2]
    must = {i for i, t in printed if t < killed_at - 200_000_000}
    check(len(must) > 100, "too little progress before the kill: %d" % len(must))
    records = decode(only_log())
    marks = {int(e["text"]) for e in events(records, "mark")}
    lost = sorted(must - marks)
    check(not lost, "%d marks older than 200 ms lost, first %s" % (len(lost), lost[:5]))
    check(status(records)["clean_end"] == 0, "no END after SIGKILL")
    print("marks printed %d, older than 200 ms %d, in log %d" % (len(printed), len(must),
                                                                  len(marks)))


def untraced_baseline():
    return run([prog("prog_exit")], env_for(traced=False))


def test_unwritable():
    base_rc, base_out, base_err = untraced_baseline()
    check(base_rc == 3, "baseline exit %d" % base_rc)
    existing = os.path.join(ARGS.work, "existing.tlog")
    with open(existing, "w") as f:
        f.write("keep me")
    dangling = os.path.join(ARGS.work, "dangling.tlog")
    os.symlink(os.path.join(ARGS.work, "symlink-target"), dangling)
    for output in ("/nonexistent-dir/sub/trace.tlog", existing, dangling, ARGS.work):
        rc, out, err = run([prog("prog_exit")], env_for(TRACE_OUTPUT=output))
        check(rc == base_rc and out == base_out, "%s: exit %d, output %r" % (output, rc, out))
        lines = err.splitlines()
        check(len(lines) == 1 and lines[0].startswith("trace: "),
              "%s: expected one warning, got %r" % (output, err))
    with open(existing) as f:
        check(f.read() == "keep me", "an existing file was written to")
    check(not os.path.exists(os.path.join(ARGS.work, "symlink-target")), "followed a symlink")
    check(not logs(), "stray logs: %s" % logs())


def test_pool_api():
    rc, out, err = run([prog("prog_pool")], env_for(traced=False))
    check(rc == 0 and out == "pool=0 traced=0\n", "untraced: %d %r %r" % (rc, out, err))
    check(not logs(), "untraced run wrote a log")
    rc, out, err = run([prog("prog_pool")], env_for())
    check(rc == 0 and out == "pool=1 traced=1\n", "traced: %d %r %r" % (rc, out, err))
    records = decode(only_log())
    evs = events(records)
    kinds = [e["kind"] for e in evs]
    check(kinds == ["pool_op_begin", "cuda_alloc", "pool_segment", "pool_alloc", "pool_op_end",
                    "mark", "pool_op_begin", "pool_free", "pool_op_end", "pool_segment",
                    "cuda_free", "end"], "kinds: %s" % kinds)
    b1, b2 = evs[0]["seq"], evs[6]["seq"]
    check([e["parent"] for e in evs] == [0, b1, b1, b1, 0, 0, 0, b2, 0, 0, 0, 0],
          "parents: %s" % [e["parent"] for e in evs])
    check(evs[4]["begin"] == b1 and evs[8]["begin"] == b2, "op_end names its begin")
    check(evs[0]["op"] == 1 and evs[0]["arg"] == 1000, "op_begin fields")
    check(evs[3]["requested"] == 1000 and evs[3]["granted"] == 1024 and evs[3]["stream"] == 7,
          "pool_alloc fields")
    check(evs[5]["text"] == "between", "mark text")
    check(all(e["depth"] > 0 and e["top"].endswith("prog_pool") for e in evs[:-1]), "stacks")
    pools = of_type(records, "pool")
    check(pools and pools[0]["name"] == "toy-pool", "pool name: %s" % pools)


def test_signal_handler():
    rc, out, err = run([prog("prog_signal"), "handler"], env_for())
    check(rc == 7, "exit %d (the app's handler exits 7): %r %r" % (rc, out, err))
    check("reads back own handler: 1" in out and "app handler ran" in out, "output %r" % out)
    records = decode(only_log())
    check([e["api"] for e in cuda_events(records)] == ["cudaMalloc"], "event flushed")
    infos = {i["key"]: i["value"] for i in of_type(records, "info")}
    check(infos.get("fatal_signal") == "SIGSEGV", "infos: %s" % infos)


def test_signal_abort():
    rc, out, err = run([prog("prog_signal"), "abort"], env_for())
    check(rc == -signal.SIGABRT, "exit %d, expected death by SIGABRT" % rc)
    records = decode(only_log())
    check([e["api"] for e in cuda_events(records)] == ["cudaMalloc"], "event flushed")
    infos = {i["key"]: i["value"] for i in of_type(records, "info")}
    check(infos.get("fatal_signal") == "SIGABRT", "infos: %s" % infos)


def test_modules():
    rc, out, err = run([prog("prog_dlopen")], env_for())
    check(rc == 0, "exit %d: %s" % (rc, err))
    mods = of_type(decode(only_log()), "module")
    by_name = {os.path.basename(m["path"]): m for m in mods}
    cuda = by_name.get("libcuda.so.1")
    check(cuda is not None, "dlopened library not recorded: %s" % list(by_name))
    check(cuda["build_id_len"] > 0 and cuda["segments"] > 0, "build-id/segments: %s" % cuda)
    check(cuda["loaded"] == 0, "dlclose not recorded as an unload")
    exe = by_name.get("prog_dlopen")
    check(exe and exe["loaded"] == 1 and exe["build_id_len"] > 0, "main program: %s" % exe)
    check("libtrace.so" in by_name, "libtrace.so itself")


def test_runpath():
    """A bare name the program's RUNPATH finds is still found under the preload."""
    rc, out, err = run([prog("prog_runpath")], env_for(doubles=False))
    check(rc == 0 and out == "ok\n", "exit %d: %r %r" % (rc, out, err))
    mods = of_type(decode(only_log()), "module")
    check(any(m["path"].endswith("/doubles/libcuda.so.1") for m in mods), "module recorded")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def test_secure():
    """A setuid program run by another user: the tracer refuses, once."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        skip("needs root and setpriv to run a setuid copy as another user")
    os.chmod(ARGS.work, 0o777)          # so a log could be written if we did not refuse
    plain = os.path.join(ARGS.work, "prog_plain")
    setuid = os.path.join(ARGS.work, "prog_setuid")
    for copy in (plain, setuid):
        shutil.copy(prog("prog_secure"), copy)
    os.chmod(setuid, 0o4755)
    as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = env_for(traced=False)
    rc, out, err = run(as_nobody + [plain], env)
    check(rc == 0 and out == "secure=0\n" and len(logs()) == 1,
          "control run (not setuid) should trace: %d %r %r %s" % (rc, out, err, logs()))
    os.unlink(logs()[0])
    rc, out, err = run(as_nobody + [setuid], env)
    if out == "secure=0\n":
        skip("setuid bits are ignored here (nosuid mount or no_new_privs)")
    check(rc == 0 and out == "secure=1\n", "exit %d, output %r" % (rc, out))
    lines = err.splitlines()
    check(len(lines) == 1 and "secure-execution" in lines[0], "one warning: %r" % err)
    check(not logs(), "a secure-execution process wrote %s" % logs())


def test_settings():
    rc, out, err = run([prog("prog_exit")], env_for(TRACE_STACK_DEPTH=3))
    lines = err.splitlines()
    path = only_log()
    check(len(lines) == 1 and lines[0] == "trace: 3 events -> %s" % path,
          "exit line: %r" % err)
    records = decode(path)
    check("stack_depth=3" in of_type(records, "header")[0]["settings"], "settings in header")
    check(all(0 < e["depth"] <= 3 for e in cuda_events(records)), "depth limit")
    os.unlink(path)
    rc, out, err = run([prog("prog_exit")], env_for(TRACE_QUIET=1, TRACE_STACK_DEPTH="x"))
    check(err == "" and rc == 3, "quiet: %r" % err)
    check(all(e["depth"] > 3 for e in cuda_events(decode(only_log()))), "default depth kept")
    os.unlink(only_log())
    rc, out, err = run([prog("prog_exit")], env_for(TRACE_STACK_DEPTH="x"))
    check(err.startswith("trace: ignoring TRACE_STACK_DEPTH=x"), "bad value: %r" % err)
    os.unlink(only_log())
    rc, out, err = run([prog("prog_exit")],
                       env_for(TRACE_OUTPUT=os.path.join(ARGS.work, "x-%p-%%.log")))
    found = glob.glob(os.path.join(ARGS.work, "x-*-%.log"))
    check(len(found) == 1, "%%p expansion: %s" % os.listdir(ARGS.work))
    os.unlink(found[0])
    elsewhere = os.path.join(ARGS.work, "elsewhere")
    os.mkdir(elsewhere)
    rc, out, err = run([prog("prog_exit"), elsewhere], env_for(TRACE_OUTPUT="rel-%p.tlog"))
    found = glob.glob(os.path.join(ARGS.work, "rel-*.tlog"))
    check(rc == 3 and len(found) == 1 and not os.listdir(elsewhere),
          "relative TRACE_OUTPUT is relative to the start directory: %s %s" %
          (os.listdir(ARGS.work), os.listdir(elsewhere)))
    check(err == "trace: 3 events -> %s\n" % found[0], "absolute path in the exit line: %r" % err)
    os.unlink(found[0])
    os.rmdir(elsewhere)
    rc, out, err = run(["/bin/sh", "-c", "true"], env_for())
    check(rc == 0 and err == "" and not os.listdir(ARGS.work),
          "a process with no events left %r, said %r" % (os.listdir(ARGS.work), err))
    # A shell that forks before exec'ing the program under its own pid: the
    # program, not the shell, owns trace-<pid>.tlog.
    rc, out, err = run(["/bin/sh", "-c", "/bin/true; exec %s" % prog("prog_exit")], env_for())
    check(rc == 3 and err.startswith("trace: 3 events -> "),
          "shell, then exec: %r %s" % (err, os.listdir(ARGS.work)))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--doubles", required=True)
    ap.add_argument("--doubles-exports", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ctypes-script", required=True)
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    globals()["test_" + ARGS.name]()
    print("ok")


if __name__ == "__main__":
    main()
