"""A pool shaped like cupy/cuda/memory.pyx's SingleDeviceMemoryPool: 512-byte
rounding, a free list per size kept in Python sets, hooks called around
malloc and free with CuPy's keyword arguments, and CuPy's out-of-memory
ladder (gc.collect() and retry), where finalizers free pooled memory back into
the pool while the malloc is still open."""
import gc
import threading

from cupy.cuda import memory_hook


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
                    hook.free_preprocess(device_id=0, mem_size=self.size, mem_ptr=ptr, pmem_id=pmem_id)
                try:
                    self.pool._free(ptr, self.size)
                finally:
                    for hook in hooks.values():
                        hook.free_postprocess(device_id=0, mem_size=self.size, mem_ptr=ptr, pmem_id=pmem_id)
                return
        self.pool._free(ptr, self.size)

    def __del__(self):
        self.free()


class MemoryPointer(object):
    def __init__(self, mem):
        self.mem = mem
        self.ptr = mem.ptr


class SingleDeviceMemoryPool(object):
    def __init__(self, limit=64 << 20):
        self._lock = threading.RLock()
        self._free_lists = {}
        self._next = 0x7f0000000000
        self._in_use = 0
        self._limit = limit

    def malloc(self, size):
        rounded = _round_size(size)
        if memory_hook._has_memory_hooks():
            hooks = memory_hook.get_memory_hooks()
            if hooks:
                memptr = None
                for hook in hooks.values():
                    hook.malloc_preprocess(device_id=0, size=size, mem_size=rounded)
                try:
                    memptr = self._malloc(rounded)
                finally:
                    mem_ptr = memptr.ptr if memptr is not None else 0
                    pmem_id = id(memptr.mem) if memptr is not None else 0
                    for hook in hooks.values():
                        hook.malloc_postprocess(device_id=0, size=size, mem_size=rounded,
                                                mem_ptr=mem_ptr, pmem_id=pmem_id)
                return memptr
        return self._malloc(rounded)

    def _malloc(self, size):
        with self._lock:
            ptr = self._take(size)
            if ptr is None and self._in_use + size > self._limit:
                gc.collect()                      # CuPy's out-of-memory ladder
                ptr = self._take(size)
            if ptr is None:
                if self._in_use + size > self._limit:
                    raise OutOfMemoryError(size)
                ptr, self._next = self._next, self._next + size
            self._in_use += size
            return MemoryPointer(PooledMemory(self, ptr, size))

    def _take(self, size):
        free = self._free_lists.get(size)
        return free.pop() if free else None

    def _free(self, ptr, size):
        with self._lock:
            self._free_lists.setdefault(size, set()).add(ptr)
            self._in_use -= size


_pool = None


def get_default_memory_pool():
    global _pool
    if _pool is None:
        _pool = SingleDeviceMemoryPool()
    return _pool
