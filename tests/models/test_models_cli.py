#!/usr/bin/env python3
"""The pool models against imported JSON logs (trace-replay import), one case
per behaviour of issue 18, through trace-replay check --json:

  placement  a collection nested in a CuPy 5.2 free runs where its native
             stack says it started: in _append_to_free_list (corruption), in
             PooledMemory.free's hook call after the bookkeeping (none), with
             a stack that names nothing the model knows or no stack (no
             violation: an ambiguity with both outcomes, and a note)
  torch      PYTORCH_ALLOC_CONF as the process saw it (env:, torch.alloc_conf,
             a snapshot's allocator_settings through torch-snapshot-import):
             max_split_size_mb, roundup_power2_divisions, expandable_segments
             (mappings predicted, unmapped by empty_cache), and loud notes for
             garbage_collection_threshold, private pools, cudaMallocAsync
  bfc        allow_growth=false (the first region is the memory limit), the
             limit learnt from the log, Extend's min(curr, available) cap and
             0.9 back-off, garbage collection of free regions
  ladder     CuPy's out-of-memory ladder: refusal, free_all_blocks, refusal,
             gc.collect(), free_all_blocks again (the collection's chunks go
             back), success; cupy-next frees directly there, stages a free
             only under its held lock and commits it before free_all gives
             segments back; a release whose call failed is not one
  limit      CUPY_GPU_MEMORY_LIMIT written inside CuPy's first operation
             (where the recorder writes it) is followed
  pool gone  a CuPy block freed unseen (its MemoryPool object gone) with its
             segment: a warning unseen_free, not segment_in_use
  points     cupy5's new re-entrancy points: a collection in _arena while the
             stream's arena is being made again; one in free_all_blocks'
             _compact_index
  verdict    fidelity said next to the verdict; model notes in text and JSON

    test_models_cli.py --replay TRACE_REPLAY --places LIBPLACES --snapshot-import SCRIPT
"""
import argparse
import contextlib
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile

MiB = 1 << 20
ALLOC, FREE = 1, 2
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Log:
    """JSON lines for trace-replay import; nesting follows the with blocks."""

    def __init__(self, *pools):
        self.lines = [{"kind": "header", "cmdline": "test_models_cli", "tracer_version": "test"}]
        self.seq, self.open = 0, []
        for pid, name in pools:
            self.lines.append({"kind": "pool", "pool": pid, "name": name})

    def info(self, key, value):
        self.lines.append({"kind": "info", "key": key, "value": value})

    def ev(self, kind, stack=None, **fields):
        self.seq += 1
        e = {"seq": self.seq, "tid": 1, "t_ns": self.seq * 1000, "kind": kind,
             "parent": self.open[-1] if self.open else 0}
        e.update(fields)
        if stack:
            e["native_stack"] = stack
        self.lines.append(e)
        return self.seq

    @contextlib.contextmanager
    def op(self, pool, op, arg):
        begin = self.ev("pool_op_begin", pool=pool, op=op, begin=0, arg=arg)
        self.open.append(begin)
        yield begin
        self.open.pop()
        self.ev("pool_op_end", pool=pool, op=0, begin=begin, arg=0)

    @contextlib.contextmanager
    def gc(self, stack=None):
        start = self.ev("gc_start", stack=stack, generation=2)
        self.open.append(start)
        yield start
        self.open.pop()
        self.ev("gc_stop", generation=2)

    def cuda_alloc(self, ptr, size, result=0):
        self.ev("cuda_alloc", api="cudaMalloc", device=0 if not result else -1, result=result, flags=0,
                ptr=ptr, size=size, stream=0)

    def cuda_free(self, ptr):
        self.ev("cuda_free", api="cudaFree", device=0, result=0, flags=0, ptr=ptr, size=0, stream=0)

    def segment(self, pool, grow, ptr, size):
        self.ev("pool_segment", pool=pool, grow=grow, ptr=ptr, size=size)

    def alloc(self, pool, size, ptr, granted=None, stream=0, segments=(), stack=None):
        """An alloc operation; segments: (ptr, size[, result]) device attempts
        nested in it, in order."""
        with self.op(pool, ALLOC, size):
            for s in segments:
                self.cuda_alloc(*s)
            if ptr:
                self.ev("pool_alloc", pool=pool, ptr=ptr, requested=size, granted=granted or size, stream=stream)

    def free(self, pool, ptr):
        with self.op(pool, FREE, ptr):
            self.ev("pool_free", pool=pool, ptr=ptr, requested=0, granted=0, stream=0)

    def end(self):
        self.ev("end")

    def write(self, path):
        with open(path, "w") as f:
            for line in self.lines:
                f.write(json.dumps(line) + "\n")


class Tools:
    def __init__(self, args, tmp):
        self.replay, self.tmp, self.places = args.replay, tmp, args.places
        self.snapshot_import = args.snapshot_import
        self.n = 0
        out = subprocess.run(["nm", args.places], capture_output=True, text=True, check=True).stdout
        self.offsets = {p[2]: int(p[0], 16) for p in (line.split() for line in out.splitlines()) if len(p) == 3}

    def stack(self, *functions):
        """A native stack whose frames are in these functions (innermost
        first), in the module made from the places library: return
        addresses, one past each function's first byte, as the recorder's
        frames all are (the innermost too)."""
        base = 0x7f0000000000
        return [{"ip": base + self.offsets[f] + 1, "module": self.places,
                 "offset": self.offsets[f] + 1} for f in functions]

    def log(self, log):
        self.n += 1
        src, out = (os.path.join(self.tmp, "case%d.%s" % (self.n, ext)) for ext in ("jsonl", "tlog"))
        log.write(src)
        p = subprocess.run([self.replay, "import", "-o", out, src], capture_output=True, text=True)
        if p.returncode:
            raise SystemExit("import failed: %s" % p.stderr)
        return out

    def check(self, log, *args):
        """(exit status, JSON document, text output) of trace-replay check."""
        path = self.log(log)
        p = subprocess.run([self.replay, "check", path, "--json"] + list(args), capture_output=True, text=True)
        t = subprocess.run([self.replay, "check", path] + list(args), capture_output=True, text=True)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        return p.returncode, doc, t.stdout


def fidelity(doc):
    f = doc.get("fidelity", {})
    return f.get("matched"), f.get("diverged")


def pool_of(doc, i=0):
    pools = doc.get("pools") or [{}]
    return pools[i] if i < len(pools) else {}


# ------------------------------------------------------------- placement

def story(t, stack):
    """Freeing a 1536-byte chunk creates bin 2 in an empty arena; a
    collection whose finalizer frees a 512-byte chunk (bin 0) runs during
    the free: inside _append_to_free_list's set() it breaks the sort order
    (seed 000), anywhere after the bookkeeping it does nothing."""
    log = Log((1, "cupy5"))
    log.alloc(1, 1536, 0x100000, segments=[(0x100000, 1536)])
    log.alloc(1, 512, 0x200000, segments=[(0x200000, 512)])
    with log.op(1, FREE, 0x100000):
        with log.gc(stack):
            log.free(1, 0x200000)
        log.ev("pool_free", pool=1, ptr=0x100000, requested=0, granted=1536, stream=0)
    log.alloc(1, 1024, 0x100000, granted=1024)
    log.end()
    return log


def placement(t):
    inside = t.stack("__pyx_f_4cupy_4cuda_6memory__append_to_free_list",
                     "__pyx_f_4cupy_4cuda_6memory_12PooledMemory_free")
    rc, d, _ = t.check(story(t, inside), "--model", "cupy5")
    v = d.get("violation") or {}
    check(rc == 1 and v.get("invariant") == "sorted_index", "placement: a collection in _append_to_free_list "
          "breaks the index (exit %d, %s)" % (rc, v.get("invariant")))
    check(any("_append_to_free_list" in (r.get("point") or "") for r in v.get("reentries", [])),
          "placement: the re-entry is reported at _append_to_free_list: %s" % v.get("reentries"))

    after = t.stack("some_unrelated_function", "__pyx_f_4cupy_4cuda_6memory_12PooledMemory_free")
    rc, d, _ = t.check(story(t, after), "--model", "cupy5")
    check(rc == 0 and d.get("violation") is None, "placement: a collection in PooledMemory.free's hook call, after "
          "the bookkeeping, breaks nothing (exit %d, %s)" % (rc, (d.get("violation") or {}).get("invariant")))
    check(fidelity(d) == (5, 0), "placement: and the model follows the log (2 segments, 3 blocks): %s"
          % (fidelity(d),))

    for what, stack in (("a stack that says nothing", t.stack("some_unrelated_function")), ("no stack", None)):
        rc, d, text = t.check(story(t, stack), "--model", "cupy5")
        check(rc == 0 and d.get("violation") is None, "placement: %s is no violation (exit %d, %s)"
              % (what, rc, (d.get("violation") or {}).get("invariant")))
        check(any("do not say where they started" in n for n in d.get("notes", [])),
              "placement: %s: the unplaced collection is said: %s" % (what, d.get("notes")))
        # Both outcomes explored: after the bookkeeping nothing, in
        # _append_to_free_list's set() the sort order breaks.
        amb = [w for w in d.get("warnings", []) if w.get("invariant") == "ambiguity"]
        msg = amb[0].get("message", "") if amb else ""
        check(d.get("ambiguities") == 1 and len(amb) == 1 and "seq 10," in msg and
              "after the pool's bookkeeping, the pool holds" in msg and "it breaks sorted_index" in msg and
              "_append_to_free_list" in msg,
              "placement: %s: an ambiguity with both outcomes (%s): %s" % (what, d.get("ambiguities"), amb))
        check("ambiguous: 1 collection(s)" in text and "not a violation" in text,
              "placement: %s: the ambiguity is said next to the verdict: %s" % (what, text))


# ----------------------------------------------------------------- torch

def torch_max_split(t, key):
    """max_split_size_mb:20: a 25 MiB block is never split, and a 4 MiB
    request does not take it: a 20 MiB segment of its own."""
    log = Log((1, "torch"))
    log.info(key, "max_split_size_mb:20")
    log.alloc(1, 25 * MiB, 0x10000000, granted=25 * MiB, segments=[(0x10000000, 26 * MiB)])
    log.free(1, 0x10000000)
    log.alloc(1, 4 * MiB, 0x40000000, segments=[(0x40000000, 20 * MiB)])
    log.alloc(1, 25 * MiB, 0x10000000)       # within 20 MiB of the oversize block: it fits
    log.end()
    rc, d, _ = t.check(log, "--model", "torch")
    check(rc == 0 and fidelity(d) == (5, 0), "torch %s max_split_size_mb: all matched: %s" % (key, fidelity(d)))


def torch_roundup(t):
    """roundup_power2_divisions:4 rounds 1.17 MiB up to 1.25 MiB: the next
    block starts there."""
    log = Log((1, "torch"))
    log.info("torch.alloc_conf", "roundup_power2_divisions:4")
    size = 1228800
    log.alloc(1, size, 0x20000000, segments=[(0x20000000, 20 * MiB)])
    log.alloc(1, size, 0x20000000 + 1310720)
    log.end()
    rc, d, _ = t.check(log, "--model", "torch")
    check(rc == 0 and fidelity(d) == (3, 0), "torch roundup_power2_divisions: all matched: %s" % (fidelity(d),))


def torch_expandable(t):
    """expandable_segments:True: one reservation per stream and pool,
    mapped in 20 MiB pages (large pool) at the lowest address that fits,
    merged with the free block before it; empty_cache unmaps the whole free
    pages."""
    A = 0x7f0000000000
    log = Log((1, "torch"))
    log.info("env:PYTORCH_ALLOC_CONF", "expandable_segments:True")
    with log.op(1, ALLOC, 5 * MiB):
        log.segment(1, 1, A, 20 * MiB)
        log.ev("pool_alloc", pool=1, ptr=A, requested=5 * MiB, granted=5 * MiB, stream=0)
    log.alloc(1, 5 * MiB, A + 5 * MiB)
    with log.op(1, ALLOC, 12 * MiB):
        log.segment(1, 1, A + 20 * MiB, 20 * MiB)   # the free 10 MiB grows into the next page
        log.ev("pool_alloc", pool=1, ptr=A + 10 * MiB, requested=12 * MiB, granted=12 * MiB, stream=0)
    for p in (A, A + 5 * MiB, A + 10 * MiB):
        log.free(1, p)
    log.segment(1, 0, A, 40 * MiB)                  # empty_cache
    log.end()
    rc, d, _ = t.check(log, "--model", "torch")
    check(rc == 0 and fidelity(d) == (5, 0), "torch expandable segments: mappings and blocks matched: %s"
          % (fidelity(d),))
    check(pool_of(d).get("reserved") == 0, "torch expandable segments: empty_cache unmapped all: %s" % pool_of(d))


def torch_notes(t):
    log = Log((1, "torch"))
    log.info("torch.alloc_conf", "garbage_collection_threshold:0.6,backend:cudaMallocAsync")
    log.info("torch.private_pools", "2 segment(s)")
    log.alloc(1, 1000, 0x20000000, granted=1024, segments=[(0x20000000, 2 * MiB)])
    log.end()
    rc, d, text = t.check(log, "--model", "torch")
    notes = " ".join(d.get("notes", []))
    for word in ("garbage_collection_threshold", "cudaMallocAsync", "private pools"):
        check(word in notes, "torch: the run's %s is said: %s" % (word, d.get("notes")))
    check("model note: " in text and "garbage_collection_threshold" in text, "torch: notes in the text report")


def torch_snapshot(t):
    """A PyTorch memory snapshot of a run with expandable segments, through
    scripts/torch-snapshot-import: its allocator_settings become the torch
    model's options, each segment_map is nested in the alloc that made it,
    and every mapping and block is predicted."""
    A = 0x7f0000000000
    mb = MiB

    def entry(action, addr, size, time):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": [], "time_us": time}
    trace = [entry("segment_map", A, 20 * mb, 1), entry("alloc", A, 5 * mb, 2), entry("alloc", A + 5 * mb, 5 * mb, 3),
             entry("segment_map", A + 20 * mb, 20 * mb, 4), entry("alloc", A + 10 * mb, 12 * mb, 5)]
    trace += [entry("free_requested", a, s, 6 + i) for i, (a, s) in
              enumerate(((A, 5 * mb), (A + 5 * mb, 5 * mb), (A + 10 * mb, 12 * mb)))]
    trace += [entry("free_completed", a, s, 10 + i) for i, (a, s) in
              enumerate(((A, 5 * mb), (A + 5 * mb, 5 * mb), (A + 10 * mb, 12 * mb)))]
    trace.append(entry("segment_unmap", A, 40 * mb, 20))
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": True,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    snap = {"segments": [], "device_traces": [trace], "allocator_settings": settings}
    pickled, log = os.path.join(t.tmp, "snapshot.pickle"), os.path.join(t.tmp, "snapshot.tlog")
    with open(pickled, "wb") as f:
        pickle.dump(snap, f)
    p = subprocess.run([t.snapshot_import, pickled, "-o", log], env=dict(os.environ, TRACE_REPLAY=t.replay),
                       capture_output=True, text=True)
    if not check(p.returncode == 0, "torch-snapshot-import: %s" % p.stderr[-500:]):
        return
    p = subprocess.run([t.replay, "check", log, "--json"], capture_output=True, text=True)
    d = json.loads(p.stdout or "{}")
    check(p.returncode == 0 and fidelity(d) == (5, 0) and pool_of(d).get("reserved") == 0,
          "torch snapshot with expandable segments: followed from its allocator_settings: exit %d %s %s"
          % (p.returncode, fidelity(d), pool_of(d)))
    snap["segments"] = [{"device": 0, "address": 0x10000000, "total_size": 2 * mb, "stream": 0, "blocks": [],
                         "segment_pool_id": (1, 0)}]
    snap["device_traces"] = [[]]
    with open(pickled, "wb") as f:
        pickle.dump(snap, f)
    subprocess.run([t.snapshot_import, pickled, "-o", log], env=dict(os.environ, TRACE_REPLAY=t.replay),
                   capture_output=True, check=True)
    p = subprocess.run([t.replay, "check", log, "--json"], capture_output=True, text=True)
    d = json.loads(p.stdout or "{}")
    check(any("private pools" in n for n in d.get("notes", [])), "torch snapshot: CUDA-graph private pools said: %s"
          % d.get("notes"))


# ------------------------------------------------------------------- bfc

def bfc_whole_limit(t):
    log = Log((1, "bfc"))
    log.info("bfc.allow_growth", "false")
    log.info("bfc.memory_limit", "64M")
    log.alloc(1, 1000, 0x30000000, granted=1024, segments=[(0x30000000, 64 * MiB)])
    log.end()
    rc, d, _ = t.check(log, "--model", "tf-bfc")
    check(rc == 0 and fidelity(d) == (2, 0), "bfc allow_growth=false: the first region is the limit: %s"
          % (fidelity(d),))


def bfc_learnt(t):
    log = Log((1, "tensorflow"))
    log.alloc(1, 1000, 0x30000000, granted=1024, segments=[(0x30000000, 100 * MiB)])
    log.alloc(1, 1000, 0x30000400, granted=1024)
    log.end()
    rc, d, _ = t.check(log)
    check(rc == 0 and fidelity(d) == (2, 0), "bfc learns allow_growth=false from the first region: %s"
          % (fidelity(d),))
    check(any("allow_growth=false" in n for n in d.get("notes", [])), "bfc says what it learnt: %s"
          % d.get("notes"))


def backpedal(size):
    """RoundedBytes(bytes * kBackpedalFactor), the float product of the real code."""
    f = struct.unpack("f", struct.pack("f", float(size)))[0] * struct.unpack("f", struct.pack("f", 0.9))[0]
    f = struct.unpack("f", struct.pack("f", f))[0]
    return (int(f) + 255) // 256 * 256


def bfc_extend(t):
    """Regions: 2 MiB, then min(4 MiB, 3 MiB left under a 5 MiB limit); then
    (no limit) a refused 4 MiB region asked again at 0.9 of it."""
    log = Log((1, "bfc"))
    log.info("bfc.allow_growth", "true")
    log.info("bfc.memory_limit", "5M")
    log.alloc(1, 1000, 0x30000000, granted=1024, segments=[(0x30000000, 2 * MiB)])
    log.alloc(1, 2560 * 1024, 0x40000000, segments=[(0x40000000, 3 * MiB)])
    log.end()
    rc, d, _ = t.check(log, "--model", "tf-bfc")
    check(rc == 0 and fidelity(d) == (4, 0), "bfc Extend never asks past the limit: %s" % (fidelity(d),))

    log = Log((1, "bfc"))
    log.info("bfc.allow_growth", "true")
    again = backpedal(4 * MiB)
    log.alloc(1, 1000, 0x30000000, granted=1024, segments=[(0x30000000, 2 * MiB)])
    log.alloc(1, 3 * MiB, 0x40000000, segments=[(0, 4 * MiB, 2), (0x40000000, again)])
    log.end()
    rc, d, _ = t.check(log, "--model", "tf-bfc")
    check(rc == 0 and fidelity(d) == (5, 0), "bfc backs off to 0.9 of a refused region (%d bytes): %s"
          % (again, fidelity(d)))


def bfc_gc(t):
    """Garbage collection: with a region free and nothing fitting under the
    8 MiB limit, free regions go back and a larger one comes."""
    log = Log((1, "bfc"))
    log.info("bfc.allow_growth", "true")
    log.info("bfc.memory_limit", "8M")
    log.alloc(1, 1000, 0x30000000, granted=1024, segments=[(0x30000000, 2 * MiB)])
    log.alloc(1, 3 * MiB, 0x40000000, segments=[(0x40000000, 4 * MiB)])
    log.free(1, 0x30000000)
    with log.op(1, ALLOC, 3584 * 1024):
        log.cuda_free(0x30000000)
        log.cuda_alloc(0x50000000, 4 * MiB)
        log.ev("pool_alloc", pool=1, ptr=0x50000000, requested=3584 * 1024, granted=3584 * 1024, stream=0)
    log.end()
    rc, d, _ = t.check(log, "--model", "tf-bfc")
    check(rc == 0 and fidelity(d) == (7, 0), "bfc garbage collection: the free region's release matched: %s"
          % (fidelity(d),))
    check(pool_of(d).get("reserved") == 8 * MiB, "bfc garbage collection: 8 MiB reserved: %s" % pool_of(d))


# ---------------------------------------------------------------- ladders

def ladder_log(t, name, stack):
    """CuPy's _try_malloc: refused; free_all_blocks gives back the free 4 KiB
    segment; refused; gc.collect() frees the 8 KiB block; free_all_blocks
    gives that back too; the third attempt succeeds."""
    log = Log((1, name))
    log.alloc(1, 4096, 0x100000, segments=[(0x100000, 4096)])
    log.alloc(1, 8192, 0x200000, segments=[(0x200000, 8192)])
    log.free(1, 0x100000)
    with log.op(1, ALLOC, 16384):
        log.cuda_alloc(0, 16384, 2)
        log.cuda_free(0x100000)
        log.cuda_alloc(0, 16384, 2)
        with log.gc(stack):
            log.free(1, 0x200000)
        log.cuda_free(0x200000)
        log.cuda_alloc(0x300000, 16384)
        log.ev("pool_alloc", pool=1, ptr=0x300000, requested=16384, granted=16384, stream=0)
    log.end()
    return log


def ladders(t):
    collect = t.stack("__pyx_f_4cupy_4cuda_6memory__try_malloc")
    for model in ("cupy", "cupy-next"):
        for stack in (collect, None):
            rc, d, _ = t.check(ladder_log(t, model, stack), "--model", model)
            check(rc == 0 and fidelity(d) == (10, 0), "%s ladder (stack %s): refusals, releases and the "
                  "collection's frees in the log's order (3 segments, 2 refusals, 2 releases, 3 blocks): %s"
                  % (model, bool(stack), fidelity(d)))
            check(pool_of(d).get("reserved") == 16384, "%s ladder: the model keeps only what the pool kept: %s"
                  % (model, pool_of(d)))


def cupy_limit_late(t):
    """CUPY_GPU_MEMORY_LIMIT as the recorder writes it: INFO env:NAME at the
    process's first device allocation, which is inside CuPy's first pool
    operation, after the pool appeared.  A 64 KiB request over the 32 KiB
    limit is refused before any device attempt (the operation raised: no
    pool_alloc); the model must follow the limit too.  Configured only when
    the pool appeared, the model never saw it, asked for a segment the log
    does not show and kept 64 KiB the pool never had (real CuPy 14.2 on the
    CUDA doubles: 18 GB "allocated" in the model, 2 answers diverged)."""
    for model in ("cupy", "cupy-next"):
        log = Log((1, "cupy"))
        log.info("cupy_version", "14.2.0")
        with log.op(1, ALLOC, 4096):
            log.info("env:CUPY_GPU_MEMORY_LIMIT", "32768")
            log.cuda_alloc(0x100000, 4096)
            log.ev("pool_alloc", pool=1, ptr=0x100000, requested=4096, granted=4096, stream=0)
        with log.op(1, ALLOC, 65536):
            pass
        log.alloc(1, 8192, 0x200000, segments=[(0x200000, 8192)])
        log.end()
        rc, d, _ = t.check(log, "--model", model)
        check(rc == 0 and fidelity(d) == (4, 0), "%s: the limit written inside the first operation is "
              "followed (no segment for the refused request): %s" % (model, fidelity(d)))
        check(pool_of(d).get("reserved") == 12288 and pool_of(d).get("allocated") == 12288,
              "%s: the model keeps only what the pool had under the limit: %s" % (model, pool_of(d)))


def cupy_pool_gone(t):
    """A MemoryPool dropped while an array of it lives (real CuPy 14.2:
    `with cupy.cuda.using_allocator(cupy.cuda.MemoryPool().malloc)` in a
    function that returns the array): when the array goes, PooledMemory.free
    finds the pool's weakref dead and frees the chunk without the pool and
    without the hook; its segment's Memory is then freed.  The log shows the
    block live and its segment freed: no segment_in_use (it was a false
    VIOLATION), a warning unseen_free, the block gone in the model too.  A
    pool of another kind keeps the violation."""
    for model in ("cupy", "cupy-next", "none"):
        log = Log((1, "cupy"))
        log.alloc(1, 1000, 0x100000, granted=1024, segments=[(0x100000, 1024)])
        log.cuda_free(0x100000)
        log.alloc(1, 1000, 0x200000, granted=1024, segments=[(0x200000, 1024)])
        log.free(1, 0x200000)
        log.end()
        rc, d, out = t.check(log, "--model", model)
        check(rc == 0 and "VIOLATION" not in out, "%s: a dropped pool's block freed unseen with its segment "
              "(exit %d): %s" % (model, rc, out[-400:]))
        check("unseen_free" in out, "%s: no warning unseen_free: %s" % (model, out[-400:]))
        if model != "none":
            check(fidelity(d) == (4, 0) and pool_of(d).get("allocated") == 0,
                  "%s: the model followed (the block went with its segment): %s %s"
                  % (model, fidelity(d), pool_of(d)))
    log = Log((1, "mypool"))
    log.alloc(1, 1000, 0x100000, granted=1024, segments=[(0x100000, 1024)])
    log.cuda_free(0x100000)
    log.end()
    rc, d, out = t.check(log)
    check(rc == 1 and "segment_in_use" in out, "another pool's segment freed under a live block is still a "
          "violation (exit %d): %s" % (rc, out[-300:]))


def next_staging(t):
    """cupy-next: a free during a collection that started with the lock held
    (a new arena for stream 7) is staged, and free_all_blocks commits it
    before giving segments back (the program's free_all_blocks, outside any
    operation)."""
    arena = t.stack("__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__arena")
    log = Log((1, "cupy"))
    log.alloc(1, 4096, 0x100000, segments=[(0x100000, 4096)])
    with log.op(1, ALLOC, 8192):
        with log.gc(arena):
            log.free(1, 0x100000)
        log.cuda_alloc(0x200000, 8192)
        log.ev("pool_alloc", pool=1, ptr=0x200000, requested=8192, granted=8192, stream=7)
    log.cuda_free(0x100000)
    log.end()
    rc, d, _ = t.check(log, "--model", "cupy-next")
    check(rc == 0 and fidelity(d) == (4, 0), "cupy-next: the staged free is committed before free_all: %s"
          % (fidelity(d),))
    check(pool_of(d).get("reserved") == 8192, "cupy-next: the released segment is gone: %s" % pool_of(d))


def failed_release(t):
    """A segment release inside an operation that did not happen: its call
    failed (format 1.1: a release_failed names it; 1.0: the free's own
    result).  torch's model keeps the segment, and the block the real pool
    then handed out of it is the model's choice too."""
    for how in ("release_failed", "result"):
        log = Log((1, "torch"))
        log.alloc(1, 4 * MiB, 0x10000000, segments=[(0x10000000, 20 * MiB)])
        log.free(1, 0x10000000)
        with log.op(1, ALLOC, 4 * MiB):
            if how == "result":
                log.ev("cuda_free", api="cudaFree", device=0, result=1, flags=0, ptr=0x10000000, size=0, stream=0)
            else:
                log.cuda_free(0x10000000)
                log.ev("release_failed", release=log.seq, result=1)
            log.ev("pool_alloc", pool=1, ptr=0x10000000, requested=4 * MiB, granted=4 * MiB, stream=0)
        log.end()
        rc, d, _ = t.check(log, "--model", "torch")
        check(rc == 0 and fidelity(d) == (3, 0), "torch: a release whose call failed (%s) is not applied to the "
              "model: exit %d %s" % (how, rc, fidelity(d)))


# ----------------------------------------------------------------- points

def arena_point(t):
    """cupy5: free_all_blocks (the program's, outside any operation) gave
    back stream 5's last free segment and deleted its arena; freeing A then
    makes the arena again, and a collection there frees B, whose free makes
    one too: the outer `self._free[stream] = []` overwrites it."""
    arena = t.stack("__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__arena",
                    "__pyx_f_4cupy_4cuda_6memory_12PooledMemory_free")
    log = Log((1, "cupy5"))
    log.alloc(1, 1024, 0x100000, stream=5, segments=[(0x100000, 1024)])
    log.alloc(1, 4096, 0x200000, stream=5, segments=[(0x200000, 4096)])
    log.alloc(1, 2048, 0x300000, stream=5, segments=[(0x300000, 2048)])
    log.free(1, 0x300000)
    log.cuda_free(0x300000)
    with log.op(1, FREE, 0x100000):
        with log.gc(arena):
            log.free(1, 0x200000)
        log.ev("pool_free", pool=1, ptr=0x100000, requested=0, granted=1024, stream=0)
    log.end()
    rc, d, _ = t.check(log, "--model", "cupy5")
    v = d.get("violation") or {}
    check(rc == 1 and v.get("invariant") == "reachable", "cupy5 _arena point: the arena the nested free made is "
          "lost (exit %d, %s)" % (rc, v.get("invariant")))
    check(any((r.get("point") or "").startswith("_arena") for r in v.get("reentries", [])),
          "cupy5 _arena point: re-entered there: %s" % v.get("reentries"))


def compact_point(t):
    """cupy5: a collection inside free_all_blocks' compaction (the ladder's):
    the block it frees is appended before the compaction's loop, so the same
    free_all_blocks gives its whole segment back."""
    compact = t.stack("__pyx_f_4cupy_4cuda_6memory__compact_index",
                      "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_free_all_blocks")
    log = Log((1, "cupy5"))
    log.alloc(1, 4096, 0x100000, segments=[(0x100000, 4096)])
    log.alloc(1, 8192, 0x200000, segments=[(0x200000, 8192)])
    log.free(1, 0x100000)
    with log.op(1, ALLOC, 16384):
        log.cuda_alloc(0, 16384, 2)
        with log.gc(compact):
            log.free(1, 0x200000)
        log.cuda_free(0x100000)
        log.cuda_free(0x200000)
        log.cuda_alloc(0x300000, 16384)
        log.ev("pool_alloc", pool=1, ptr=0x300000, requested=16384, granted=16384, stream=0)
    log.end()
    rc, d, _ = t.check(log, "--model", "cupy5")
    check(rc == 0 and fidelity(d) == (9, 0), "cupy5 _compact_index point: the collection's block goes back with "
          "the others (3 segments, 1 refusal, 2 releases, 3 blocks): exit %d %s" % (rc, fidelity(d)))
    check(pool_of(d).get("reserved") == 16384, "cupy5 _compact_index point: reserved as the pool: %s" % pool_of(d))


# ---------------------------------------------------------------- verdict

def verdict(t):
    log = Log((1, "cupy"))
    log.alloc(1, 4096, 0x100000, segments=[(0x100000, 4096)])
    log.alloc(1, 4096, 0x900000, segments=[(0x900000, 8192)])    # a segment the model cannot have asked for
    log.end()
    rc, d, text = t.check(log, "--model", "cupy")
    f = d.get("fidelity", {})
    check(f.get("following") is False and f.get("diverged_before_violation", 0) > 0,
          "verdict: JSON says the model left the log: %s" % f)
    check("the model left the log" in text.split("\n", 1)[0] or "the model left the log" in text,
          "verdict: the text says it next to the verdict: %r" % text[:300])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay", required=True)
    ap.add_argument("--places", required=True)
    ap.add_argument("--snapshot-import", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Tools(args, tmp)
        placement(t)
        torch_max_split(t, "env:PYTORCH_CUDA_ALLOC_CONF")
        torch_max_split(t, "torch.alloc_conf")
        torch_roundup(t)
        torch_expandable(t)
        torch_notes(t)
        torch_snapshot(t)
        bfc_whole_limit(t)
        bfc_learnt(t)
        bfc_extend(t)
        bfc_gc(t)
        ladders(t)
        cupy_limit_late(t)
        cupy_pool_gone(t)
        next_staging(t)
        failed_release(t)
        arena_point(t)
        compact_point(t)
        verdict(t)
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
