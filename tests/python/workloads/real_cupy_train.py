"""A training-loop-shaped workload on real CuPy's pool, run by test_real_cupy.py
on the CUDA doubles (real_cupy/cupy_doubles.py): arrays of many sizes made and
dropped, views kept, reference cycles collected, a second stream, threads,
free_all_blocks, the out-of-memory ladder; no kernels.  mark(k) makes a host
buffer of a size unique to k (a host_alloc in the log there) and prints the
pool's own used/total bytes, for the test to compare with the log and the
models."""
import os, sys
if os.environ.get('CUPY_ON_DOUBLES', '1') == '1':
    import cupy_doubles  # noqa: F401  (stand-ins for the static runtime)
import gc
import random
import threading
if os.environ.get('GC_THRESHOLD'):
    gc.set_threshold(int(os.environ['GC_THRESHOLD']))
early = None
if os.environ.get('EARLY_THREAD') == '1':
    # a thread started before CuPy is imported: the hook reaches it late
    go = threading.Event()
    def early_worker():
        go.wait()
        import cupy as cp
        live = []
        for i in range(300):
            live.append(cp.empty((1000 + 512 * (i % 7),), dtype=cp.uint8))
            if len(live) > 4:
                live.pop(0)
    early = threading.Thread(target=early_worker)
    early.start()
import cupy
import numpy as np

pool = cupy.get_default_memory_pool()
MARK_BASE = 3 << 20
rng = random.Random(int(os.environ.get('SEED', '7')))
ITERS = int(os.environ.get('ITERS', '120'))


def mark(k):
    """A host buffer of a size unique to k: a host_alloc in the log at this point."""
    b = bytearray(MARK_BASE + k * 4096)
    del b
    print(f"MARK {k} used={pool.used_bytes()} total={pool.total_bytes()} "
          f"free_blocks={pool.n_free_blocks()}", flush=True)


class Holder:
    pass


def sizes():
    return rng.choice([1, 7, 100, 1000, 4096, 20000, 65536, 250000, 1 << 20, 3 << 20])


def make_cycle():
    h = Holder()
    h.me = h
    h.arr = cupy.empty((sizes(),), dtype=cupy.uint8)
    h.other = Holder()
    h.other.back = h
    h.other.arr = cupy.zeros((sizes() // 4 + 1,), dtype=cupy.float32)


def step(i, keep):
    batch = [cupy.empty((sizes(),), dtype=cupy.float32) for _ in range(rng.randint(1, 6))]
    x = cupy.asarray(np.arange(rng.randint(1, 5000), dtype=np.float64))
    y = cupy.empty_like(x)
    y.data.copy_from_device_async(x.data, x.nbytes)   # memcpy, no kernel
    if rng.random() < 0.3:
        keep.append(batch[0][1:])          # a view keeps its base's memory alive
    if rng.random() < 0.2:
        keep.append(y.reshape((-1, 1)))
    if len(keep) > 12:
        del keep[:rng.randint(1, 6)]
    if i % 7 == 0:
        for _ in range(3):
            make_cycle()
    if i % 25 == 24:
        gc.collect()
    m = cupy.cuda.alloc(rng.randint(1, 300000))   # a MemoryPointer from the pool
    del m
    _ = y.get()


def worker(n, seed):
    r = random.Random(seed)
    live = []
    for i in range(n):
        live.append(cupy.empty((r.choice([10, 512, 5000, 70000, 1 << 19]),), dtype=cupy.uint8))
        if len(live) > 5:
            live.pop(r.randrange(len(live)))
    del live


keep = []
mark(0)
for i in range(ITERS // 2):
    step(i, keep)
mark(1)

s = cupy.cuda.Stream(non_blocking=True)
with s:
    on_s = [cupy.empty((sizes(),), dtype=cupy.uint8) for _ in range(10)]
    view_s = on_s[3][5:]
    del on_s[::2]
mark(2)
del on_s
mark(3)

if early is not None:
    go.set()
    early.join()
threads = [threading.Thread(target=worker, args=(200, k)) for k in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
mark(4)

pool.free_all_blocks()
mark(5)

try:
    cupy.empty((17 << 30,), dtype=cupy.uint8)   # the double refuses > 16 GiB
except cupy.cuda.memory.OutOfMemoryError as e:
    print("OOM", str(e)[:60], flush=True)
mark(6)

for i in range(ITERS // 2, ITERS):
    step(i, keep)
mark(7)

del keep, view_s
gc.collect()
mark(8)
pool.free_all_blocks()
mark(9)
big = cupy.empty((5 << 20,), dtype=cupy.uint8)   # left live at exit: a leak to report
mark(10)
