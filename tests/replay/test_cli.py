#!/usr/bin/env python3
"""trace-replay's command line on real logs: exit codes, the JSON document,
byte-identical output, explore, minimize, stats, --pool, leaks.

Logs are written by mklog from the scenario files (tests/replay/scenarios)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from perfetto_read import read_perfetto  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(args, **kw):
    # The logs' fake module, for the stacks that say where a collection ran.
    if args and args[0] in ("check", "stats", "explore", "minimize", "report"):
        args = args + ["--debug-dir", os.path.dirname(A.libpool)]
    return subprocess.run([A.replay] + args, capture_output=True, **kw)


def symbol_ip(name):
    """Where mklog's module (at 0x400000) has function name."""
    out = subprocess.run(["nm", A.libpool], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return 0x400000 + int(parts[0], 16)
    raise SystemExit("%s has no %s" % (A.libpool, name))


def mklog(name, tmp):
    """The scenario as a log; 0x401800 in a stack stands for
    append_to_free_list (as test_driver's fake symbolisation has it): a
    return address inside it, one past its first byte, since every frame of
    a recorded stack is a return address (the innermost too)."""
    out = os.path.join(tmp, name.replace(".txt", ".log"))
    text = open(os.path.join(A.scenarios, name)).read()
    scenario = os.path.join(tmp, name)
    with open(scenario, "w") as f:
        f.write(text.replace("0x401800", hex(symbol_ip("append_to_free_list") + 1)))
    subprocess.run([A.mklog, scenario, out], check=True)
    return out


def doc(args):
    p = run(args + ["--json"])
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        check(False, "JSON parses: %s -> %r" % (args, p.stdout[:200]))
        return p.returncode, {}


def exit_codes(tmp):
    story = mklog("cupy5_reentry.txt", tmp)
    check(run(["check", story, "--model", "cupy5"]).returncode == 1, "cupy5 finds the story: exit 1")
    check(run(["check", story, "--model", "cupy"]).returncode == 0, "cupy is clean: exit 0")
    check(run(["check", story, "--model", "none"]).returncode == 0, "model-free only: exit 0")
    check(run(["check", story, "--model", "auto"]).returncode == 0, "auto: pool 'cupy' gets cupy: exit 0")
    check(run(["check", os.path.join(tmp, "missing.log")]).returncode == 2, "missing log: exit 2")
    junk = os.path.join(tmp, "junk.log")
    with open(junk, "wb") as f:
        f.write(b"this is not a log\n" * 10)
    check(run(["check", junk]).returncode == 2, "not a log: exit 2")
    check(run(["check", story, "--model", "nosuch"]).returncode == 2, "unknown model: exit 2")
    check(run(["frobnicate", story]).returncode == 2, "unknown command: exit 2")
    check(run(["check"]).returncode == 2, "no log: exit 2")
    check(run(["minimize", story]).returncode == 2, "minimize without -o: exit 2")
    check(run(["minimize", story, "--max-replays", "0", "-o", os.path.join(tmp, "m0.log")]).returncode == 2,
          "minimize --max-replays 0: exit 2")
    for name, inv in [("overlap.txt", "overlap"), ("double_free.txt", "double_free"),
                      ("unknown_free.txt", "free_unknown"), ("outside_segment.txt", "outside_segment"),
                      ("segment_in_use.txt", "segment_in_use")]:
        rc, d = doc(["check", mklog(name, tmp)])
        check(rc == 1 and d.get("violation", {}).get("invariant") == inv, "%s: %s, exit 1" % (name, inv))


def json_shape(tmp):
    story = mklog("cupy5_reentry.txt", tmp)
    rc, d = doc(["check", story, "--model", "cupy5"])
    for k in ["events", "model", "peak_reserved", "peak_allocated", "fidelity", "violation", "warnings"]:
        check(k in d, "JSON has %s" % k)
    check(d.get("model") == "cupy5", "model named")
    check(set(d.get("fidelity", {})) >= {"matched", "diverged"}, "fidelity has matched and diverged")
    check(d.get("fidelity", {}).get("diverged") == 0, "story replays without divergence")
    v = d.get("violation") or {}
    for k in ["seq", "invariant", "message", "op", "nested_in", "native_stack", "py_stack"]:
        check(k in v, "violation has %s" % k)
    check(v.get("invariant") == "sorted_index" and v.get("seq") == 15, "sorted_index at seq 15")
    check((v.get("op") or {}).get("seq") == 9 and v["op"].get("kind") == "free", "op is the outer free")
    frames = v.get("native_stack") or []
    check(len(frames) == 2, "native stack of the violating event")
    if frames:
        check(set(frames[0]) >= {"ip", "module", "offset", "function", "file", "line"}, "native frame keys")
        check(frames[0]["ip"] == "0x401234" and frames[0]["module"] == "/opt/fake/libpool.so"
              and frames[0]["offset"] == "0x1234", "native frame resolved to module+offset")
    py = v.get("py_stack") or []
    check(len(py) == 1 and set(py[0]) >= {"file", "line", "function"} and py[0]["file"] == "app.py",
          "python frame")
    re = (v.get("reentries") or [{}])[0]
    check(re.get("gc_seq") == 10 and "set()" in (re.get("point") or ""), "re-entry at set() by collection 10")
    check(len((re.get("gc") or {}).get("native_stack") or []) == 3, "the collection's own stack")
    rc, d = doc(["check", story, "--model", "cupy"])
    check(rc == 0 and d.get("violation") is None and d.get("status") == "clean", "clean document")


def determinism(tmp):
    story = mklog("cupy5_reentry.txt", tmp)
    noisy = mklog("cupy5_noisy.txt", tmp)
    clean = mklog("cupy5_clean.txt", tmp)
    for args in (["check", story, "--model", "cupy5"], ["check", story, "--model", "cupy5", "--json"],
                 ["stats", noisy, "--json"], ["explore", clean, "--model", "cupy5", "--json"],
                 ["check", noisy, "--model", "cupy5", "--paranoid"]):
        outs = {run(args).stdout for _ in range(3)}
        check(len(outs) == 1, "byte-identical output: %s" % args[0])


def explore(tmp):
    clean = mklog("cupy5_clean.txt", tmp)
    check(run(["check", clean, "--model", "cupy5"]).returncode == 0, "the clean run is clean")
    rc, d = doc(["explore", clean, "--model", "cupy5"])
    found = (d.get("explore") or {}).get("found") or {}
    check(rc == 1 and found.get("invariant") == "sorted_index", "explore finds the story in a clean run")
    check(found.get("gc_seq") == 16 and found.get("injected_frees") == ["0x200000"], "injected the later gc's free")
    rc, d = doc(["explore", clean, "--model", "cupy"])
    check(rc == 0 and (d.get("explore") or {}).get("found") is None, "cupy: nothing to find")


def minimize(tmp):
    noisy = mklog("cupy5_noisy.txt", tmp)
    out = os.path.join(tmp, "min.log")
    p = run(["minimize", noisy, "--model", "cupy5", "-o", out])
    check(p.returncode == 1 and os.path.exists(out), "minimize writes a log")
    rc, d = doc(["check", out, "--model", "cupy5"])
    check(rc == 1 and (d.get("violation") or {}).get("invariant") == "sorted_index",
          "the minimized log breaks the same invariant")
    check(d.get("events", 99) <= 17, "minimized to at most 17 events (got %s)" % d.get("events"))
    rc2, d2 = doc(["check", out, "--model", "none"])
    check(d2.get("clean_end") is True, "minimized log ends with END")
    frames = (d.get("violation") or {}).get("native_stack") or []
    check(len(frames) == 2 and frames[0]["module"] == "/opt/fake/libpool.so", "stacks and modules re-interned")
    if A.dump and os.path.exists(A.dump):
        p = subprocess.run([A.dump, out], capture_output=True)
        check(p.returncode == 0, "trace-dump reads the minimized log")
    # Two libraries loaded in turn at one base: the minimized log keeps each
    # stack's frames in the library that held them (old: every module was
    # written loaded at the start, and both stacks read as the later one's).
    if A.dump and os.path.exists(A.dump):
        scenario = os.path.join(A.scenarios, "reload_double_free.txt")
        reload_log, out = os.path.join(tmp, "reload.log"), os.path.join(tmp, "reload-min.log")
        subprocess.run([A.mklog, scenario, reload_log, "--reload-at", "3"], check=True)
        p = run(["minimize", reload_log, "-o", out])
        check(p.returncode == 1 and os.path.exists(out), "minimize of the reload log writes a log")
        mods = {}
        for name in (reload_log, out):
            p = subprocess.run([A.dump, "--json", name], capture_output=True, text=True)
            for line in p.stdout.splitlines():
                e = json.loads(line)
                if e.get("kind") in ("cuda_alloc", "cuda_free") and e.get("ptr") == 0x7000000:
                    mods.setdefault(name, []).append((e["native_stack"] or [{}])[0].get("module"))
        want = ["/opt/fake/libpool.so", "/opt/fake/libpool_v2.so", "/opt/fake/libpool_v2.so"]
        check(mods.get(reload_log) == want, "reload log: modules %s" % mods.get(reload_log))
        check(mods.get(out) == want, "minimized reload log: modules %s, expected %s" % (mods.get(out), want))
    clean = mklog("cupy5_clean.txt", tmp)
    p = run(["minimize", clean, "--model", "cupy5", "-o", os.path.join(tmp, "none.log")])
    check(p.returncode == 0, "minimize of a clean log: exit 0, nothing to do")


def stats_pool_leaks(tmp):
    noisy = mklog("cupy5_noisy.txt", tmp)
    rc, d = doc(["stats", noisy])
    s = d.get("stats") or {}
    check(isinstance(s.get("series"), list) and len(s["series"]) >= 2, "stats: a series over time")
    check(isinstance(s.get("segment_sizes"), list) and s["segment_sizes"], "stats: segment sizes")
    check(d.get("peak_reserved", 0) >= 8192 + 1536 + 512 and d.get("pools"), "stats: peaks and pools")
    story = mklog("cupy5_reentry.txt", tmp)
    p = run(["check", story, "--model", "cupy5", "--pool", "2"])
    check(p.returncode == 2 and b'--pool 2: the log has no such pool (pools: 1 "cupy")' in p.stderr,
          "--pool 2: no such pool in the log, a usage error: %r" % p.stderr)
    check(run(["check", story, "--model", "cupy5", "--pool", "1"]).returncode == 1, "--pool 1 by id")
    check(run(["check", story, "--model", "cupy5", "--pool", "cupy"]).returncode == 1, "--pool cupy by name")
    rc, d = doc(["check", mklog("leak.txt", tmp)])
    kinds = [w["invariant"] for w in d.get("warnings", [])]
    check(rc == 0 and kinds == ["alloc_failed", "live_at_end", "live_at_end"], "leaks are warnings: %s" % kinds)


def damaged(tmp):
    log = os.path.join(tmp, "gen.log")
    subprocess.run([A.gen, log, "200000"], check=True, capture_output=True)
    cut = os.path.join(tmp, "cut.log")
    with open(log, "rb") as f, open(cut, "wb") as g:
        data = f.read()
        g.write(data[: len(data) * 2 // 3])
    rc, d = doc(["check", cut, "--model", "cupy"])
    check(rc == 0 and d.get("clean_end") is False and d.get("damage"), "a cut log replays as far as it reads")
    check(0 < d.get("events", 0) < 200000, "and says how far (%s events)" % d.get("events"))
    check(not d.get("warnings"), "no leak report without a clean end")
    # A frame lost whole (as one overwritten at an exec was): the frames
    # around it read as whole.  Before, the log read as clean and the hole
    # (a free) made an overlap the program never had.
    whole = os.path.join(tmp, "frame_lost.log")
    text = os.path.join(A.scenarios, "frame_lost.txt")
    starts = [int(x) for x in subprocess.run([A.mklog, text, whole, "--frame-each"], check=True,
                                             capture_output=True, text=True).stdout.split()]
    rc, d = doc(["check", whole])
    check(rc == 0 and d.get("damage") is None, "frame_lost.txt whole: clean, no damage: %d %s" % (rc, d.get("damage")))
    lost = os.path.join(tmp, "frame_lost_cut.log")
    with open(whole, "rb") as f, open(lost, "wb") as g:
        data = f.read()
        g.write(data[: starts[1]] + data[starts[2]:])   # frame 1: event 2, the free
    rc, d = doc(["check", lost])
    want = "event 2 missing (a gap in seq before frame 1)"
    check(rc == 0 and not d.get("violation") and d.get("damage") == want and d.get("history_lost_at") == 3,
          "a frame cut out: damage, partial history from the event after it, no overlap: %d %s %s %s" %
          (rc, d.get("damage"), d.get("history_lost_at"), d.get("violation")))
    check(want in (d.get("verdict") or {}).get("text", ""), "the verdict says so: %s" % d.get("verdict"))
    if A.dump:
        p = subprocess.run([A.dump, lost], capture_output=True, text=True)
        check(p.returncode == 1 and want in p.stderr, "trace-dump: damage: %d %r" % (p.returncode, p.stderr))


def generated(tmp):
    log = os.path.join(tmp, "gen.log")
    subprocess.run([A.gen, log, "20000"], check=True, capture_output=True)
    rc, d = doc(["check", log, "--model", "cupy", "--paranoid"])
    check(rc == 0 and d.get("fidelity", {}).get("diverged") == 0 and d["fidelity"]["matched"] > 1000,
          "generated log: cupy follows it exactly")
    rc, d = doc(["explore", log, "--model", "cupy5"])
    check(rc in (0, 1) and (d.get("explore") or {}).get("probes", 0) > 0, "explore probes a generated log")


def one_nesting(tmp):
    """An operation that raised is left when the next one of its pool
    begins, for every command alike (one walker)."""
    log = mklog("raised.txt", tmp)
    out = os.path.join(tmp, "raised.json")
    p = run(["export", "--perfetto", out, log])
    check(p.returncode == 0, "export of raised.txt: %s" % p.stderr)
    events = read_perfetto(out)[1] if p.returncode == 0 else []
    slices = [(e["ph"], e.get("args", {}).get("seq"), e.get("args", {}).get("ended")) for e in events
              if e["ph"] in ("B", "E")]
    # B(op 5) then E(op 5, raised) before B(op 9): not nested in it.
    seqs = [s for s in slices if s[0] == "B"]
    check([s[1] for s in seqs] == [1, 5, 9, 13], "one slice per operation: %s" % slices)
    at = slices.index(("B", 9, None)) if ("B", 9, None) in slices else -1
    check(at > 0 and slices[at - 1] == ("E", None, "left without its end event (raised)"),
          "the raised allocation ends where the next one begins: %s" % slices)
    check(all(e != ("E", None, "open at the end of the log") for e in slices), "nothing open at the end: %s" % slices)
    rc, d = doc(["check", log, "--model", "cupy"])
    fid = d.get("fidelity") or {}
    check(rc == 0 and (fid.get("matched"), fid.get("diverged"), fid.get("first_diverged_seq")) == (7, 0, 0),
          "check follows it (2 segments, 3 refusals, 2 blocks): %s" % d.get("fidelity"))


NASTY = "evil\x1b[31mred\nforged line\u009b2J"    # a terminal escape, a newline, C1 CSI
NOT_UTF8 = "caf\udce9"                              # the byte 0xe9 alone: not UTF-8 (PEP 383 form)


def imported(tmp, name, lines):
    src, log = os.path.join(tmp, name + ".jsonl"), os.path.join(tmp, name + ".tlog")
    with open(src, "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    p = run(["import", "-o", log, src])
    check(p.returncode == 0, "import %s: %s" % (name, p.stderr))
    return log


def double_free_from_python(tmp):
    """A cudaFree made twice from a Python line, its native stack deep in
    the interpreter; names in the log hold terminal escapes and a byte that
    is not UTF-8."""
    libpython = "/usr/lib/libpython3.11.so.1.0"
    native = ([{"ip": "0x%x" % (0x7f0000001000 + 16 * i), "module": "/opt/app/lib%s.so" % NOT_UTF8,
                "offset": "0x%x" % (0x1000 + 16 * i)} for i in range(2)] +
              [{"ip": "0x%x" % (0x7e0000100000 + 64 * i), "module": libpython, "offset": "0x%x" % (0x100000 + 64 * i)}
               for i in range(14)])
    py = [{"file": "/srv/%s/app.py" % NOT_UTF8, "line": 7, "function": NASTY},
          {"file": "/srv/%s/main.py" % NOT_UTF8, "line": 3, "function": "<module>"}]
    ev = lambda seq, kind, **kw: dict({"seq": seq, "tid": 7, "t_ns": seq * 1000, "kind": kind, "parent": 0}, **kw)
    lines = [
        {"kind": "header", "pid": 7, "cmdline": "python " + NASTY, "hostname": NOT_UTF8, "exe": "/usr/bin/python3"},
        {"kind": "thread", "tid": 7, "name": NASTY},
        {"kind": "pool", "pool": 1, "name": NASTY},
        ev(1, "cuda_alloc", api="cudaMalloc", ptr=0x7f5000000000, size=4096, native_stack=native, py_stack=py),
        ev(2, "cuda_free", api="cudaFree", ptr=0x7f5000000000, native_stack=native, py_stack=py),
        ev(3, "mark", text=NASTY),
        ev(4, "cuda_free", api="cudaFree", ptr=0x7f5000000000, native_stack=native, py_stack=py),
    ]
    return imported(tmp, "hostile", lines)


def no_control_characters(what, out):
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, "%s: valid UTF-8 (%s)" % (what, e))
        return ""
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) < 0xa0]
    check(not bad, "%s: no control character from the log reaches the terminal: %r" % (what, bad[:5]))
    check("forged line" not in text.replace("\\nforged line", ""), "%s: no line forged by a newline" % what)
    return text


def hostile_text(tmp):
    """Point 5: text output escapes what the log holds (\\x1b, \\n, \\xc2\\x9b
    for C1, \\xe9 for a byte that is not UTF-8); point 4: every JSON output is
    valid UTF-8 and the byte survives dump --json | import."""
    log = double_free_from_python(tmp)
    for args in (["check", log], ["report", log], ["explore", log], ["stats", log]):
        p = run(args)
        text = no_control_characters(args[0], p.stdout)
        check("\\x1b[31mred\\nforged line\\xc2\\x9b2J" in text or args[0] in ("explore", "stats"),
              "%s: the escape shown escaped: %s" % (args[0], text[:300]))
    p = subprocess.run([A.dump, log], capture_output=True) if A.dump else None
    if p:
        text = no_control_characters("trace-dump", p.stdout)
        check("caf\\xe9" in text and "\\x1b[31m" in text, "trace-dump shows escapes: %s" % text[:400])
    outs = [("check --json", run(["check", "--json", log]).stdout), ("report --json", run(["report", "--json", log]).stdout)]
    exported = os.path.join(tmp, "hostile.pftrace")
    run(["export", "--perfetto", exported, log])
    try:
        events = read_perfetto(exported)[1]     # its strings decode as UTF-8
        names = [str(f) for e in events for f in e.get("stack", [])]
        check(any("\\x1b[31mred\\nforged line\\xc2\\x9b2J" in f for f in names),
              "export: the escape shown escaped: %s" % names[:8])
        check(not any("\x1b" in f or "\u009b" in f for f in names), "export: no raw escape: %s" % names[:8])
    except (UnicodeDecodeError, ValueError, KeyError) as e:
        check(False, "export: a Perfetto trace with valid UTF-8 strings (%s)" % e)
    if A.dump:
        outs.append(("trace-dump --json", subprocess.run([A.dump, "--json", log], capture_output=True).stdout))
    for what, out in outs:
        try:
            docs = [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
            check(docs, "%s: JSON" % what)
        except (UnicodeDecodeError, ValueError) as e:
            check(False, "%s: valid UTF-8 JSON (%s)" % (what, e))
    d = json.loads(run(["check", "--json", log]).stdout)
    frame = ((d.get("violation") or {}).get("py_stack") or [{}])[0]
    check(frame.get("file") == "/srv/%s/app.py" % NOT_UTF8 and frame.get("function") == NASTY,
          "the JSON keeps the byte (as \\udce9) and the escape: %r" % frame)
    if A.dump:
        jl = subprocess.run([A.dump, "--json", log], capture_output=True).stdout
        again = os.path.join(tmp, "again.tlog")
        p = subprocess.run([A.replay, "import", "-o", again, "-"], input=jl, capture_output=True)
        check(p.returncode == 0, "import of dump --json: %s" % p.stderr)
        check(subprocess.run([A.dump, "--json", again], capture_output=True).stdout == jl,
              "dump --json | import keeps every byte")


def python_first(tmp):
    """Point 10: the Python line of a double free is in the first dozen lines
    of check's output; interpreter frames fold into one line."""
    log = double_free_from_python(tmp)
    p = run(["check", log])
    lines = p.stdout.decode().splitlines()
    check(p.returncode == 1 and lines[0].startswith("VIOLATION double_free"), "double free: %s" % lines[:2])
    check(any("app.py:7" in line for line in lines[:12]), "the Python line within 12 lines: %s" % lines[:12])
    check(any(line.strip() == "... 14 CPython frames" for line in lines), "14 CPython frames folded: %s" % lines)
    full = run(["check", "--full-stacks", log]).stdout.decode().splitlines()
    check(sum("libpython3.11.so.1.0" in line for line in full) >= 14 and not any("CPython frames" in l for l in full),
          "--full-stacks shows every frame")
    text = run(["report", log]).stdout.decode()
    check("... 14 CPython frames" in text, "the report folds them too")


def verdicts(tmp):
    """Point 9: one verdict, in the same words, from every command; its exit
    status; INCONCLUSIVE when the model left the log."""
    log = double_free_from_python(tmp)
    want = "verdict: VIOLATION double_free at seq 4 (model-free checks)"
    for args in (["check", log], ["stats", log], ["report", log]):
        p = run(args)
        last = p.stdout.decode().rstrip().splitlines()[-1]
        check(p.returncode == 1 and last == want, "%s: %d %r" % (args[0], p.returncode, last))
    story = mklog("cupy5_reentry.txt", tmp)
    p = run(["check", story, "--model", "cupy5"])
    check(p.stdout.decode().rstrip().splitlines()[-1].startswith(
          "verdict: VIOLATION sorted_index at seq 15 (pool model cupy5); the model followed the log up to it"),
          "check's verdict, and how far the model followed the log: %s" % p.stdout[-200:])
    clean = mklog("cupy5_clean.txt", tmp)
    p = run(["explore", clean, "--model", "cupy5"])
    last = p.stdout.decode().rstrip().splitlines()[-1]
    check(p.returncode == 1 and last.startswith("verdict: VIOLATION if a collection ran at _append_to_free_list"),
          "explore: one verdict, no 'no violation' beside it: %r" % p.stdout[-300:])
    check(b"no violation" not in p.stdout, "explore does not say 'no violation' beside its finding")
    gen = os.path.join(tmp, "gen.log")
    subprocess.run([A.gen, gen, "20000"], check=True, capture_output=True)
    rc, d = doc(["check", gen, "--model", "tf-bfc"])
    check(rc == 3 and d.get("status") == "inconclusive" and d["verdict"]["exit_status"] == 3 and
          "diverged" in d["verdict"]["text"], "a wrong model: inconclusive, exit 3: %s" % d.get("verdict"))
    p = run(["report", gen, "--model", "tf-bfc"])
    check(p.returncode == 3 and b"verdict: INCONCLUSIVE" in p.stdout, "report says the same: %d" % p.returncode)
    for cmd in ([], ["report"]):
        h = run(cmd + ["--help"]).stdout.decode()
        check("3" in h and "INCONCLUSIVE" in h.upper() and "exit status" in h, "--help documents exit statuses")


def vmm_figures(tmp):
    """Physical memory made by cuMemCreate is device memory the program
    holds: a log whose only device memory is VMM handles said "peak device
    reserved 0 B"."""
    rc, d = doc(["report", mklog("vmm_handles.txt", tmp)])
    d = d.get("memory") or {}
    peak = d.get("peak_reserved") or {}
    check(rc == 0 and peak.get("bytes") == 4 << 20 and peak.get("seq") == 2,
          "report: two 2 MiB handles live at seq 2 are 4 MiB reserved: %r" % peak)
    peak = d.get("peak_allocated") or {}
    check(peak.get("bytes") == 4 << 20, "... and held by the program: %r" % peak)


def pool_segments(tmp):
    """The report's segments obtained per pool: a device allocation nested
    in the pool's operation is one (CuPy tells its segments no other way:
    leak.txt said 0), and one told twice, nested and with pool_segment
    grow, is one."""
    for name, want in (("leak.txt", 1), ("segment_twice.txt", 2)):
        rc, d = doc(["report", mklog(name, tmp)])
        got = [p.get("segments") for p in d.get("pools") or []]
        check(got == [want], "report %s: segments obtained %r, expected [%d]" % (name, got, want))


def told_segment_figures(tmp):
    """A device allocation a pool tells as its segment is not also held by
    the program (it was, until the pool told it)."""
    rc, d = doc(["report", mklog("segment_told_figures.txt", tmp)])
    peak = (d.get("memory") or {}).get("peak_allocated") or {}
    check(rc == 0 and peak.get("bytes") == 64 << 10 and peak.get("seq") == 1,
          "report: the segment is the pool's once told: %r" % peak)


def cut_on_busy_threads(tmp):
    """The pieces a cut leaves (map_rest) are the mapping's, found among the
    releases of their own thread, however many large blocks other threads
    release while the cut runs (a ring of all threads' last 32 releases lost
    the mapping: its pieces counted as 2 more blocks, 56 MiB more), and
    however many mappings the call released after the one it cut (a ring of
    32: 1 block, 1 MiB more)."""
    rc, d = doc(["report", mklog("host_cut_threads.txt", tmp)])
    sites = d.get("sites") or []
    count, total = sum(s.get("host_count", 0) for s in sites), sum(s.get("host_bytes", 0) for s in sites)
    peak = (d.get("memory") or {}).get("peak_host") or {}
    check(rc == 0 and count == 41 and total == 144 << 20 and peak.get("bytes") == 144 << 20,
          "report: a cut while another thread frees 40 blocks: 41 blocks, 144 MiB allocated "
          "(got %d, %d), peak %r" % (count, total, peak))
    rc, d = doc(["report", mklog("host_cut_row.txt", tmp)])
    sites = d.get("sites") or []
    count, total = sum(s.get("host_count", 0) for s in sites), sum(s.get("host_bytes", 0) for s in sites)
    check(rc == 0 and count == 40 and total == 80 << 20,
          "report: one munmap over 40 mappings, the first and last cut: 40 blocks, 80 MiB allocated "
          "(got %d, %d)" % (count, total))


def cut_in_collections(tmp):
    """A collection whose finalizer cut a mapping freed the cut only, and
    one whose cut failed (the mapping put back whole) freed no block."""
    rc, d = doc(["report", mklog("host_cut_gc.txt", tmp)])
    sites = d.get("sites") or []
    got = (sum(s.get("gc_host_bytes", 0) for s in sites), sum(s.get("gc_host_count", 0) for s in sites),
           (d.get("gc") or {}).get("freed_in_collections_host_bytes"))
    check(rc == 0 and got == (8 << 20, 1, 8 << 20),
          "report: collections freed 8 MiB in 1 block (bytes, blocks, total): %r" % (got,))


def small_things(tmp):
    """Point 11."""
    for tool in ([A.replay], [A.dump] if A.dump else []):
        if tool:
            p = subprocess.run(tool + ["--version"], capture_output=True, text=True)
            check(p.returncode == 0 and "log format 2." in p.stdout, "%s --version: %r" % (tool[0], p.stdout))
    story = mklog("cupy5_reentry.txt", tmp)
    p = run(["check", story, "--model", "bogus"])
    check(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and b"known: cupy, cupy5" in p.stderr,
          "an unknown model: one line naming the known ones: %r" % p.stderr)
    before = open(story, "rb").read()
    p = run(["minimize", story, "--model", "cupy5", "-o", story])
    check(p.returncode == 2 and open(story, "rb").read() == before, "minimize refuses to write onto its input")
    link = os.path.join(tmp, "same.log")
    os.symlink(story, link)
    p = run(["minimize", story, "--model", "cupy5", "-o", link])
    check(p.returncode == 2 and open(story, "rb").read() == before, "... even through a link")
    text = run(["check", story, "--model", "cupy5"]).stdout.decode()
    check("peak reserved 2.0 KiB (seq 6), peak allocated 2.0 KiB (seq 7)" in text,
          "sizes the way the report writes them: %s" % text[-500:])
    # Two logs joined with cat: two runs, not one with a corrupt frame.
    joined = os.path.join(tmp, "joined.log")
    with open(joined, "wb") as f:
        f.write(open(mklog("cupy5_clean.txt", tmp), "rb").read() + before)
    if A.dump:
        p = subprocess.run([A.dump, joined], capture_output=True, text=True)
        check(p.returncode == 0 and "corrupt" not in p.stdout + p.stderr and p.stdout.count("trace log 2.") == 2
              and "--- log 2 of this file" in p.stdout, "trace-dump: two logs, no damage: %r" % p.stderr)
        lines = subprocess.run([A.dump, "--json", joined], capture_output=True, text=True).stdout.splitlines()
        check(sum('"kind":"header"' in line for line in lines) == 2, "trace-dump --json: a header per log")
    p = run(["check", joined, "--model", "cupy5"])
    check(p.returncode == 0 and b"another log follows in this file" in p.stdout and b"corrupt" not in p.stdout,
          "check: the first log, and a note of the second: %r" % p.stdout[:300])
    p = run(["check", joined, "--model", "cupy5", "--run", "2"])
    check(p.returncode == 1 and b"verdict: VIOLATION sorted_index at seq 15" in p.stdout, "--run 2: the second log")
    p = run(["report", joined, "--run", "2", "--model", "cupy5"])
    check(p.returncode == 1 and b"log 2 of this file" in p.stdout, "report --run 2: %d %r" % (p.returncode, p.stdout[-300:]))


def main():
    global A
    ap = argparse.ArgumentParser()
    for k in ("replay", "mklog", "gen", "scenarios", "dump", "libpool"):
        ap.add_argument("--" + k, default="")
    A = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for t in (exit_codes, json_shape, determinism, explore, minimize, stats_pool_leaks, damaged, generated,
                  one_nesting, hostile_text, python_first, verdicts, vmm_figures, pool_segments, told_segment_figures,
                  cut_on_busy_threads, cut_in_collections,
                  small_things):
            t(tmp)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
