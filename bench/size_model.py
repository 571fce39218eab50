#!/usr/bin/env python3
"""size_model.py - project a real log's size under candidate encodings of the format.

Usage:  python3 bench/size_model.py LOG [--frames N] [--no-verify] [--time-unit NS]

What it models
--------------
It reads LOG (format 1.x, or 2.0 without column blocks: TRACE_COLUMNS=0), decompresses each zstd frame with the
system libzstd (the library libtrace.so links), and decodes every record.
Then:

1. Self-check.  It re-encodes every frame exactly as format/writer.c does
   (records, varints, presence maps, delta bases reset by FRAME) and checks the
   result is byte-identical to the decompressed frame, then compresses each
   frame as the recorder does (zstd level 1, content checksum, one frame per
   chunk: format/chunk_write.c, preload/log_file.h) and prints the modelled size
   next to the file's real size.

2. Candidate encodings, cumulative, one line each: "name: X.XX bytes/event
   (delta vs previous)".  Every candidate keeps every field of every event
   (times at 1 us: t_ns is first rounded down to a multiple of 1000, which is
   what the recorder's coming time unit does) and is per frame: all prediction
   state (live sets, freed lists, move-to-front lists, open operations) starts
   empty at each frame, so a frame decodes without the frames before it (apart
   from definitions, as today).  Each candidate is proven lossless: the
   encoder turns every field into tokens, and a decoder with its own state,
   fed only those tokens and the definitions, rebuilds every event; the
   script stops if one differs.  (The token -> bytes step is plain LEB128 /
   zigzag / presence maps, invertible by construction, and is not decoded.)

   Record-stream candidates are records as today (kind, length, presence,
   fields in bit order) with some fields predicted.  Columnar candidates
   write, per frame, a kind column (every record's kind, definitions
   included), a presence column (u16 per event), one column per common field,
   one column per kind field (grouped per (kind, field), per (layout, field),
   or per field class), and a column of definition records (length + payload,
   whole); event lengths are dropped (the layout gives them).  Columns are
   concatenated (a uv size per column in front) and compressed as one zstd
   frame per frame ("concat"); the per-column table compresses each column on
   its own, which is also printed as a total ("separate", 4 bytes of checksum
   per frame added).

3. The per-column breakdown (compressed bytes per column, top N) of the best
   columnar candidate.

Limits
------
* Frame boundaries are the file's: the model puts the same events in each
  frame.  A smaller encoding would let the recorder fit more events in a
  256 KiB chunk (its seal rule), which compresses a little better still; the
  model does not count that.  The 100 ms seal rule is the same either way.
* Definitions (stacks, strings, modules, threads) are copied as they are
  (kept whole); only events are re-encoded.
* The token -> bytes step is not decoded back (see above), and the columnar
  container (column sizes) is counted but not specified beyond "a uv size per
  column".  Forward compatibility of columns (a 1.x reader skipping an
  unknown event kind by its length) is not modelled: columns need the layout
  of every kind, or a length column.
* Times: a candidate at 1 us cannot restore sub-microsecond times; the
  baseline "1us rounded, ns units" line shows what the rounding alone buys.
* The extra ideas ("x." lines) are tried in a fixed order and each is kept
  only if it gains on top of those kept before; their gains depend on that
  order.  The "g" lines apply the same predictions to the record stream.
* The threaded CUDA test program runs against fake CUDA libraries (a bump
  allocator that never reuses an address, 0.3 us per call): its pointers and
  times are far more regular than a real GPU's.
* CPU: pure Python, about 1 ms per event for the whole list of candidates
  (seed 000's 108k events: 100 s; half that with --no-verify); use --frames
  on long logs (the script prints how many events it modelled).
"""
import argparse
import ctypes
import ctypes.util
import struct
import sys
import time

# ---------------------------------------------------------------------------
# zstd through the system library (same library and parameters as the recorder)

_z = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_z.ZSTD_createCCtx.restype = ctypes.c_void_p
_z.ZSTD_CCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_z.ZSTD_CCtx_setParameter.restype = ctypes.c_size_t
_z.ZSTD_CCtx_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
_z.ZSTD_CCtx_reset.restype = ctypes.c_size_t
_z.ZSTD_compress2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_compress2.restype = ctypes.c_size_t
_z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
_z.ZSTD_compressBound.restype = ctypes.c_size_t
_z.ZSTD_isError.argtypes = [ctypes.c_size_t]
_z.ZSTD_isError.restype = ctypes.c_uint
_z.ZSTD_findFrameCompressedSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_findFrameCompressedSize.restype = ctypes.c_size_t
_z.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
_z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_decompress.restype = ctypes.c_size_t
_z.ZSTD_estimateCStreamSize.argtypes = [ctypes.c_int]
_z.ZSTD_estimateCStreamSize.restype = ctypes.c_size_t
_z.ZSTD_initStaticCCtx.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_z.ZSTD_initStaticCCtx.restype = ctypes.c_void_p
# The recorder's context: static, sized by ZSTD_estimateCStreamSize(1)
# (preload/flusher.c).  Such a context writes no content size in the frame
# header, so its frames are 3 or 4 bytes shorter than ZSTD_createCCtx's.
_CSPACE_SIZE = _z.ZSTD_estimateCStreamSize(1)
_CSPACE = ctypes.create_string_buffer(_CSPACE_SIZE + 64)
_CCTX = _z.ZSTD_initStaticCCtx((ctypes.addressof(_CSPACE) + 63) & ~63, _CSPACE_SIZE)
if not _CCTX:
    _CCTX = _z.ZSTD_createCCtx()
ZSTD_c_compressionLevel, ZSTD_c_checksumFlag = 100, 201


def zcompress(data, level=1, checksum=True):
    """Size of data compressed as one zstd frame, as tf_chunk_compress does."""
    data = bytes(data)
    _z.ZSTD_CCtx_reset(_CCTX, 1)
    _z.ZSTD_CCtx_setParameter(_CCTX, ZSTD_c_compressionLevel, level)
    _z.ZSTD_CCtx_setParameter(_CCTX, ZSTD_c_checksumFlag, 1 if checksum else 0)
    cap = _z.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = _z.ZSTD_compress2(_CCTX, out, cap, data, len(data))
    if _z.ZSTD_isError(n):
        raise RuntimeError("zstd compress failed")
    return n


_DBUF = ctypes.create_string_buffer(64 << 20)


def zframes(blob):
    """Yield (compressed size, decompressed content) of each zstd frame."""
    off = 0
    while off < len(blob):
        rest = blob[off:]
        n = _z.ZSTD_findFrameCompressedSize(rest, len(rest))
        if _z.ZSTD_isError(n):
            raise RuntimeError("bad zstd frame at offset %d" % off)
        magic = struct.unpack_from("<I", blob, off)[0]
        if (magic & 0xFFFFFFF0) == 0x184D2A50:
            yield n, None  # skippable
        else:
            # the recorder's frames carry no content size: decompress into a
            # buffer as large as a frame may be (FORMAT.md: 64 MiB)
            m = _z.ZSTD_decompress(_DBUF, len(_DBUF), rest[:n], n)
            if _z.ZSTD_isError(m):
                raise RuntimeError("zstd decompress failed at offset %d" % off)
            yield n, _DBUF.raw[:m]
        off += n


# ---------------------------------------------------------------------------
# varints

M64 = (1 << 64) - 1


def put_uv(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def zz(v):
    """zigzag of a signed value (python int in [-2^63, 2^63))."""
    return v << 1 if v >= 0 else ((-v) << 1) - 1


def unzz(u):
    return (u >> 1) if not (u & 1) else -((u + 1) >> 1)


def s64(v):
    """v mod 2^64 as a signed 64-bit value."""
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def get_uv(b, i):
    v = 0
    shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def uv_bytes(v):
    out = bytearray()
    put_uv(out, v)
    return bytes(out)


# ---------------------------------------------------------------------------
# the field tables (format/event_fields.h)

U, S, P, Q = "u", "s", "p", "q"  # uv, zigzag s32, pointer delta, seqrel
DEV, HOST, STREAM = 0, 1, 2

CUDA = ("cuda", [("api", U), ("device", S), ("result", S), ("flags", U), ("ptr", P, DEV),
                 ("size", U), ("stream", P, STREAM)])
POOL = ("pool", [("pool", U), ("ptr", P, DEV), ("requested", U), ("granted", U), ("stream", P, STREAM)])
POOL_OP = ("pool_op", [("pool", U), ("op", U), ("begin", Q), ("arg", U)])
SEGMENT = ("segment", [("pool", U), ("grow", U), ("ptr", P, DEV), ("size", U)])
GC = ("gc", [("generation", S), ("collected", U), ("uncollectable", U), ("duration_ns", U),
             ("allocs0", U), ("allocs1", U), ("allocs2", U), ("interp", U)])
HOSTL = ("host", [("domain", U), ("ptr", P, HOST), ("size", U), ("api", U)])
PY_FREE = ("py_free", [("ptr", U), ("domain", U)])
DINIT = ("double_init", [("obj", P, HOST), ("type_name", U)])
MARK = ("mark", [("text", U)])
RFAIL = ("release_failed", [("release", Q), ("result", S)])
END = ("end", [("events", U), ("strings", U), ("native_stacks", U), ("py_stacks", U), ("frames", U)])

KINDS = {
    32: ("cuda_alloc", CUDA), 33: ("cuda_free", CUDA), 34: ("pool_alloc", POOL),
    35: ("pool_free", POOL), 36: ("pool_op_begin", POOL_OP), 37: ("pool_op_end", POOL_OP),
    38: ("pool_segment", SEGMENT), 39: ("gc_start", GC), 40: ("gc_stop", GC),
    41: ("host_alloc", HOSTL), 42: ("host_free", HOSTL), 43: ("py_double_init", DINIT),
    44: ("mark", MARK), 45: ("end", END), 46: ("py_alloc", HOSTL), 47: ("release_failed", RFAIL),
    48: ("py_free", PY_FREE),
}
COMMON = ("seq", "tid", "t", "parent", "native_stack", "py_stack")
REC_FRAME, REC_NATIVE_STACK, REC_PY_STACK = 2, 7, 8
TQ = [1000]  # the time quantum in ns candidates floor times to (--time-unit)


def UNIT():
    return "1 us" if TQ[0] == 1000 else "%d ns" % TQ[0]
OP_ALLOC, OP_FREE = 1, 2
ALLOC_KINDS = {32: "cuda", 34: "pool", 41: "host", 46: "host"}
FREE_KINDS = {33: "cuda", 35: "pool", 42: "host"}


FIELD_INDEX = {(k, f[0]): i for k, (_, (_, fl)) in KINDS.items() for i, f in enumerate(fl)}


def field_index(kind, name):
    return FIELD_INDEX[(kind, name)]


# field classes for the coarsest column grouping
def field_class(kind, fdesc):
    name = fdesc[0]
    if fdesc[1] == P:
        return "ptr:" + ("device", "host", "stream")[fdesc[2]]
    if name in ("size", "requested", "granted", "arg"):
        return "size"
    if fdesc[1] == Q:
        return "seqrel"
    if kind in (39, 40):
        return "gc"
    if kind == 45:
        return "end"
    return "small"  # api, device, result, flags, pool, op, grow, domain, ...


# ---------------------------------------------------------------------------
# reading the log

class Event:
    __slots__ = ("kind", "seq", "tid", "t", "parent", "ns", "ps", "f")

    def key(self):
        return (self.kind, self.seq, self.tid, self.t, self.parent, self.ns, self.ps, tuple(self.f))


class Frame:
    def __init__(self):
        self.index = self.seq0 = self.t0 = None
        self.items = []   # Event or (kind, payload bytes) for definitions
        self.raw = b""
        self.csize = 0


def decode_frame(raw):
    fr = Frame()
    fr.raw = raw
    i = 0
    seq = t = tid = 0
    ptr = [0, 0, 0]
    n = len(raw)
    while i < n:
        kind, i = get_uv(raw, i)
        ln, i = get_uv(raw, i)
        end = i + ln
        payload = raw[i:end]
        if kind == REC_FRAME:
            fr.index, j = get_uv(payload, 0)
            seq, j = get_uv(payload, j)
            t, j = get_uv(payload, j)
            fr.seq0, fr.t0 = seq, t
            tid = 0
            ptr = [0, 0, 0]
            fr.items.append((kind, payload))
        elif kind < 32:
            fr.items.append((kind, payload))
        else:
            if kind == 49:   # PY_FREES, format 2.3 (FORMAT.md section 7)
                sys.exit("the log holds py_frees records (format 2.3, what TRACE_PY_ALLOCS writes for a "
                         "collection's frees): the model re-encodes events one record each, as 2.2 did")
            if kind in (50, 51):   # PY_ALLOCS 2.7, PY_ALLOCS_SPLIT 2.8 (FORMAT.md section 7)
                sys.exit("the log holds py_allocs records (formats 2.7 and 2.8, what TRACE_PY_ALLOCS writes "
                         "for allocations): the model re-encodes events one record each, as 2.6 did")
            if kind not in KINDS:
                raise RuntimeError("unknown event kind %d" % kind)
            e = Event()
            e.kind = kind
            pres = payload[0] | payload[1] << 8
            j = 2
            if pres & 1:
                v, j = get_uv(payload, j)
                e.seq = seq + 1 + v
            else:
                e.seq = seq + 1
            if pres & 2:
                e.tid, j = get_uv(payload, j)
            else:
                e.tid = tid
            if pres & 4:
                v, j = get_uv(payload, j)
                e.t = (t + unzz(v)) & M64
            else:
                e.t = t
            e.parent = e.ns = e.ps = 0
            if pres & 8:
                v, j = get_uv(payload, j)
                e.parent = (e.seq - v) & M64
            if pres & 16:
                e.ns, j = get_uv(payload, j)
            if pres & 32:
                e.ps, j = get_uv(payload, j)
            f = []
            for b, fd in enumerate(KINDS[kind][1][1]):
                if not pres & (64 << b):
                    f.append(0)
                    continue
                v, j = get_uv(payload, j)
                enc = fd[1]
                if enc == U:
                    f.append(v)
                elif enc == S:
                    f.append(unzz(v))
                elif enc == P:
                    val = (ptr[fd[2]] + unzz(v)) & M64
                    ptr[fd[2]] = val
                    f.append(val)
                else:
                    f.append((e.seq - v) & M64)
            e.f = f
            seq, t, tid = e.seq, e.t, e.tid
            fr.items.append(e)
        i = end
    return fr


def read_log(path, max_frames=None):
    blob = open(path, "rb").read()
    frames = []
    skipped = 0
    for csize, raw in zframes(blob):
        if raw is None:
            skipped += csize
            continue
        if max_frames is not None and len(frames) >= max_frames:
            break
        if raw[:1] == b"\x0d":   # a COLUMNS record: a column block (FORMAT.md section 15)
            sys.exit("%s holds column blocks (format 2.0): the model starts from records; "
                     "trace the program again with TRACE_COLUMNS=0" % path)
        fr = decode_frame(raw)
        fr.csize = csize
        frames.append(fr)
    return blob, frames, skipped


# ---------------------------------------------------------------------------
# the current format, exactly (writer.c)

def encode_v1(fr, tdiv=1, round_t=False):
    """Re-encodes a frame as writer.c does.  round_t: times floored to 1 us
    first; tdiv: the unit time deltas are written in (1: ns, 1000: us)."""
    out = bytearray()
    seq = t = tid = 0
    ptr = [0, 0, 0]
    for it in fr.items:
        if not isinstance(it, Event):
            kind, payload = it
            if kind == REC_FRAME:
                seq, t = fr.seq0, fr.t0
                if round_t:
                    t -= t % TQ[0]
                    payload = uv_bytes(fr.index) + uv_bytes(seq) + uv_bytes(t)
                tid = 0
                ptr = [0, 0, 0]
            put_uv(out, kind)
            put_uv(out, len(payload))
            out += payload
            continue
        e = it
        et = e.t - e.t % TQ[0] if round_t else e.t
        body = bytearray()
        pres = 0
        if e.seq != seq + 1:
            pres |= 1
            put_uv(body, (e.seq - seq - 1) & M64)
        if e.tid != tid:
            pres |= 2
            put_uv(body, e.tid)
        if et != t:
            pres |= 4
            put_uv(body, zz(s64(et - t) // tdiv))
        if e.parent:
            pres |= 8
            put_uv(body, (e.seq - e.parent) & M64)
        if e.ns:
            pres |= 16
            put_uv(body, e.ns)
        if e.ps:
            pres |= 32
            put_uv(body, e.ps)
        for b, (fd, v) in enumerate(zip(KINDS[e.kind][1][1], e.f)):
            if not v:
                continue
            pres |= 64 << b
            enc = fd[1]
            if enc == U:
                put_uv(body, v)
            elif enc == S:
                put_uv(body, zz(v))
            elif enc == P:
                put_uv(body, zz(s64(v - ptr[fd[2]])))
                ptr[fd[2]] = v
            else:
                put_uv(body, (e.seq - v) & M64)
        put_uv(out, e.kind)
        put_uv(out, len(body) + 2)
        out.append(pres & 0xFF)
        out.append(pres >> 8)
        out += body
        seq, t, tid = e.seq, et, e.tid
    return out


# ---------------------------------------------------------------------------
# candidate encodings
#
# Every event becomes a presence map and, per present field, a list of
# tokens (sub, typ, value): typ 'u' is written as uv, 's' as zigzag uv; sub
# names the token ('' the field's value or residual, 'rank' a rank, 'lit' a
# literal after a miss) so that columnar candidates may split them.  A field
# is absent from the presence map when its value equals the prediction (0
# where nothing predicts it, as today).

class Opts:
    """What a candidate does.  Every attribute is off unless set."""
    FLAGS = ("cols", "tunit", "free_rank", "pool_pred", "alloc_rank", "stack_mtf",
             "op_free_arg", "free_size", "granted_align", "opend_begin", "parent_pred",
             "tid_mtf", "stack_kind", "pool_prev", "split_tokens", "common_by_kind",
             "presence_by_kind", "separate", "remainders", "presence_xor", "size_split")

    def __init__(self, **kw):
        for f in self.FLAGS:
            setattr(self, f, None)
        self.tunit = 1
        for k, v in kw.items():
            if k not in self.FLAGS:
                raise KeyError(k)
            setattr(self, k, v)

    def but(self, **kw):
        o = Opts()
        for f in self.FLAGS:
            setattr(o, f, getattr(self, f))
        for k, v in kw.items():
            if k not in self.FLAGS:
                raise KeyError(k)
            setattr(o, k, v)
        return o


SPACE_OF = {32: "cuda", 33: "cuda", 34: "pool", 35: "pool", 41: "host", 42: "host", 46: "host"}
SIZE_FIELD = {32: "size", 33: "size", 34: "granted", 35: "granted", 41: "size", 42: "size", 46: "size"}
FREED_MAX = 4096  # recently freed blocks remembered per space


def rank_of(lst, v):
    """1 for the newest (last) element of a small list, 0 when absent."""
    try:
        return len(lst) - lst.index(v)
    except ValueError:
        return 0


class RankSet:
    """A set of values ordered by when they were (last) added: rank 1 is the
    newest.  A Fenwick tree over insertion stamps makes rank and lookup by
    rank O(log n); cap bounds the insertions (one per event at most)."""

    def __init__(self, cap):
        self.n = cap
        self.tree = [0] * (cap + 1)
        self.val = [None] * (cap + 1)
        self.stamp = {}
        self.next = 1
        self.count = 0

    def __contains__(self, v):
        return v in self.stamp

    def __len__(self):
        return self.count

    def _upd(self, i, d):
        t, n = self.tree, self.n
        while i <= n:
            t[i] += d
            i += i & -i

    def add(self, v):
        if v in self.stamp:
            self.remove(v)
        s = self.next
        self.next += 1
        self.stamp[v] = s
        self.val[s] = v
        self._upd(s, 1)
        self.count += 1

    def remove(self, v):
        s = self.stamp.pop(v, None)
        if s:
            self._upd(s, -1)
            self.val[s] = None
            self.count -= 1

    def rank(self, v):
        s = self.stamp.get(v)
        if not s:
            return 0
        t, c = self.tree, 0
        while s:
            c += t[s]
            s -= s & -s
        return self.count - c + 1

    def __getitem__(self, neg):
        """self[-r]: the element of rank r (list-like, for _ptr_out)."""
        k = self.count + neg + 1   # k-th oldest live element
        pos, t, step = 0, self.tree, 1 << self.n.bit_length()
        while step:
            nxt = pos + step
            if nxt <= self.n and t[nxt] < k:
                pos = nxt
                k -= t[nxt]
            step >>= 1
        return self.val[pos + 1]

    def oldest(self):
        return self[-self.count]


class State:
    """Prediction state of one frame: the encoder and the decoder each keep one."""

    def __init__(self, fr):
        self.seq = fr.seq0
        self.t = fr.t0 - fr.t0 % TQ[0]
        self.tid = 0
        self.ptr = [0, 0, 0]
        cap = len(fr.items) + 1
        self.live = {sp: RankSet(cap) for sp in ("cuda", "pool", "host")}
        self.info = {}       # (space, ptr) -> the block's size as its allocation gave it
        self.freed = {sp: RankSet(cap) for sp in ("cuda", "pool", "host")}
        self.ops = {}        # open pool operations: begin seq -> (op, arg)
        self.opstack = {}    # tid -> begin seqs of its open operations, innermost last
        self.mtf = {}        # stack move-to-front lists
        self.tids = []
        self.lastdef = {REC_NATIVE_STACK: 0, REC_PY_STACK: 0}
        self.align = 0
        self.lastpool = {}
        self.size_ok = {}    # free kind -> did its last free carry its block's size
        self.free_size = {}  # freed block (or remainder) -> its size, for remainders

    def definition(self, kind, payload):
        if kind in self.lastdef:
            self.lastdef[kind] = get_uv(payload, 0)[0]

    def stack_key(self, o, space, e):
        return (space, e.tid, e.kind) if o.stack_kind else (space, e.tid)

    def parent_pred(self, e):
        stk = self.opstack.get(e.tid)
        if not stk:
            return 0
        if e.kind == 37:  # an op_end closes the innermost op: its parent is the one outside
            return stk[-2] if len(stk) >= 2 else 0
        return stk[-1]

    def update(self, o, e, et):
        self.seq, self.t, self.tid = e.seq, et, e.tid
        if o.tid_mtf:
            if e.tid in self.tids:
                self.tids.remove(e.tid)
            self.tids.append(e.tid)
        if o.stack_mtf:
            for space, sid in ((REC_NATIVE_STACK, e.ns), (REC_PY_STACK, e.ps)):
                lst = self.mtf.setdefault(self.stack_key(o, space, e), [])
                if sid in lst:
                    lst.remove(sid)
                lst.append(sid)
        k = e.kind
        if k in ALLOC_KINDS:
            sp = SPACE_OF[k]
            p = e.f[field_index(k, "ptr")]
            if p:
                self.live[sp].add(p)
                size = self.info[(sp, p)] = e.f[field_index(k, SIZE_FIELD[k])]
                if o.remainders:
                    # a free block (or new segment) split by this allocation:
                    # what is left of it is where the next one may start
                    whole = self.free_size.pop(p, 0)
                    if whole > size and size:
                        self.freed[sp].add(p + size)
                        self.free_size[p + size] = whole - size
        elif k == 38 and o.remainders and e.f[1] and e.f[2]:
            self.freed["pool"].add(e.f[2])
            self.free_size[e.f[2]] = e.f[3]
        elif k in FREE_KINDS:
            sp = SPACE_OF[k]
            p = e.f[field_index(k, "ptr")]
            if p:
                self.live[sp].remove(p)
                fl = self.freed[sp]
                fl.add(p)
                if o.remainders:
                    self.free_size[p] = self.info.get((sp, p), 0)
                if len(fl) > FREED_MAX:
                    fl.remove(fl.oldest())
        elif k == 36:
            self.ops[e.seq] = (e.f[1], e.f[3])
            self.opstack.setdefault(e.tid, []).append(e.seq)
        elif k == 37:
            b = e.f[2]
            stk = self.opstack.get(e.tid)
            if stk and b in stk:
                stk.remove(b)
            self.ops.pop(b, None)
        if k in (34, 35, 36, 37, 38):
            self.lastpool[k] = e.f[0]


# Field coders.  enc(st, o, e, et, b, v) -> tokens or None (absent);
# dec(st, o, e, et, b, toks) -> value, where e holds the fields decoded so
# far (common fields and kind fields before b).  Both run before update().

def _default_enc(st, o, e, b, fd, v):
    if not v:
        return None
    enc = fd[1]
    if enc == U:
        return [("", "u", v)]
    if enc == S:
        return [("", "s", v)]
    if enc == P:
        d = s64(v - st.ptr[fd[2]])
        st.ptr[fd[2]] = v
        return [("", "s", d)]
    return [("", "u", (e.seq - v) & M64)]


def _default_dec(st, o, e, b, fd, toks):
    if toks is None:
        return 0
    v = toks[0][2]
    enc = fd[1]
    if enc in (U, S):
        return v
    if enc == P:
        v = (st.ptr[fd[2]] + v) & M64
        st.ptr[fd[2]] = v
        return v
    return (e.seq - v) & M64


def _ptr_in(lst, st, cls, v):
    """A pointer as its rank in lst (a RankSet), or 0 and a delta from ptr[cls]."""
    r = lst.rank(v) if lst else 0
    d = s64(v - st.ptr[cls])
    st.ptr[cls] = v
    return [("rank", "u", r)] if r else [("rank", "u", 0), ("lit", "s", d)]


def _ptr_out(lst, st, cls, toks):
    r = toks[0][2]
    v = lst[-r] if r else (st.ptr[cls] + toks[1][2]) & M64
    st.ptr[cls] = v
    return v


def _parent_op(st, e):
    return st.ops.get(e.parent) if e.parent else None


class Coders:
    """The special field coders a candidate turns on, by (kind, field name)."""

    def __init__(self, o):
        self.o = o
        self.table = {}
        for k, (kname, (lname, fields)) in KINDS.items():
            for b, fd in enumerate(fields):
                c = self.pick(k, fd[0])
                if c:
                    self.table[(k, b)] = c

    def pick(self, k, name):
        o = self.o
        if name == "ptr" and k in FREE_KINDS and (o.free_rank or (o.op_free_arg and k == 35)):
            return "free_ptr"
        if name == "ptr" and k in ALLOC_KINDS and o.alloc_rank:
            return "alloc_ptr"
        if k == 34 and name == "requested" and o.pool_pred:
            return "requested"
        if k == 34 and name == "granted" and o.pool_pred:
            return "granted"
        if k in FREE_KINDS and name == SIZE_FIELD[k] and o.free_size:
            return "free_size"
        if k == 36 and name == "arg" and (o.op_free_arg or o.size_split):
            return "op_arg"
        if k == 37 and name == "begin" and o.opend_begin:
            return "op_begin"
        if name == "pool" and k in (34, 35, 36, 37, 38) and o.pool_prev:
            return "pool"
        return None

    # --- predictions (value the field takes when absent) ---
    def predict(self, c, st, e, b):
        o = self.o
        k = e.kind
        if c == "free_ptr":
            if o.op_free_arg and k == 35:
                op = _parent_op(st, e)
                if op and op[0] == OP_FREE:
                    return op[1]
            return 0
        if c == "requested":
            op = _parent_op(st, e)
            return op[1] if op and op[0] == OP_ALLOC else 0
        if c == "granted":
            req = e.f[field_index(34, "requested")]
            if o.granted_align and st.align:
                a = st.align
                return (req + a - 1) // a * a
            return req
        if c == "free_size":
            if not st.size_ok.get(k, True):
                return 0
            p = e.f[field_index(k, "ptr")]
            return st.info.get((SPACE_OF[k], p), 0)
        if c == "op_begin":
            stk = st.opstack.get(e.tid)
            return stk[-1] if stk else 0
        if c == "pool":
            return st.lastpool.get(k, 0)
        return 0  # alloc_ptr, op_arg

    def enc(self, c, st, e, b, fd, v):
        if c is None:
            return _default_enc(st, self.o, e, b, fd, v)
        pred = self.predict(c, st, e, b)
        toks = None
        if v != pred:
            if c == "free_ptr":
                toks = _ptr_in(st.live[SPACE_OF[e.kind]] if self.o.free_rank else None, st, fd[2], v)
            elif c == "alloc_ptr":
                toks = _ptr_in(st.freed[SPACE_OF[e.kind]], st, fd[2], v)
            elif c == "op_arg":
                if e.f[1] == OP_FREE and self.o.op_free_arg:
                    toks = _ptr_in(st.live["pool"], st, DEV, v)
                elif self.o.size_split:
                    bl = v.bit_length()
                    toks = [("cls", "u", bl), ("mant", "u", v - (1 << (bl - 1)))]
                else:
                    toks = [("", "u", v)]
            elif c == "op_begin":
                toks = [("", "u", (e.seq - v) & M64)]
            elif c == "pool":
                toks = [("", "u", v)]
            else:
                toks = [("", "s", s64(v - pred))]
        elif c in ("free_ptr", "alloc_ptr", "op_arg") and v and (c != "op_arg" or (e.f[1] == OP_FREE and self.o.op_free_arg)):
            st.ptr[DEV if c == "op_arg" else fd[2]] = v
        self.after(c, st, e, v)
        return toks

    def dec(self, c, st, e, b, fd, toks):
        if c is None:
            return _default_dec(st, self.o, e, b, fd, toks)
        pred = self.predict(c, st, e, b)
        if toks is None:
            v = pred
            if c in ("free_ptr", "alloc_ptr", "op_arg") and v and (c != "op_arg" or (e.f[1] == OP_FREE and self.o.op_free_arg)):
                st.ptr[DEV if c == "op_arg" else fd[2]] = v
        elif c == "free_ptr":
            v = _ptr_out(st.live[SPACE_OF[e.kind]] if self.o.free_rank else None, st, fd[2], toks)
        elif c == "alloc_ptr":
            v = _ptr_out(st.freed[SPACE_OF[e.kind]], st, fd[2], toks)
        elif c == "op_arg":
            if e.f[1] == OP_FREE and self.o.op_free_arg:
                v = _ptr_out(st.live["pool"], st, DEV, toks)
            elif self.o.size_split:
                v = (1 << (toks[0][2] - 1)) + toks[1][2]
            else:
                v = toks[0][2]
        elif c in ("op_begin",):
            v = (e.seq - toks[0][2]) & M64
        elif c == "pool":
            v = toks[0][2]
        else:
            v = (pred + toks[0][2]) & M64
        self.after(c, st, e, v)
        return v

    def after(self, c, st, e, v):
        """State a coder keeps that depends on the value (same on both sides)."""
        if c == "alloc_ptr" and v:
            st.freed[SPACE_OF[e.kind]].remove(v)
        elif c == "granted" and v:
            a = v & -v
            st.align = min(st.align, a) if st.align else a
        elif c == "free_size":
            p = e.f[field_index(e.kind, "ptr")]
            blk = st.info.get((SPACE_OF[e.kind], p))
            st.size_ok[e.kind] = blk is not None and blk == v


def enc_event(st, o, cod, e, et):
    """-> (presence, [(bit, tokens)])"""
    pres = 0
    out = []
    if e.seq != st.seq + 1:
        pres |= 1
        out.append((0, [("", "u", (e.seq - st.seq - 1) & M64)]))
    if e.tid != st.tid:
        pres |= 2
        if o.tid_mtf:
            r = rank_of(st.tids, e.tid)
            out.append((1, [("rank", "u", r)] if r else [("rank", "u", 0), ("lit", "u", e.tid)]))
        else:
            out.append((1, [("", "u", e.tid)]))
    if et != st.t:
        pres |= 4
        out.append((2, [("", "s", s64(et - st.t) // o.tunit)]))
    ppred = st.parent_pred(e) if o.parent_pred else 0
    if e.parent != ppred:
        pres |= 8
        out.append((3, [("", "u", (e.seq - e.parent) & M64)]))
    for bit, sid, space in ((4, e.ns, REC_NATIVE_STACK), (5, e.ps, REC_PY_STACK)):
        if o.stack_mtf:
            lst = st.mtf.get(st.stack_key(o, space, e), ())
            pred = lst[-1] if lst else 0
            if sid != pred:
                pres |= 1 << bit
                r = rank_of(lst, sid) if lst else 0
                out.append((bit, [("rank", "u", r)] if r else
                            [("rank", "u", 0), ("lit", "s", sid - st.lastdef[space])]))
        elif sid:
            pres |= 1 << bit
            out.append((bit, [("", "u", sid)]))
    fields = KINDS[e.kind][1][1]
    for b, fd in enumerate(fields):
        toks = cod.enc(cod.table.get((e.kind, b)), st, e, b, fd, e.f[b])
        if toks is not None:
            pres |= 64 << b
            out.append((6 + b, toks))
    return pres, out


def dec_event(st, o, cod, kind, pres, toks_list):
    """The decoder's side: rebuilds the event from presence and tokens."""
    toks = dict(toks_list)
    e = Event()
    e.kind = kind
    e.seq = st.seq + 1 + (toks[0][0][2] if pres & 1 else 0)
    if pres & 2:
        tk = toks[1]
        if o.tid_mtf:
            e.tid = st.tids[-tk[0][2]] if tk[0][2] else tk[1][2]
        else:
            e.tid = tk[0][2]
    else:
        e.tid = st.tid
    et = (st.t + toks[2][0][2] * o.tunit) & M64 if pres & 4 else st.t
    e.t = et
    ppred = st.parent_pred(e) if o.parent_pred else 0
    e.parent = (e.seq - toks[3][0][2]) & M64 if pres & 8 else ppred
    ids = []
    for bit, space in ((4, REC_NATIVE_STACK), (5, REC_PY_STACK)):
        if o.stack_mtf:
            lst = st.mtf.get(st.stack_key(o, space, e), ())
            if pres & (1 << bit):
                tk = toks[bit]
                ids.append(lst[-tk[0][2]] if tk[0][2] else tk[1][2] + st.lastdef[space])
            else:
                ids.append(lst[-1] if lst else 0)
        else:
            ids.append(toks[bit][0][2] if pres & (1 << bit) else 0)
    e.ns, e.ps = ids
    e.f = []
    for b, fd in enumerate(KINDS[kind][1][1]):
        tk = toks.get(6 + b) if pres & (64 << b) else None
        e.f.append(cod.dec(cod.table.get((kind, b)), st, e, b, fd, tk))
    return e, et


def col_name(o, e_kind, bit, sub):
    kname, (lname, fields) = KINDS[e_kind]
    if bit < 6:
        name = "c." + COMMON[bit]
        if o.common_by_kind:
            name += "." + kname
    else:
        fd = fields[bit - 6]
        if o.cols == "kind":
            name = kname + "." + fd[0]
        elif o.cols == "layout":
            name = lname + "." + fd[0]
        else:
            name = field_class(e_kind, fd)
    if sub and o.split_tokens:
        name += "/" + sub
    return name


def put_tok(buf, typ, v):
    put_uv(buf, zz(v) if typ == "s" else v)


def encode_candidate(fr, o, verify=True):
    """-> (record-stream bytes or None, {column: bytes} or None)."""
    cod = Coders(o)
    st = State(fr)
    dst = State(fr) if verify else None
    rec = bytearray() if not o.cols else None
    cols = {} if o.cols else None
    colorder = []
    last_pres = {}   # presence_xor: the previous presence map of each kind

    def col(name):
        c = cols.get(name)
        if c is None:
            c = cols[name] = bytearray()
            colorder.append(name)
        return c
    if cols is not None:
        for name in ("kind", "presence", "defs"):
            col(name)
    for it in fr.items:
        if not isinstance(it, Event):
            kind, payload = it
            if kind == REC_FRAME:
                payload = uv_bytes(fr.index) + uv_bytes(fr.seq0) + uv_bytes(fr.t0 - fr.t0 % TQ[0])
            st.definition(kind, payload)
            if dst:
                dst.definition(kind, payload)
            if rec is not None:
                put_uv(rec, kind)
                put_uv(rec, len(payload))
                rec += payload
            else:
                put_uv(cols["kind"], kind)
                put_uv(cols["defs"], len(payload))
                cols["defs"] += payload
            continue
        e = it
        et = e.t - e.t % TQ[0]
        pres, toks = enc_event(st, o, cod, e, et)
        if dst:
            d, det = dec_event(dst, o, cod, e.kind, pres, toks)
            want = e.key()
            want = want[:3] + (et,) + want[4:]
            if d.key() != want:
                raise AssertionError("candidate does not decode: event seq %d\n got  %r\n want %r"
                                     % (e.seq, d.key(), want))
            dst.update(o, d, det)
        st.update(o, e, et)
        if o.presence_xor:
            wp = pres ^ last_pres.get(e.kind, 0)
            last_pres[e.kind] = pres
        if rec is not None:
            body = bytearray()
            for bit, tk in toks:
                for sub, typ, v in tk:
                    put_tok(body, typ, v)
            put_uv(rec, e.kind)
            if not o.presence_xor:
                put_uv(rec, len(body) + 2)
            if o.presence_xor:
                put_uv(rec, len(body) + len(uv_bytes(wp)))
                put_uv(rec, wp)
            else:
                rec.append(pres & 0xFF)
                rec.append(pres >> 8)
            rec += body
        else:
            put_uv(cols["kind"], e.kind)
            pc = col("presence." + KINDS[e.kind][0]) if o.presence_by_kind else cols["presence"]
            if o.presence_xor:
                put_uv(pc, wp)
            else:
                pc.append(pres & 0xFF)
                pc.append(pres >> 8)
            for bit, tk in toks:
                for sub, typ, v in tk:
                    put_tok(col(col_name(o, e.kind, bit, sub)), typ, v)
    return rec, cols


# ---------------------------------------------------------------------------
# sizes

def cols_size(o, cols, per_col=None):
    """Compressed size of one frame's columns.  concat: one zstd frame holding
    every column, each preceded by its number and length; separate: each
    column compressed on its own (or stored, when that is smaller), plus 4
    bytes of checksum for the frame."""
    names = [n for n in cols if cols[n]]
    if o.separate or per_col is not None:
        total = 4
        for n in names:
            c = bytes(cols[n])
            z = min(zcompress(c, checksum=False), len(c))
            hdr = 1 + len(uv_bytes(len(c) + 1))
            if per_col is not None:
                per_col[n] = per_col.get(n, [0, 0])
                per_col[n][0] += z + hdr
                per_col[n][1] += len(c)
            total += z + hdr
        if o.separate:
            return total
    buf = bytearray()
    for i, n in enumerate(names):
        put_uv(buf, i)
        put_uv(buf, len(cols[n]))
    for n in names:
        buf += cols[n]
    return zcompress(buf)


def model(frames, o, verify, per_col=None):
    total = 0
    for fr in frames:
        rec, cols = encode_candidate(fr, o, verify)
        total += zcompress(rec) if rec is not None else cols_size(o, cols, per_col)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--frames", type=int, help="model only the first N zstd frames")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip decoding each candidate back (twice as fast)")
    ap.add_argument("--top", type=int, default=10, help="columns in the breakdown")
    ap.add_argument("--time-unit", type=int, default=1000, metavar="NS",
                    help="candidates floor times to multiples of NS and write them in that unit "
                         "(default 1000: 1 us; 1 keeps exact ns)")
    a = ap.parse_args()
    verify = not a.no_verify
    TQ[0] = max(1, a.time_unit)
    t0 = time.time()
    blob, frames, skipped = read_log(a.log, a.frames)
    nev = sum(1 for fr in frames for it in fr.items if isinstance(it, Event))
    ndef = sum(1 for fr in frames for it in fr.items if not isinstance(it, Event))
    if not nev:
        sys.exit("no events in the frames read")
    real = sum(fr.csize for fr in frames)
    whole = a.frames is None
    print("log %s: %d bytes, %d frames modelled%s, %d events, %d definition records"
          % (a.log, len(blob), len(frames), "" if whole else " (--frames)", nev, ndef))

    # 1. self-check: the current format, byte for byte
    same = all(encode_v1(fr) == fr.raw for fr in frames)
    v1 = sum(zcompress(encode_v1(fr)) for fr in frames)
    print("\nself-check: re-encoded records identical to the file's: %s" % ("yes" if same else "NO"))
    print("self-check: modelled %d bytes (%.2f bytes/event), file's frames %d bytes (%.2f bytes/event)%s, "
          "difference %+.2f%%" % (v1, v1 / nev, real, real / nev,
                                  "" if not whole else ", file %d bytes" % len(blob),
                                  100.0 * (v1 - real) / real))
    if not same or abs(v1 - real) > 0.01 * real:
        sys.exit("self-check failed: the model does not reproduce the file")
    rounded = sum(zcompress(encode_v1(fr, round_t=True)) for fr in frames)
    print("\nreference (format 1.4):")
    print("  v1, exact ns times: %.3f bytes/event" % (v1 / nev))
    print("  v1, times floored to %s, still written in ns: %.3f bytes/event (%+.3f)"
          % (UNIT(), rounded / nev, (rounded - v1) / nev))

    # the framework with nothing turned on must be the format itself
    base = Opts(tunit=1)
    for fr in frames:
        rec, _ = encode_candidate(fr, base, verify)
        if rec != encode_v1(fr, round_t=True):
            sys.exit("self-check failed: the candidate framework differs from v1 in frame %d" % fr.index)
    print("  (candidate framework with no prediction == v1 at %s, byte for byte%s)"
          % (UNIT(), ", every candidate decoded back" if verify else ""))

    results = []
    prev = [rounded]

    def line(name, o, keep_if_better=False):
        size = model(frames, o, verify)
        d = (size - prev[0]) / nev
        tag = ""
        if keep_if_better and size >= prev[0]:
            tag = "  [not kept: no gain]"
        print("  %s: %.3f bytes/event (%+.3f vs previous)%s" % (name, size / nev, d, tag), flush=True)
        results.append((name, size))
        if not tag:
            prev[0] = size
            return size, True
        return size, False

    print("\ncandidates (cumulative; all at %s, per frame, lossless):" % UNIT())
    o = Opts(tunit=TQ[0])
    line("a. times in %s units (records)" % UNIT(), o)
    rec_a = prev[0]
    # b: columns, three groupings, each against a
    best = None
    for g, desc in (("kind", "per (kind, field)"), ("layout", "per (layout, field)"),
                    ("class", "per field class")):
        prev[0] = rec_a
        oc = o.but(cols=g)
        size, _ = line("b. columnar, kind fields %s, one zstd frame" % desc, oc)
        if best is None or size < best[0]:
            best = (size, oc, desc)
    prev[0] = best[0]
    o = best[1]
    print("     -> columns %s are the smallest; going on with them" % best[2])
    size_sep, _ = line("b'. same, each column compressed on its own", o.but(separate=True), True)
    if size_sep < best[0]:
        o = o.but(separate=True)
    else:
        prev[0] = best[0]
    line("c. + freed pointer as rank in the frame's live blocks", o.but(free_rank=True))
    o = o.but(free_rank=True)
    line("d. + pool_alloc granted-requested, requested from the parent op's arg", o.but(pool_pred=True))
    o = o.but(pool_pred=True)
    line("e. + allocated pointer as rank in the frame's freed blocks", o.but(alloc_rank=True))
    o = o.but(alloc_rank=True)
    line("f. + stack ids by per-thread move-to-front rank", o.but(stack_mtf=True))
    o = o.but(stack_mtf=True)
    cf_cols = o
    print("  more ideas (each kept only if it gains):")
    extras = [
        ("op_free_arg", "pool_op_begin(free) arg as live rank; pool_free ptr = its op's arg"),
        ("free_size", "a free's size = its block's (when the last free of its kind matched)"),
        ("remainders", "what a split leaves of a freed block (or new segment) counts as freed"),
        ("granted_align", "granted predicted as requested rounded up to the frame's granularity"),
        ("opend_begin", "pool_op_end begin = the thread's innermost open op"),
        ("parent_pred", "parent = the thread's innermost open op"),
        ("tid_mtf", "tid as move-to-front rank among the frame's threads"),
        ("stack_kind", "stack move-to-front lists per (thread, kind)"),
        ("pool_prev", "pool id = the previous event of the kind's"),
        ("split_tokens", "ranks and literals in columns of their own"),
        ("size_split", "a requested size (op arg) as bit length + the bits below its top one"),
        ("presence_xor", "presence map as uv of its XOR with the previous one of its kind"),
        ("common_by_kind", "common fields in one column per kind"),
        ("presence_by_kind", "presence maps in one column per kind"),
    ]
    used = []
    for flag, desc in extras:
        _, kept = line("x. + " + desc, o.but(**{flag: True}), True)
        if kept:
            o = o.but(**{flag: True})
            used.append(flag)
    best_cols = o
    # g: the same predictions on the record stream
    print("  the same predictions without columns (record stream):")
    prev[0] = rec_a
    og = Opts(tunit=TQ[0], free_rank=True, pool_pred=True, alloc_rank=True, stack_mtf=True)
    line("g. records + c-f (vs a)", og)
    rec_only = [f for f in used if f not in ("split_tokens", "common_by_kind", "presence_by_kind",
                                              "presence_xor")]
    line("g'. records + c-f + kept ideas %s (vs g)" % ",".join(rec_only) if rec_only else "g'. (none)",
         og.but(**{f: True for f in rec_only}))
    if "presence_xor" in used:
        line("g''. + presence map XOR the previous of its kind, as uv (vs g')",
             og.but(presence_xor=True, **{f: True for f in rec_only}))

    # 3. where the bytes go
    per_col = {}
    model(frames, best_cols.but(separate=True), False, per_col)
    tot = sum(v[0] for v in per_col.values())
    print("\ncolumns of the best columnar candidate, each compressed on its own "
          "(total %d bytes, %.2f bytes/event):" % (tot, tot / nev))
    for n, (z, raw) in sorted(per_col.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print("  %-28s %9d bytes  %.3f bytes/event  (%d raw)" % (n, z, z / nev, raw))
    print("\n%d events modelled in %.0f s" % (nev, time.time() - t0))


if __name__ == "__main__":
    main()
