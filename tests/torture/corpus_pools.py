"""A small traced run for the fuzz corpus: one pool per model name (so the
automatic model choice picks each), each growing a segment with cudaMalloc,
serving and taking back blocks inside operations, with a collection nested
in a free.

    LD_PRELOAD=libtrace.so python corpus_pools.py DOUBLES_DIR"""
import ctypes
import gc
import sys

cudart = ctypes.CDLL(sys.argv[1] + "/libcudart.so.13")
api = ctypes.CDLL(None)
api.trace_pool_op_begin.restype = ctypes.c_uint64
api.trace_pool_op_begin.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
api.trace_pool_op_end.argtypes = [ctypes.c_int, ctypes.c_uint64]
api.trace_pool_alloc.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_uint64]
api.trace_pool_free.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t]
api.trace_pool_segment.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t]
OP_ALLOC, OP_FREE, GROW = 1, 2, 1
SEGMENT = 2 << 20


def exercise(name, unit):
    pool = api.trace_pool_register(name.encode())
    base = ctypes.c_void_p()
    op = api.trace_pool_op_begin(pool, OP_ALLOC, 1000)
    cudart.cudaMalloc(ctypes.byref(base), ctypes.c_size_t(SEGMENT))
    api.trace_pool_segment(pool, GROW, base.value, SEGMENT)
    offset, live = 0, []
    for size in (1000, 3 * unit, 700, 5 * unit + 1):
        if live:
            op = api.trace_pool_op_begin(pool, OP_ALLOC, size)
        granted = (size + unit - 1) // unit * unit
        api.trace_pool_alloc(pool, base.value + offset, size, granted, 0)
        api.trace_pool_op_end(pool, op)
        live.append((base.value + offset, granted))
        offset += granted
    for i, (ptr, granted) in enumerate(live):
        op = api.trace_pool_op_begin(pool, OP_FREE, ptr)
        if i == 1:
            gc.collect()
        api.trace_pool_free(pool, ptr, granted)
        api.trace_pool_op_end(pool, op)


exercise("cupy", 512)
exercise("torch", 512)
exercise("tf-bfc", 256)
