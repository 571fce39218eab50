#!/usr/bin/env python3
"""A second reader, written from format/FORMAT.md alone, must agree with
trace-dump --json line for line, events and definitions: the specification
is complete.

usage: test_spec_reader.py TRACE_DUMP GEN_LOG

Frames are decompressed with the zstd command (its output is every frame's
records back to back; FRAME records mark where frames began).
"""
import json
import os
import subprocess
import sys
import tempfile

MASK64 = (1 << 64) - 1

# FORMAT.md section 7: kind -> (name, [(field, encoding)])
CUDA = [("api", "u"), ("device", "s"), ("result", "s"), ("flags", "u"),
        ("ptr", "p:device"), ("size", "u"), ("stream", "p:stream")]
POOL = [("pool", "u"), ("ptr", "p:device"), ("requested", "u"), ("granted", "u"),
        ("stream", "p:stream")]
POOL_OP = [("pool", "u"), ("op", "u"), ("begin", "seqrel"), ("arg", "u")]
GC = [("generation", "s"), ("collected", "u"), ("uncollectable", "u"), ("duration_ns", "u"),
      ("allocs0", "u"), ("allocs1", "u"), ("allocs2", "u"), ("interp", "u")]
HOST = [("domain", "u"), ("ptr", "p:host"), ("size", "u"), ("host_api", "u")]
EVENTS = {
    32: ("cuda_alloc", CUDA), 33: ("cuda_free", CUDA), 34: ("pool_alloc", POOL),
    35: ("pool_free", POOL), 36: ("pool_op_begin", POOL_OP), 37: ("pool_op_end", POOL_OP),
    38: ("pool_segment", [("pool", "u"), ("grow", "u"), ("ptr", "p:device"), ("size", "u")]),
    39: ("gc_start", GC), 40: ("gc_stop", GC), 41: ("host_alloc", HOST), 42: ("host_free", HOST),
    43: ("py_double_init", [("obj", "p:host"), ("type_name", "u")]),
    44: ("mark", [("text", "u")]),
    45: ("end", [("events", "u"), ("strings", "u"), ("native_stacks", "u"),
                 ("py_stacks", "u"), ("frames", "u")]),
    46: ("py_alloc", HOST),
    47: ("release_failed", [("release", "seqrel"), ("result", "s")]),
    48: ("py_free", [("ptr", "u"), ("domain", "u")]),
}
APIS = ["unknown", "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync",
        "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
        "cudaMallocPitch", "cudaMallocFromPoolAsync", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuMemAllocManaged",
        "cuMemAllocPitch_v2", "cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemFreeHost",
        "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemAddressReserve",
        "cuMemAddressFree"]
HOST_APIS = ["unknown", "malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
             "aligned_alloc", "memalign", "valloc", "pvalloc", "free", "mmap", "munmap", "mremap"]


class Cursor:
    def __init__(self, data, pos=0, end=None):
        self.data, self.pos = data, pos
        self.end = len(data) if end is None else end

    def uv(self):
        value, shift = 0, 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def sv(self):
        u = self.uv()
        return (u >> 1) ^ -(u & 1)

    def raw(self, n):
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def bytes(self):
        return self.raw(self.uv())

    def str(self):
        return self.bytes().decode("utf-8", "replace")


def read_log(path):
    data = subprocess.run(["zstd", "-dcq", path], check=True, capture_output=True).stdout
    c = Cursor(data)
    defs = {"string": {}, "native": {}, "code": {}, "py": {}}
    bases = {}
    lines, header = [], None
    pending = {"pool": [], "thread": [], "info": [], "module": [], "module_unload": []}
    defined = set()
    named = {"thread": set(), "pool": set()}
    while c.pos < len(data):
        kind, length = c.uv(), c.uv()
        rec = Cursor(data, c.pos, c.pos + length)
        c.pos += length
        if kind == 1:
            assert rec.raw(8) == b"gputrace"
            header = {"version_major": rec.uv(), "version_minor": rec.uv(), "pid": rec.uv(),
                      "ppid": rec.uv(), "wall_start_ns": rec.uv(), "mono_start_ns": rec.uv()}
            for key in ["hostname", "cmdline", "exe", "tracer_version", "settings",
                        "python_version"]:
                header[key] = rec.str()
            header["cuda_runtime_version"] = rec.sv()
            header["cuda_driver_version"] = rec.sv()
            # 1.2: the segment fields (zero in a log of one file).
            for key in ["max_bytes", "segment", "first_seq"]:
                header[key] = rec.uv() if rec.pos < rec.end else 0
        elif kind == 2:
            rec.uv()
            bases = {"seq": rec.uv(), "time": rec.uv(), "tid": 0,
                     "device": 0, "host": 0, "stream": 0}
        elif kind == 3:
            sid = rec.uv()
            defs["string"][sid] = rec.bytes()
        elif kind == 6:
            cid = rec.uv()
            defs["code"][cid] = (rec.uv(), rec.uv(), rec.uv())
        elif kind == 7:
            sid, n = rec.uv(), rec.uv()
            ips = []
            for i in range(n):
                ips.append(rec.uv() if i == 0 else (ips[-1] + rec.sv()) & MASK64)
            defs["native"][sid] = ips
        elif kind == 8:
            sid, n = rec.uv(), rec.uv()
            defs["py"][sid] = [(rec.uv(), rec.uv()) for _ in range(n)]
        elif kind == 4:
            mid, path, base, build_id = rec.uv(), rec.str(), rec.uv(), rec.bytes()
            segs = [{"vaddr": rec.uv(), "memsz": rec.uv(), "flags": rec.uv()} for _ in range(rec.uv())]
            defined.add(mid)
            pending["module"].append({"kind": "module", "id": mid, "path": path, "base": base,
                                      "build_id": build_id.hex(), "segments": segs})
        elif kind == 5:
            mid = rec.uv()
            if mid in defined:  # an unload of an id no MODULE_LOAD defined says nothing
                pending["module_unload"].append({"kind": "module_unload", "id": mid})
        elif kind in (9, 10):
            what, key = ("thread", "tid") if kind == 9 else ("pool", "pool")
            num, name = rec.uv(), rec.str()
            py_name = rec.str() if kind == 9 and rec.pos < rec.end else ""
            if num not in named[what]:  # a rename is not repeated
                named[what].add(num)
                line = {"kind": what, key: num, "name": name}
                if py_name:
                    line["py_name"] = py_name
                pending[what].append(line)
        elif kind == 11:
            pending["info"].append({"kind": "info", "key": rec.str(), "value": rec.str()})
        elif kind in EVENTS:
            lines.extend(take_definitions(pending))
            lines.append(decode_event(kind, rec, bases, defs))
    return header, lines + take_definitions(pending)


def take_definitions(pending):
    """Definition lines met since the last event, grouped as FORMAT.md
    section 11 prints them."""
    out = []
    for what in ("pool", "thread", "info", "module", "module_unload"):
        out.extend(pending[what])
        pending[what].clear()
    return out


def decode_event(kind, rec, bases, defs):
    name, fields = EVENTS[kind]
    present = rec.raw(2)
    present = present[0] | present[1] << 8
    seq = bases["seq"] + 1 + (rec.uv() if present & 1 else 0)
    tid = rec.uv() if present & 2 else bases["tid"]
    t_ns = (bases["time"] + (rec.sv() if present & 4 else 0)) & MASK64
    parent = (seq - rec.uv()) & MASK64 if present & 8 else 0
    native = rec.uv() if present & 16 else 0
    py = rec.uv() if present & 32 else 0
    bases.update(seq=seq, tid=tid, time=t_ns)
    ev = {"seq": seq, "tid": tid, "t_ns": t_ns, "kind": name, "parent": parent}
    for bit, (field, enc) in enumerate(fields, start=6):
        value = 0
        if present >> bit & 1:
            if enc == "u":
                value = rec.uv()
            elif enc == "s":
                value = rec.sv()
            elif enc == "seqrel":
                value = (seq - rec.uv()) & MASK64
            else:
                cls = enc[2:]
                value = bases[cls] = (bases[cls] + rec.sv()) & MASK64
        ev[field] = value
    finish_event(ev, defs, native, py)
    return ev


def finish_event(ev, defs, native, py):
    """Shape the event as trace-dump --json does (FORMAT.md section 11)."""
    if "api" in ev:
        ev["api"] = APIS[ev["api"]] if ev["api"] < len(APIS) else "api#%d" % ev["api"]
    if "host_api" in ev:
        a = ev.pop("host_api")
        ev["api"] = HOST_APIS[a] if a < len(HOST_APIS) else "api#%d" % a
    if "allocs0" in ev:
        ev["allocs"] = [ev.pop("allocs0"), ev.pop("allocs1"), ev.pop("allocs2")]
    for key in ("type_name", "text"):
        if key in ev:
            text = defs["string"].get(ev[key])
            ev[key] = text.decode("utf-8", "replace") if text is not None else None
    # Section 11: both stacks always, [] when the event has none (or its
    # definition was lost); addresses as "0x..." strings.
    ev["native_stack"] = [{"ip": "0x%x" % ip} for ip in defs["native"].get(native, [])]
    ev["py_stack"] = []
    if py in defs["py"]:
        frames = []
        for code, line in defs["py"][py]:
            file_id, func_id, _ = defs["code"].get(code, (0, 0, 0))
            frames.append({"file": defs["string"].get(file_id, b"").decode(),
                           "line": line,
                           "function": defs["string"].get(func_id, b"").decode()})
        ev["py_stack"] = frames


def main():
    dump, gen = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "spec.log")
        subprocess.run([gen, log, "3", "3000"], check=True, capture_output=True)
        header, records = read_log(log)
        out = subprocess.run([dump, "--json", log], check=True, capture_output=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    failures = 0
    if lines[0] != dict(header, kind="header"):
        print("header differs:", lines[0], header, file=sys.stderr)
        failures += 1
    if len(lines) - 1 != len(records):
        print("line counts differ:", len(lines) - 1, len(records), file=sys.stderr)
        failures += 1
    for want, got in zip(lines[1:], records):
        for frame in want.get("native_stack", []):
            for key in ("module", "offset", "function", "file", "line", "kind"):
                frame.pop(key, None)
        if want != got:
            failures += 1
            if failures < 5:
                print("differs:\n  trace-dump ", want, "\n  spec reader", got, file=sys.stderr)
    kinds = {r["kind"] for r in records}
    if not {"pool", "thread", "info", "module", "module_unload"} <= kinds:
        print("the log lacks definitions of some kind:", sorted(kinds), file=sys.stderr)
        failures += 1
    print(f"spec reader: {len(records)} events and definitions agree" if not failures
          else f"spec reader: {failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
