#!/usr/bin/env python3
"""A second reader, written from format/FORMAT.md alone, must agree with
trace-dump --json line for line, events and definitions: the specification
is complete.

usage: test_spec_reader.py TRACE_DUMP GEN_LOG

The file is split into its zstd frames here (RFC 8878: frame header, blocks,
checksum) and each frame is decompressed on its own with the zstd command.  A
frame whose content is one COLUMNS record is a column block (FORMAT.md
section 15): it is decoded back into the records it stands for, written as
section 7 writes them, and those go through the same reader as any frame's.
The log must hold at least one column block.
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
        "cuMemAddressFree", "cuMemRetainAllocationHandle", "cuMemImportFromShareableHandle",
        "cuMemPoolImportPointer", "cudaMemPoolImportPointer", "cudaDeviceReset", "cudaThreadExit",
        "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxRelease",
        "cuDevicePrimaryCtxRelease_v2", "cuCtxDestroy", "cuCtxDestroy_v2"]
HOST_APIS = ["unknown", "malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
             "aligned_alloc", "memalign", "valloc", "pvalloc", "free", "mmap", "munmap", "mremap",
             "map_rest"]


class Invalid(Exception):
    """A frame or column block this reader must refuse."""


class Cursor:
    def __init__(self, data, pos=0, end=None):
        self.data, self.pos = data, pos
        self.end = len(data) if end is None else end

    def uv(self):
        value, shift = 0, 0
        while True:
            if self.pos >= self.end:
                raise Invalid("a value runs past its end")
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
        if self.pos + n > self.end:
            raise Invalid("bytes run past their end")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def bytes(self):
        return self.raw(self.uv())

    def str(self):
        return self.bytes().decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# Frames (FORMAT.md section 1; RFC 8878 section 3.1)

ZSTD_MAGIC = 0xFD2FB528
COLUMNS = 13


def zstd_frames(data):
    """(start, end) of each zstd frame of the file, in order; skippable frames
    (magic 0x184D2A50 to 0x184D2A5F: magic, u32 size, that many bytes) are
    stepped over."""
    frames, pos = [], 0
    while pos < len(data):
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
            continue
        if magic != ZSTD_MAGIC:
            raise Invalid("not a zstd frame at byte %d" % pos)
        fhd = data[pos + 4]
        single_segment = fhd >> 5 & 1
        p = pos + 5
        p += 0 if single_segment else 1                      # Window_Descriptor
        p += (0, 1, 2, 4)[fhd & 3]                           # Dictionary_ID
        p += (single_segment, 2, 4, 8)[fhd >> 6]             # Frame_Content_Size
        while True:
            header = int.from_bytes(data[p:p + 3], "little")
            p += 3
            last, btype, bsize = header & 1, header >> 1 & 3, header >> 3
            if btype == 3:
                raise Invalid("reserved block type at byte %d" % (p - 3))
            p += 1 if btype == 1 else bsize                  # RLE: one byte
            if last:
                break
        p += 4 if fhd >> 2 & 1 else 0                        # Content_Checksum
        if p > len(data):
            raise Invalid("frame at byte %d cut short" % pos)
        frames.append((pos, p))
        pos = p
    return frames


def decompress(frame):
    return subprocess.run(["zstd", "-dcq"], input=frame, check=True,
                          capture_output=True).stdout


# ---------------------------------------------------------------------------
# Column blocks (FORMAT.md section 15)

NCOLS = 22
(C_KIND, C_DEFS, C_PRESENCE, C_SEQ, C_TID_RANK, C_TID_LIT, C_TIME, C_PARENT,
 C_NATIVE_RANK, C_NATIVE_LIT, C_PY_RANK, C_PY_LIT, C_SMALL, C_SIZE,
 C_DEV_RANK, C_DEV_LIT, C_HOST_RANK, C_HOST_LIT, C_STREAM, C_SEQREL, C_GC,
 C_END) = range(NCOLS)

# The spaces, the class of their pointers and their columns.
SPACE_OF = {32: "cuda", 33: "cuda", 34: "pool", 35: "pool",
            41: "host", 42: "host", 46: "host", 48: "host"}
CLASS_OF = {"cuda": "device", "pool": "device", "host": "host"}
RANK_COLS = {"device": (C_DEV_RANK, C_DEV_LIT), "host": (C_HOST_RANK, C_HOST_LIT)}
ALLOCS = (32, 34, 41, 46)
FREES = (33, 35, 42, 48)
FREE_SIZE = {33: "size", 35: "granted", 42: "size"}
ALLOC_SIZE = {32: "size", 34: "granted", 41: "size", 46: "size"}
RANKSET_ADDITIONS = 4096
THREADS, STACKS, OPEN_OPS = 64, 8, 8


class RankSet:
    """Distinct nonzero addresses with sizes, ordered by their last addition;
    rank 1 is the most recent. Only the last 4096 additions are kept."""

    def __init__(self):
        self.order = []     # addresses, least recent first
        self.entry = {}     # address -> [size, number of its last addition]
        self.added = []     # address of each addition, by number

    def __contains__(self, addr):
        return addr in self.entry

    def size(self, addr):
        return self.entry[addr][0]

    def at_rank(self, r):
        if not 1 <= r <= len(self.order):
            raise Invalid("rank %d of a set of %d" % (r, len(self.order)))
        return self.order[-r]

    def remove(self, addr):
        size = self.entry.pop(addr)[0]
        self.order.remove(addr)
        return size

    def add(self, addr, size):
        n = len(self.added)
        if n >= RANKSET_ADDITIONS:
            old = self.added[n - RANKSET_ADDITIONS]
            if old in self.entry and self.entry[old][1] == n - RANKSET_ADDITIONS:
                self.remove(old)
        if addr in self.entry:
            self.remove(addr)
        self.added.append(addr)
        self.entry[addr] = [size, n]
        self.order.append(addr)


class Thread:
    def __init__(self, tid):
        self.tid = tid
        self.stacks = {"native": [], "py": []}   # most recent first
        self.ops = []                             # [seq, op, arg], innermost last


def to_front(lst, value, limit):
    if value in lst:
        lst.remove(value)
    lst.insert(0, value)
    del lst[limit:]


def enc_uv(v):
    assert v >= 0
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def signed64(v):
    v &= MASK64
    return v - (1 << 64) if v >> 63 else v


def enc_sv(v):
    return enc_uv((v << 1) if v >= 0 else ((-v) << 1) - 1)


def record(kind, payload):
    return enc_uv(kind) + enc_uv(len(payload)) + payload


class Block:
    """Decodes one COLUMNS payload into the records it stands for."""

    def __init__(self, payload):
        c = Cursor(payload)
        self.tunit, self.nrec, ncols = c.uv(), c.uv(), c.uv()
        if self.tunit < 1:
            raise Invalid("tunit 0")
        if ncols != NCOLS:
            raise Invalid("%d columns" % ncols)
        lens = [c.uv() for _ in range(ncols)]
        if c.pos + sum(lens) != len(payload):
            raise Invalid("column sizes %d, payload left %d" % (sum(lens), len(payload) - c.pos))
        self.cols, pos = [], c.pos
        for n in lens:
            self.cols.append(Cursor(payload, pos, pos + n))
            pos += n
        # The state of section 15, empty at the block's start.
        self.seq = self.time = self.tid = 0
        self.ptr = {"device": 0, "host": 0, "stream": 0}
        self.lastdef = {"native": 0, "py": 0}
        self.live = {s: RankSet() for s in ("cuda", "pool", "host")}
        self.freed = {s: RankSet() for s in ("cuda", "pool", "host")}
        self.threads = []          # most recent first
        self.lastpool, self.lastpres, self.size_ok = {}, {}, {}
        self.align = 0
        # The bases of section 4, for writing the rebuilt event records.
        self.bases = None

    def uv(self, col):
        return self.cols[col].uv()

    def sv(self, col):
        return self.cols[col].sv()

    def records(self):
        out = []
        for i in range(self.nrec):
            kind = self.uv(C_KIND)
            if kind < 32:
                payload = self.cols[C_DEFS].bytes()
                if i == 0:
                    if kind != 2:
                        raise Invalid("a block's first record is kind %d, not FRAME" % kind)
                    f = Cursor(payload)
                    f.uv()
                    self.seq, self.time = f.uv(), f.uv()
                    self.bases = {"seq": self.seq, "time": self.time, "tid": 0,
                                  "device": 0, "host": 0, "stream": 0}
                elif kind in (1, 2):
                    raise Invalid("kind %d inside a block" % kind)
                elif kind in (7, 8):
                    self.lastdef["native" if kind == 7 else "py"] = Cursor(payload).uv()
                out.append(record(kind, payload))
            elif i == 0:
                raise Invalid("a block's first record is an event")
            elif kind in EVENTS:
                out.append(record(kind, self.event(kind)))
            else:
                raise Invalid("event kind %d in a block" % kind)
        for n, col in enumerate(self.cols):
            if col.pos != col.end:
                raise Invalid("column %d has %d bytes left" % (n, col.end - col.pos))
        return out

    def thread_of(self, tid):
        for t in self.threads:
            if t.tid == tid:
                return t
        return None

    def ranked(self, rankset, cls):
        rank_col, lit_col = RANK_COLS[cls]
        r = self.uv(rank_col)
        if r:
            return rankset.at_rank(r)
        return (self.ptr[cls] + self.sv(lit_col)) & MASK64

    def event(self, kind):
        name, fields = EVENTS[kind]
        pres = self.uv(C_PRESENCE) ^ self.lastpres.get(kind, 0)
        if pres >> (6 + len(fields)):
            raise Invalid("presence 0x%x past %s's fields" % (pres, name))
        self.lastpres[kind] = pres

        def present(bit):
            return pres >> bit & 1

        seq = (self.seq + 1 + (self.uv(C_SEQ) if present(0) else 0)) & MASK64
        if present(1):
            r = self.uv(C_TID_RANK)
            if r > len(self.threads):
                raise Invalid("thread rank %d of %d" % (r, len(self.threads)))
            tid = self.threads[r - 1].tid if r else self.uv(C_TID_LIT)
        else:
            tid = self.tid
        thread = self.thread_of(tid)
        ops = thread.ops if thread else []
        t_ns = (self.time + self.sv(C_TIME) * self.tunit) & MASK64 if present(2) else self.time
        if present(3):
            parent = (seq - self.uv(C_PARENT)) & MASK64
        elif kind == 37:
            parent = ops[-2][0] if len(ops) >= 2 else 0
        else:
            parent = ops[-1][0] if ops else 0
        stacks = {}
        for which, bit, rank_col, lit_col in (("native", 4, C_NATIVE_RANK, C_NATIVE_LIT),
                                              ("py", 5, C_PY_RANK, C_PY_LIT)):
            lst = thread.stacks[which] if thread else []
            if present(bit):
                r = self.uv(rank_col)
                if r > len(lst):
                    raise Invalid("%s stack rank %d of %d" % (which, r, len(lst)))
                stacks[which] = lst[r - 1] if r else (self.lastdef[which] + self.sv(lit_col)) & MASK64
            else:
                stacks[which] = lst[0] if lst else 0

        def op_at(s):
            for o in ops:
                if o[0] == s:
                    return o
            return None

        space = SPACE_OF.get(kind)
        v = {}
        taken, whole = False, 0
        for bit, (field, enc) in enumerate(fields, start=6):
            p = present(bit)
            if field == "ptr" and kind in ALLOCS:
                cls = CLASS_OF[space]
                value = self.ranked(self.freed[space], cls) if p else 0
                if value:
                    self.ptr[cls] = value
                    if value in self.freed[space]:
                        taken, whole = True, self.freed[space].remove(value)
            elif field == "ptr" and kind in FREES:
                cls = CLASS_OF[space]
                pred = 0
                if kind == 35:
                    o = op_at(parent)
                    if o and o[1] == 2:
                        pred = o[2]
                value = self.ranked(self.live[space], cls) if p else pred
                if value:
                    self.ptr[cls] = value
            elif kind == 36 and field == "arg":
                if v["op"] == 2:
                    value = self.ranked(self.live["pool"], "device") if p else 0
                    if value:
                        self.ptr["device"] = value
                else:
                    value = self.uv(C_SIZE) if p else 0
            elif kind == 34 and field == "requested":
                o = op_at(parent)
                pred = o[2] if o and o[1] == 1 else 0
                value = (pred + self.sv(C_SIZE)) & MASK64 if p else pred
            elif kind == 34 and field == "granted":
                req, a = v["requested"], self.align
                pred = (req + a - 1) // a * a & MASK64 if a else req
                value = (pred + self.sv(C_SIZE)) & MASK64 if p else pred
                if value:
                    low = value & -value
                    if self.align == 0 or low < self.align:
                        self.align = low
            elif FREE_SIZE.get(kind) == field:
                ptr = v["ptr"]
                in_live = ptr in self.live[space]
                pred = self.live[space].size(ptr) if self.size_ok.get(kind, True) and in_live else 0
                value = (pred + self.sv(C_SIZE)) & MASK64 if p else pred
                self.size_ok[kind] = in_live and self.live[space].size(ptr) == value
            elif kind == 37 and field == "op":
                pred = ops[-1][1] if ops else 0
                value = self.uv(C_SMALL) if p else pred
            elif kind == 37 and field == "begin":
                pred = ops[-1][0] if ops else 0
                value = (seq - self.uv(C_SEQREL)) & MASK64 if p else pred
            elif field == "pool" and 34 <= kind <= 38:
                value = self.uv(C_SMALL) if p else self.lastpool.get(kind, 0)
                self.lastpool[kind] = value
            elif enc.startswith("p:"):
                cls = enc[2:]
                col = {38: C_DEV_LIT, 43: C_HOST_LIT}.get(kind, C_STREAM)
                value = 0
                if p:
                    value = (self.ptr[cls] + self.sv(col)) & MASK64
                    if value:
                        self.ptr[cls] = value
            elif enc == "seqrel":
                value = (seq - self.uv(C_SEQREL)) & MASK64 if p else 0
            else:
                if kind in (39, 40):
                    col = C_GC
                elif kind == 45:
                    col = C_END
                elif field in ("size", "requested", "granted") or (kind == 37 and field == "arg"):
                    col = C_SIZE
                else:
                    col = C_SMALL
                value = 0
                if p:
                    value = self.sv(col) if enc == "s" else self.uv(col)
            v[field] = value

        # Then, with all of the event's fields known:
        if kind in ALLOCS and v["ptr"]:
            ptr, size = v["ptr"], v[ALLOC_SIZE[kind]]
            self.live[space].add(ptr, size)
            if taken and whole > size > 0 and ptr + size < 1 << 64:
                self.freed[space].add(ptr + size, whole - size)
        if kind in FREES and v["ptr"]:
            ptr = v["ptr"]
            size = self.live[space].remove(ptr) if ptr in self.live[space] else 0
            self.freed[space].add(ptr, size)
        if kind == 38 and v["grow"] == 1 and v["ptr"] and v["size"]:
            self.freed["pool"].add(v["ptr"], v["size"])
        if thread is None:
            thread = Thread(tid)
        else:
            self.threads.remove(thread)
        self.threads.insert(0, thread)
        del self.threads[THREADS:]
        for which in ("native", "py"):
            to_front(thread.stacks[which], stacks[which], STACKS)
        if kind == 36 and len(thread.ops) < OPEN_OPS:
            thread.ops.append([seq, v["op"], v["arg"]])
        if kind == 37:
            for o in thread.ops:
                if o[0] == v["begin"]:
                    thread.ops.remove(o)
                    break
        self.seq, self.time, self.tid = seq, t_ns, tid
        return self.encode(kind, fields, seq, tid, t_ns, parent, stacks, v)

    def encode(self, kind, fields, seq, tid, t_ns, parent, stacks, v):
        """The event record of section 7, against the bases of section 4,
        written as the recorder does (shortest uvs, fields present exactly
        when not their default)."""
        b = self.bases
        presence, body = 0, b""
        if seq != (b["seq"] + 1) & MASK64:
            presence |= 1
            body += enc_uv((seq - b["seq"] - 1) & MASK64)
        if tid != b["tid"]:
            presence |= 2
            body += enc_uv(tid)
        if t_ns != b["time"]:
            presence |= 4
            body += enc_sv(signed64(t_ns - b["time"]))
        if parent:
            presence |= 8
            body += enc_uv((seq - parent) & MASK64)
        for bit, which in ((4, "native"), (5, "py")):
            if stacks[which]:
                presence |= 1 << bit
                body += enc_uv(stacks[which])
        for bit, (field, enc) in enumerate(fields, start=6):
            value = v[field]
            if not value:
                continue
            presence |= 1 << bit
            if enc == "u":
                body += enc_uv(value)
            elif enc == "s":
                body += enc_sv(value)
            elif enc == "seqrel":
                body += enc_uv((seq - value) & MASK64)
            else:
                cls = enc[2:]
                body += enc_sv(signed64(value - b[cls]))
                b[cls] = value
        b.update(seq=seq, time=t_ns, tid=tid)
        return bytes([presence & 0xFF, presence >> 8]) + body


def frame_records(content, stats):
    """The records of one frame's content: as they are, or, for a column
    block, the records it stands for."""
    c = Cursor(content)
    kind, length = c.uv(), c.uv()
    if kind != COLUMNS:
        return content
    if c.pos + length != len(content):
        raise Invalid("a COLUMNS record that is not its frame's whole content")
    stats["blocks"] += 1
    block = Block(content[c.pos:])
    recs = block.records()
    stats["block_records"] += len(recs)
    return b"".join(recs)


def read_log(path, stats):
    with open(path, "rb") as f:
        raw = f.read()
    chunks = []
    for start, end in zstd_frames(raw):
        stats["frames"] += 1
        chunks.append(frame_records(decompress(raw[start:end]), stats))
    data = b"".join(chunks)
    c = Cursor(data)
    defs = {"string": {}, "native": {}, "code": {}, "py": {}}
    bases = {}
    lines, header = [], None
    pending = {"pool": [], "thread": [], "info": [], "module": [], "module_unload": []}
    defined = set()
    named = {"thread": set(), "pool": set()}
    next_py = 0
    while c.pos < len(data):
        kind, length = c.uv(), c.uv()
        rec = Cursor(data, c.pos, c.pos + length)
        c.pos += length
        if kind == 1:
            assert rec.raw(8) == b"gputrace"
            header = {"version_major": rec.uv(), "version_minor": rec.uv(), "pid": rec.uv(),
                      "ppid": rec.uv(), "wall_start_ns": rec.uv(), "mono_start_ns": rec.uv()}
            assert header["version_major"] in (1, 2), header["version_major"]
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
            next_py = 0  # section 6: PY_STACK_CHAIN's ids start again
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
            next_py = sid + 1
        elif kind in (14, 15):
            # A pushed frame called from a stack defined before, nothing when
            # that stack is not; damage (nothing either) past 256 frames.
            # 2.1's PY_STACK_PUSH: id, outer, one frame. 2.2's PY_STACK_CHAIN:
            # the ids follow `next` by gap, the outer stack is `back` before.
            if kind == 14:
                sid, outer, n = rec.uv(), rec.uv(), 1
            else:
                gap, back, n = rec.uv(), rec.uv(), rec.uv()
                sid = next_py + gap
                outer = sid - back if back else 0
            frames = [(rec.uv(), rec.uv()) for _ in range(n)]
            next_py = sid + n
            below = [] if outer == 0 else defs["py"].get(outer)
            if below is not None and len(below) + n <= 256:
                for i, f in enumerate(frames):
                    below = [f] + below
                    defs["py"][sid + i] = below
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
        elif kind == 49:
            lines.extend(take_definitions(pending))
            lines.extend(decode_py_frees(rec, bases, defs))
        elif kind == 50:
            lines.extend(take_definitions(pending))
            lines.extend(decode_py_allocs(rec, bases, defs))
        elif kind == 51:
            lines.extend(take_definitions(pending))
            lines.extend(decode_py_allocs_split(rec, bases, defs))
    return header, lines + take_definitions(pending)


def take_definitions(pending):
    """Definition lines met since the last event, grouped as FORMAT.md
    section 11 prints them."""
    out = []
    for what in ("pool", "thread", "info", "module", "module_unload"):
        out.extend(pending[what])
        pending[what].clear()
    return out


def decode_common(rec, bases):
    """Section 7: the presence map and the common fields; moves the bases."""
    present = rec.raw(2)
    present = present[0] | present[1] << 8
    seq = bases["seq"] + 1 + (rec.uv() if present & 1 else 0)
    tid = rec.uv() if present & 2 else bases["tid"]
    t_ns = (bases["time"] + (rec.sv() if present & 4 else 0)) & MASK64
    parent = (seq - rec.uv()) & MASK64 if present & 8 else 0
    native = rec.uv() if present & 16 else 0
    py = rec.uv() if present & 32 else 0
    bases.update(seq=seq, tid=tid, time=t_ns)
    return present, seq, tid, t_ns, parent, native, py


def decode_py_frees(rec, bases, defs):
    """Section 7, py_frees (2.3): py_free events of consecutive seqs, the
    first's common fields and domain, then the addresses to the end."""
    present, seq, tid, t_ns, parent, native, py = decode_common(rec, bases)
    if present >> 7:
        raise Invalid("presence 0x%x past py_frees' fields" % present)
    domain = rec.uv() if present & 64 else 0
    ptr = rec.uv()
    out = []
    while True:
        ev = {"seq": seq, "tid": tid, "t_ns": t_ns, "kind": "py_free", "parent": parent,
              "ptr": ptr, "domain": domain}
        finish_event(ev, defs, native, py)
        out.append(ev)
        if rec.pos >= rec.end:
            return out
        seq += 1
        ptr = (ptr + rec.sv()) & MASK64


def decode_py_allocs(rec, bases, defs):
    """Section 7, py_allocs (2.7): py_alloc events of consecutive seqs, the
    first's common fields, domain, size and api, the unit and its address;
    then each later one's lead byte, the fields it names, its address."""
    present, seq, tid, t_ns, parent, native, py = decode_common(rec, bases)
    if present >> 9:
        raise Invalid("presence 0x%x past py_allocs' fields" % present)
    domain = rec.uv() if present & 64 else 0
    size = rec.uv() if present & 128 else 0
    api = rec.uv() if present & 256 else 0
    unit, ptr = rec.uv(), rec.uv()
    if unit == 0:
        raise Invalid("py_allocs with a time unit of 0")
    out = []
    while True:
        ev = {"seq": seq, "tid": tid, "t_ns": t_ns, "kind": "py_alloc", "parent": parent,
              "domain": domain, "ptr": ptr, "size": size, "host_api": api}
        finish_event(ev, defs, native, py)
        out.append(ev)
        if rec.pos >= rec.end:
            return out
        lead = rec.raw(1)[0]
        if lead & 0x80:
            raise Invalid("py_allocs lead byte 0x%x" % lead)
        step = lead & 7 if lead & 7 != 7 else rec.uv()
        seq += 1
        t_ns = (t_ns + step * unit) & MASK64
        py = (py + rec.sv()) & 0xFFFFFFFF if lead & 8 else py
        size = rec.uv() if lead & 16 else size
        api = rec.uv() if lead & 32 else 0
        d = rec.sv()
        ptr = (ptr + (d if lead & 64 else d * 16)) & MASK64


def decode_py_allocs_split(rec, bases, defs):
    """Section 7, py_allocs_split (2.8): py_allocs' first allocation, then
    count and extra (u16), then count lead bytes, extra bytes of the fields
    they name, and the addresses to the end, each from a guess: the last
    address of its size class (1 to 512 bytes rounded up to 16, divided by
    16; 0 for other sizes) in the record plus 16 times the class, every
    class's last address the first allocation's at the start."""
    present, seq, tid, t_ns, parent, native, py = decode_common(rec, bases)
    if present >> 9:
        raise Invalid("presence 0x%x past py_allocs_split's fields" % present)
    domain = rec.uv() if present & 64 else 0
    size = rec.uv() if present & 128 else 0
    api = rec.uv() if present & 256 else 0
    unit, ptr = rec.uv(), rec.uv()
    if unit == 0:
        raise Invalid("py_allocs_split with a time unit of 0")
    counts = rec.raw(4)
    count, extra = counts[0] | counts[1] << 8, counts[2] | counts[3] << 8
    leads = rec.raw(count)
    fields = Cursor(rec.data, rec.pos, rec.pos + extra)
    if fields.end > rec.end:
        raise Invalid("py_allocs_split's fields run past its end")
    addrs = Cursor(rec.data, fields.end, rec.end)

    def size_class(n):
        return (n + 15) >> 4 if 1 <= n <= 512 else 0

    last = [ptr] * 33
    out = []
    for i in range(count + 1):
        if i:
            lead = leads[i - 1]
            if lead & 0x80:
                raise Invalid("py_allocs_split lead byte 0x%x" % lead)
            step = lead & 7 if lead & 7 != 7 else fields.uv()
            seq += 1
            t_ns = (t_ns + step * unit) & MASK64
            py = (py + fields.sv()) & 0xFFFFFFFF if lead & 8 else py
            size = fields.uv() if lead & 16 else size
            api = fields.uv() if lead & 32 else 0
            d = addrs.sv()
            c = size_class(size)
            ptr = (last[c] + 16 * c + (d if lead & 64 else d * 16)) & MASK64
            last[c] = ptr
        ev = {"seq": seq, "tid": tid, "t_ns": t_ns, "kind": "py_alloc", "parent": parent,
              "domain": domain, "ptr": ptr, "size": size, "host_api": api}
        finish_event(ev, defs, native, py)
        out.append(ev)
    if fields.pos != fields.end or addrs.pos != addrs.end:
        raise Invalid("py_allocs_split with bytes left in a stream")
    rec.pos = rec.end
    return out


def decode_event(kind, rec, bases, defs):
    name, fields = EVENTS[kind]
    present, seq, tid, t_ns, parent, native, py = decode_common(rec, bases)
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


def text_of(defs, sid):
    text = defs["string"].get(sid)
    return text.decode("utf-8", "replace") if text is not None else None


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
            # Section 11 does not say; trace-dump prints an undefined string
            # id (0 included) as null, as it does type_name and text.
            frames.append({"file": text_of(defs, file_id), "line": line,
                           "function": text_of(defs, func_id)})
        ev["py_stack"] = frames


def main():
    dump, gen = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "spec.log")
        # Marks, arbitrary events, then a CuPy-like pool's requests: with a pool
        # every frame is written as a column block where that is smaller.
        subprocess.run([gen, log, "3", "3000", "3000"], check=True, capture_output=True)
        stats = {"frames": 0, "blocks": 0, "block_records": 0}
        header, records = read_log(log, stats)
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
        # Section 11: native_stack_cut when, and only when, a frame is in no
        # module (module resolution is the dump's, not this reader's).
        cut = any(frame.get("module") is None for frame in want.get("native_stack", []))
        if want.pop("native_stack_cut", False) is not cut:
            failures += 1
            print("native_stack_cut is not 'a frame in no module':", want, file=sys.stderr)
        for frame in want.get("native_stack", []):
            for key in ("module", "offset", "function", "inlined", "file", "line", "kind"):
                frame.pop(key, None)
        # A module's file_differs is about the files on this machine, not
        # the log: present on every module line, a string or null.
        if want.get("kind") == "module":
            differs = want.pop("file_differs", 0)
            if differs is not None and not isinstance(differs, str):
                failures += 1
                print("a module line's file_differs is neither null nor a path:", want, file=sys.stderr)
        if want != got:
            failures += 1
            if failures < 5:
                print("differs:\n  trace-dump ", want, "\n  spec reader", got, file=sys.stderr)
    kinds = {r["kind"] for r in records}
    if not {"pool", "thread", "info", "module", "module_unload"} <= kinds:
        print("the log lacks definitions of some kind:", sorted(kinds), file=sys.stderr)
        failures += 1
    if not stats["blocks"]:
        print(f"the log has no column block ({stats['frames']} frames): section 15 is not"
              " exercised", file=sys.stderr)
        failures += 1
    print(f"spec reader: {len(records)} events and definitions agree ({stats['blocks']} of"
          f" {stats['frames']} frames were column blocks, {stats['block_records']} records)"
          if not failures else f"spec reader: {failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
