"""A pool shaped like cupy/cuda/memory.pyx's SingleDeviceMemoryPool: 512-byte
rounding, a free list per stream and size kept in Python sets (requests of
one size only reuse chunks of that size, as CuPy's best fit does when
nothing larger is free), the current stream taken as CuPy takes it, hooks
called around malloc and free with CuPy's keyword arguments, and CuPy's
out-of-memory ladder (gc.collect() and retry), where finalizers free pooled
memory back into the pool while the malloc is still open.  New segments
come from cudaMalloc of FAKE_CUPY_CUDART when it is set."""
import ctypes
import gc
import os
import threading

from cupy.cuda import memory_hook
from cupy.cuda import stream as stream_module


def _device():
    """cudaMalloc of the runtime FAKE_CUPY_CUDART names, or None."""
    path = os.environ.get("FAKE_CUPY_CUDART")
    if not path:
        return None
    cudart = ctypes.CDLL(path)
    cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]

    def malloc(size):
        p = ctypes.c_void_p()
        if cudart.cudaMalloc(ctypes.byref(p), size) != 0:
            raise OutOfMemoryError(size)
        return p.value
    return malloc


class OutOfMemoryError(MemoryError):
    pass


def _round_size(size):
    return (size + 511) // 512 * 512


class PooledMemory(object):
    def __init__(self, pool, ptr, size):
        self.pool, self.ptr, self.size = pool, ptr, size

    def free(self):
        ptr, self.ptr = self.ptr, 0
        if not ptr:
            return
        if memory_hook._has_memory_hooks():
            hooks = memory_hook.get_memory_hooks()
            if hooks:
                pmem_id = id(self)
                for hook in hooks.values():
                    hook.free_preprocess(device_id=self.pool._device_id, mem_size=self.size, mem_ptr=ptr, pmem_id=pmem_id)
                try:
                    self.pool._free(ptr, self.size)
                finally:
                    for hook in hooks.values():
                        hook.free_postprocess(device_id=self.pool._device_id, mem_size=self.size, mem_ptr=ptr, pmem_id=pmem_id)
                return
        self.pool._free(ptr, self.size)

    def __del__(self):
        self.free()


class MemoryPointer(object):
    def __init__(self, mem):
        self.mem = mem
        self.ptr = mem.ptr


class SingleDeviceMemoryPool(object):
    def __init__(self, limit=64 << 20, device_id=0):
        self._lock = threading.RLock()
        self._free_lists = {}
        self._stream_of = {}
        self._device_id = device_id     # CuPy keeps a pool per device; each has its own addresses
        self._next = 0x7f0000000000 - device_id * (1 << 40)
        self._in_use = 0
        self._limit = limit
        self._device_malloc = _device()

    def malloc(self, size):
        rounded = _round_size(size)
        if memory_hook._has_memory_hooks():
            hooks = memory_hook.get_memory_hooks()
            if hooks:
                memptr = None
                for hook in hooks.values():
                    hook.malloc_preprocess(device_id=self._device_id, size=size, mem_size=rounded)
                try:
                    memptr = self._malloc(rounded)
                finally:
                    mem_ptr = memptr.ptr if memptr is not None else 0
                    pmem_id = id(memptr.mem) if memptr is not None else 0
                    for hook in hooks.values():
                        hook.malloc_postprocess(device_id=self._device_id, size=size, mem_size=rounded,
                                                mem_ptr=mem_ptr, pmem_id=pmem_id)
                return memptr
        return self._malloc(rounded)

    def _malloc(self, size):
        stream = stream_module.get_current_stream_ptr()
        if stream == 2:
            # _get_stream_identifier: the per-thread default stream has an
            # arena per thread.
            stream = ("per-thread", threading.get_ident())
        with self._lock:
            ptr = self._take(stream, size)
            if ptr is None and self._in_use + size > self._limit:
                gc.collect()                      # CuPy's out-of-memory ladder
                ptr = self._take(stream, size)
            if ptr is None:
                if self._in_use + size > self._limit:
                    raise OutOfMemoryError(size)
                if self._device_malloc:
                    ptr = self._device_malloc(size)
                else:
                    ptr, self._next = self._next, self._next + size
            self._stream_of[ptr] = stream
            self._in_use += size
            return MemoryPointer(PooledMemory(self, ptr, size))

    def _take(self, stream, size):
        free = self._free_lists.get((stream, size))
        return free.pop() if free else None

    def _free(self, ptr, size):
        with self._lock:
            self._free_lists.setdefault((self._stream_of.pop(ptr, 0), size), set()).add(ptr)
            self._in_use -= size


_pool = None


def get_default_memory_pool():
    global _pool
    if _pool is None:
        _pool = SingleDeviceMemoryPool()
    return _pool
