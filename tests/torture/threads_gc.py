"""32 Python threads at once: each collects garbage (some of it inside a pool
operation, so the collection nests in it), calls the CUDA runtime through
ctypes (the GIL is released during the call) and annotates a pool through
the preload's exported functions.

    python threads_gc.py DOUBLES_DIR ROUNDS
prints "threads T rounds R collections C" (C: gc.collect() calls)."""
import ctypes
import gc
import sys
import threading

THREADS = 32
doubles, rounds = sys.argv[1], int(sys.argv[2])
cudart = ctypes.CDLL(doubles + "/libcudart.so.13")
api = ctypes.CDLL(None)
api.trace_pool_op_begin.restype = ctypes.c_uint64
api.trace_pool_op_begin.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
api.trace_pool_op_end.argtypes = [ctypes.c_int, ctypes.c_uint64]
api.trace_pool_alloc.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_uint64]
api.trace_pool_free.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
OP_ALLOC, OP_FREE = 1, 2
pool = api.trace_pool_register(b"pythreads")
start = threading.Barrier(THREADS)
collections = [0] * THREADS


def cycle():
    a, b = [], []
    a.append(b)
    b.append(a)


def one_round(thread, i):
    size = 512 * (1 + (thread + i) % 32)
    ptr = ctypes.c_void_p()
    op = api.trace_pool_op_begin(pool, OP_ALLOC, size)
    if cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size)) != 0:
        raise RuntimeError("cudaMalloc failed")
    api.trace_pool_alloc(pool, ptr, size, size, 0)
    if i % 8 == 0:
        cycle()
        gc.collect(0)
        collections[thread] += 1
    api.trace_pool_op_end(pool, op)
    op = api.trace_pool_op_begin(pool, OP_FREE, ptr.value)
    api.trace_pool_free(pool, ptr, size)
    cudart.cudaFree(ptr)
    api.trace_pool_op_end(pool, op)


def worker(thread):
    start.wait()
    for i in range(rounds):
        one_round(thread, i)


threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"threads {THREADS} rounds {rounds} collections {sum(collections)}")
