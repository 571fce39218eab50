#!/usr/bin/env python3
"""trace-dump on a generated log: --json, --summary, text, and exit codes.

usage: test_dump.py TRACE_DUMP GEN_LOG
"""
import re
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

KIND_FIELDS = {
    "cuda_alloc": ["api", "device", "result", "flags", "ptr", "size", "stream"],
    "cuda_free": ["api", "device", "result", "flags", "ptr", "size", "stream"],
    "pool_alloc": ["pool", "ptr", "requested", "granted", "stream"],
    "pool_free": ["pool", "ptr", "requested", "granted", "stream"],
    "pool_op_begin": ["pool", "op", "begin", "arg"],
    "pool_op_end": ["pool", "op", "begin", "arg"],
    "pool_segment": ["pool", "grow", "ptr", "size"],
    "gc_start": ["generation", "collected", "uncollectable", "duration_ns", "allocs"],
    "gc_stop": ["generation", "collected", "uncollectable", "duration_ns", "allocs"],
    "host_alloc": ["domain", "ptr", "size"],
    "host_free": ["domain", "ptr", "size"],
    "py_alloc": ["domain", "ptr", "size"],
    "py_double_init": ["obj", "type_name"],
    "mark": ["text"],
    "end": ["events", "strings", "native_stacks", "py_stacks", "frames"],
    "release_failed": ["release", "result"],
    "py_free": ["ptr", "domain"],
}

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_json(dump, log, expect):
    rc, out, err = run(dump, "--json", log)
    check(rc == 0, f"--json exit status {rc}: {err}")
    lines = [json.loads(line) for line in out.splitlines()]
    header = lines[0]
    events = [x for x in lines[1:] if "seq" in x]
    defs = [x for x in lines[1:] if "seq" not in x]
    check({"kind": "pool", "pool": 0, "name": "cupy"} in defs, "pool definition line")
    check({"kind": "thread", "tid": 1002, "name": "worker", "py_name": "loader_0"} in defs,
          "thread definition line")
    check({"kind": "info", "key": "python_version", "value": "3.12.1"} in defs, "info definition line")
    fake = [x for x in defs if x["kind"] == "module" and x["path"] == "/nonexistent/libfake.so"]
    check(len(fake) == 1 and fake[0]["base"] == 0x10000000 and fake[0]["build_id"] == "01020304"
          and fake[0]["segments"] == [{"vaddr": 0, "memsz": 0x1000, "flags": 5}],
          f"module definition line {fake}")
    check(lines.index(fake[0]) < lines.index(events[0]) if fake else False, "modules before the events")
    unload = {"kind": "module_unload", "id": fake[0]["id"] if fake else -1}
    check(unload in defs and lines.index(unload) == len(lines) - 2, f"unload line before END: {lines[-3:]}")
    check(header["kind"] == "header" and header["pid"] == 4242, "header line")
    check(header["cmdline"] == "python app.py" and header["version_major"] == 2, "header fields")
    check(len(events) == expect["events"], f"{len(events)} events, want {expect['events']}")
    check([e["seq"] for e in events] == list(range(1, len(events) + 1)), "seq 1..N")
    for e in events:
        for key in ["seq", "tid", "t_ns", "kind", "parent"] + KIND_FIELDS[e["kind"]]:
            check(key in e, f"{e['kind']} lacks {key}")
    by_kind = {e["kind"]: e for e in events}
    check(set(by_kind) == set(KIND_FIELDS), f"kinds {sorted(by_kind)}")
    cuda = by_kind["cuda_alloc"]
    check(cuda["api"] == "cudaMalloc" and cuda["ptr"] == 0x7F0000000000, "cuda_alloc fields")
    check(cuda["size"] == 2 << 20 and cuda["parent"] == 1, "cuda_alloc size/parent")
    check(by_kind["cuda_free"]["device"] == -1 and by_kind["cuda_free"]["api"] == "cuMemFree_v2",
          "signed fields and api names")
    check(by_kind["pool_op_end"]["begin"] == 1, "pool_op_end.begin")
    check(by_kind["py_double_init"]["type_name"] == "Tensor", "string ids as text")
    check(by_kind["gc_start"]["allocs"] == [701, 0, 0], "gc allocs")
    check(by_kind["end"]["events"] == expect["events"] - 1, "END counts events before it")
    stack = cuda["native_stack"]
    check(len(stack) == 4, "native stack depth")
    check(stack[0]["module"] == expect["module"], f"module {stack[0].get('module')}")
    check(stack[0].get("function") == expect["function0"], f"frame 0 {stack[0]}")
    check(stack[1].get("function") == expect["function1"], f"frame 1 {stack[1]}")
    check((stack[1].get("file") or "").endswith(expect["file"]), f"frame 1 file {stack[1]}")
    check(stack[1].get("line") == expect["line1"], f"frame 1 line {stack[1]}")
    check(stack[2]["module"] == "/nonexistent/libfake.so" and stack[2]["offset"] == "0x100"
          and stack[2]["function"] is None and stack[2]["line"] is None, f"frame 2 {stack[2]}")
    check(stack[3] == {"ip": "0xdead", "module": None, "offset": None, "function": None, "inlined": None,
                       "file": None, "line": None, "kind": "user"}, f"frame 3 {stack[3]}")
    py = cuda["py_stack"]
    check(py == [{"file": "app.py", "line": 15, "function": "train_step"},
                 {"file": "app.py", "line": 40, "function": "<module>"}], f"py stack {py}")
    check(by_kind["mark"]["text"] == 'epoch "1"\n', "escaped strings")


def check_summary(dump, log, expect):
    rc, out, err = run(dump, "--summary", log)
    check(rc == 0, f"--summary exit status {rc}")
    check(f"events      {expect['events']} (seq 1..{expect['events']})" in out, out)
    check("  cuda_alloc       1" in out and "  mark             " in out, "per-kind counts")
    check("1001 main" in out and "1002 worker" in out, "threads")
    check("bytes/event" in out and "time span" in out, "size and span")
    check("end         clean" in out and "damage      none" in out, "clean end")
    check("info: python_version=3.12.1" in out, "info")


def check_damaged(dump, log, tmp):
    with open(log, "rb") as f:
        data = f.read()
    cut = os.path.join(tmp, "cut.log")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 7])
    rc, out, err = run(dump, "--json", cut)
    check(rc == 1, f"truncated log: exit status {rc}")
    check("truncated after event" in err, f"damage line: {err}")
    lines = [json.loads(line) for line in out.splitlines()]
    check(len(lines) > 10, "the readable part is printed")
    rc, out, err = run(dump, "--summary", cut)
    check(rc == 1 and "damage      truncated after event" in out, "summary damage line")
    check("end         no END record" in out, "summary end line")


def check_debug_dir(dump, gen, tmp):
    """A binary that moved after the run is found again through --debug-dir."""
    moved_gen = os.path.join(tmp, "gen_copy")
    shutil.copy(gen, moved_gen)
    log = os.path.join(tmp, "moved.log")
    rc, out, err = run(moved_gen, log)
    check(rc == 0, f"copied generator: {err}")
    debug = os.path.join(tmp, "debug")
    os.mkdir(debug)
    os.rename(moved_gen, os.path.join(debug, "gen_copy"))

    def first_function(*args):
        rc, out, err = run(dump, "--json", *args, log)
        check(rc == 0, f"--json {args}: {rc} {err}")
        first = next(x for x in map(json.loads, out.splitlines()) if "seq" in x)
        return first["native_stack"][1].get("function")

    check(first_function() is None, "no symbols while the binary is missing")
    check(first_function("--debug-dir", os.path.join(tmp, "nowhere"), "--debug-dir", debug)
          == "allocation_site", "symbols through --debug-dir")


def check_kinds(dump, log):
    """--kinds: exactly the events of those kinds, the same lines as in the
    whole dump (stacks included), every definition still there."""
    rc, out, err = run(dump, "--json", log)
    whole = [json.loads(line) for line in out.splitlines()]
    kinds = sorted({x["kind"] for x in whole if "seq" in x})
    check(len(kinds) >= 3, f"the generated log has kinds {kinds}")
    some = kinds[:2]
    rc, out, err = run(dump, "--json", "--kinds", ",".join(some), log)
    lines = [json.loads(line) for line in out.splitlines()]
    check(rc == 0, f"--kinds exit status {rc}: {err}")
    check([x for x in lines if "seq" in x] == [x for x in whole if "seq" in x and x["kind"] in some],
          f"--kinds {some}: not the same events as the whole dump's")
    check([x for x in lines if "seq" not in x] == [x for x in whole if "seq" not in x],
          f"--kinds {some}: the header and definitions differ")
    rc, out, err = run(dump, "--kinds", "cuda_alloc,no_such_kind", log)
    check(rc == 2 and "no_such_kind" in err and "cuda_alloc" in err, f"--kinds with an unknown kind: {rc} {err}")


def check_refusals(dump, tmp):
    junk = os.path.join(tmp, "junk")
    with open(junk, "w") as f:
        f.write("not a log at all\n")
    rc, out, err = run(dump, junk)
    check(rc == 2 and "not a trace log" in err, f"not a log: {rc} {err}")
    rc, out, err = run(dump, os.path.join(tmp, "missing"))
    check(rc == 2, "missing file")
    rc, out, err = run(dump)
    check(rc == 2 and "usage" in err, "no argument")
    rc, out, err = run(dump, "--bogus", junk)
    check(rc == 2, "unknown option")


def main():
    dump, gen = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "gen.log")
        rc, out, err = run(gen, log, "20")
        check(rc == 0, f"gen_log failed: {err}")
        expect = json.loads(out)
        check_json(dump, log, expect)
        check_summary(dump, log, expect)
        check_kinds(dump, log)
        many = os.path.join(tmp, "many.log")   # random events: hundreds of thread ids
        rc, out, err = run(gen, many, "1", "600")
        check(rc == 0, f"gen_log failed: {err}")
        rc, out, err = run(dump, "--summary", many)
        line = next((l for l in out.splitlines() if l.startswith("threads")), "")
        count = int(line.split()[1].rstrip(":")) if line else 0
        check(count > 16 and line.count(",") == 16 and line.endswith(f", and {count - 16} more"),
              f"--summary names the first 16 threads of {count}: {line[:300]}")
        rc, out, err = run(dump, "--debug-dir", tmp, log)
        check(rc == 0 and re.match(r"trace log 2\.\d+: pid 4242", out) is not None, "text mode")
        check(" pool_alloc pool=0 ptr=0x7f0000000000 requested=4000" in out, "text fields")
        check("at app.py:15 train_step" in out, "text python frame")
        check_damaged(dump, log, tmp)
        check_debug_dir(dump, gen, tmp)
        check_refusals(dump, tmp)
    print("dump: ok" if not failures else f"dump: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
