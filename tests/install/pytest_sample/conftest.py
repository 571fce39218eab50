"""Device memory for the plugin's tests, on a machine without a GPU: the
CUDA runtime test double (tests/cuda), reached through ctypes."""
import ctypes
import os

import pytest

_cudart = None


def cudart():
    global _cudart
    if _cudart is None:
        # The runtime double dlopens "libcuda.so.1": load the driver double
        # first, and that name finds it.  PyDLL keeps the GIL during the
        # call, as a C extension calling cudaMalloc without releasing it
        # would: the allocation then has a Python stack (with the GIL
        # released, the recorder gives CUDA calls native stacks only).
        ctypes.CDLL(os.path.join(os.environ["CUDA_DOUBLES"], "libcuda.so.1"))
        _cudart = ctypes.PyDLL(os.path.join(os.environ["CUDA_DOUBLES"], "libcudart.so.13"))
    return _cudart


class DeviceBuffer:
    """Device memory owned by a Python object, freed when the object dies."""

    def __init__(self, size):
        self.ptr = ctypes.c_void_p()
        rc = cudart().cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(size))
        assert rc == 0, rc

    def __del__(self):
        cudart().cudaFree(self.ptr)


@pytest.fixture(scope="module")
def module_buffer():
    """Wider than a function: not the first test's memory."""
    buf = DeviceBuffer(3 << 20)
    yield buf
    del buf


class Pool:
    """A tiny pool annotated through the tracer's exports (no-ops without
    the preload): one 4 MiB segment, obtained inside the first allocation
    (the pool's memory, cached: no test's), blocks handed out from it."""

    def __init__(self):
        self.api = ctypes.PyDLL(None)
        self.traced = hasattr(self.api, "trace_pool_register")
        self.segment = None
        self.id = self.api.trace_pool_register(b"sample-pool") if self.traced else 0
        self.next = 0

    def malloc(self, size):
        op = self._begin(1, size)
        if self.segment is None:
            self.segment = DeviceBuffer(4 << 20)
        ptr = self.segment.ptr.value + self.next
        self.next += size
        if self.traced:
            self.api.trace_pool_alloc(self.id, ctypes.c_void_p(ptr), ctypes.c_size_t(size),
                                      ctypes.c_size_t(size), ctypes.c_uint64(0))
        self._end(op)
        return ptr

    def free(self, ptr, size):
        op = self._begin(2, ptr)
        if self.traced:
            self.api.trace_pool_free(self.id, ctypes.c_void_p(ptr), ctypes.c_size_t(size))
        self._end(op)

    def _begin(self, kind, arg):
        if not self.traced:
            return 0
        self.api.trace_pool_op_begin.restype = ctypes.c_uint64
        return self.api.trace_pool_op_begin(self.id, kind, ctypes.c_uint64(arg))

    def _end(self, op):
        if self.traced:
            self.api.trace_pool_op_end(self.id, ctypes.c_uint64(op))


@pytest.fixture(scope="session")
def pool():
    """A session-wide pool whose segment stays cached: the pool's memory,
    not any test's."""
    return Pool()
