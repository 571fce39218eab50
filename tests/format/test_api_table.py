#!/usr/bin/env python3
"""The CUDA entry-point table (format/cuda_api_table.h) is the one source:
FORMAT.md's API table says the same, row for row; libtrace.so exports every
entry point it lists (its version script is made from it); and the replay
classifies by it (an api number this version does not know is no device
allocation, so it is nobody's segment).

usage: test_api_table.py API_TABLE FORMAT_MD CUDA_MD LIBTRACE TRACE_REPLAY

CUDA_MD (docs/cuda.md, what users read about the hooks) must name every
entry point too.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def table(program):
    rows = {}
    for line in subprocess.run([program], capture_output=True, text=True, check=True).stdout.splitlines():
        n, name, event, space, layer, ptsz = line.split()
        rows[int(n)] = (name, event, space, layer, ptsz == "1")
    return rows


def documented(path):
    """FORMAT.md's rows: n -> (name, event, space, layer, _ptsz)."""
    text = open(path, encoding="utf-8").read()
    section = text[text.index("### API table"):text.index("### Kind table")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].isdigit() and cells[0] != "0":
            rows[int(cells[0])] = (cells[1], cells[2], cells[3], cells[4], cells[5] == "yes")
    return rows


def exports(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def unknown_api_is_no_segment(replay, tmp):
    """A pool operation whose nested cuda_alloc has an api number this
    version does not know: the replay must not take it for the pool's
    segment (the old deny-list did)."""
    lines = [
        {"kind": "header", "pid": 1},
        {"kind": "pool", "pool": 1, "name": "cupy"},
        {"seq": 1, "tid": 1, "t_ns": 1, "kind": "pool_op_begin", "parent": 0, "pool": 1, "op": 1, "arg": 4096},
        {"seq": 2, "tid": 1, "t_ns": 2, "kind": "cuda_alloc", "parent": 1, "api": 99, "ptr": 1 << 40,
         "size": 1 << 21},
        {"seq": 3, "tid": 1, "t_ns": 3, "kind": "cuda_alloc", "parent": 1, "api": "cudaMalloc",
         "ptr": 1 << 41, "size": 4096},
        {"seq": 4, "tid": 1, "t_ns": 4, "kind": "pool_alloc", "parent": 1, "pool": 1, "ptr": 1 << 41,
         "requested": 4096, "granted": 4096},
        {"seq": 5, "tid": 1, "t_ns": 5, "kind": "pool_op_end", "parent": 0, "pool": 1, "op": 1, "begin": 1},
    ]
    src, log = os.path.join(tmp, "unknown.jsonl"), os.path.join(tmp, "unknown.tlog")
    with open(src, "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    done = subprocess.run([replay, "import", "-o", log, src], capture_output=True, text=True)
    check(done.returncode == 0, "import of the unknown-api log: %s" % done.stderr)
    done = subprocess.run([replay, "stats", "--model", "cupy", "--json", log], capture_output=True, text=True)
    doc = json.loads(done.stdout)
    sizes = {s["min_bytes"]: s["count"] for s in doc["stats"]["segment_sizes"]}
    check(sizes == {4096: 1}, "only the cudaMalloc is a segment, api 99 is not: %s" % sizes)
    check(doc["fidelity"]["diverged"] == 0, "the model's segment is the cudaMalloc: %s" % doc["fidelity"])


def main():
    program, format_md, cuda_md, libtrace, replay = sys.argv[1:6]
    rows, doc = table(program), documented(format_md)
    users = open(cuda_md, encoding="utf-8").read()
    for name, _, _, _, _ in rows.values():
        check("`%s`" % name in users, "%s names %s" % (os.path.basename(cuda_md), name))
    check(len(rows) > 20, "the table has its rows (%d)" % len(rows))
    for n in sorted(set(rows) | set(doc)):
        check(rows.get(n) == doc.get(n), "API %d: table %s, FORMAT.md %s" % (n, rows.get(n), doc.get(n)))
    names = exports(libtrace)
    for name, _, _, _, ptsz in rows.values():
        check(name in names, "libtrace.so exports %s" % name)
        if ptsz:
            check(name + "_ptsz" in names, "libtrace.so exports %s_ptsz" % name)
    with tempfile.TemporaryDirectory() as tmp:
        unknown_api_is_no_segment(replay, tmp)
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("ok: %d entry points, FORMAT.md and libtrace.so agree" % len(rows))


if __name__ == "__main__":
    main()
