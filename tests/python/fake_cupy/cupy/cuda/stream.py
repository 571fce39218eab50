"""What the tracer uses of cupy/cuda/stream.pyx: get_current_stream_ptr, a C
function Cython exports in the module's __pyx_capi__, and Stream objects
that make a stream current on the calling thread (with stream: ...).

The C side is a test library (FAKE_CUPY_STREAM_LIB, tests/models/
stream_double.c) keeping the current stream per thread, as CuPy does.
Without it there is no __pyx_capi__ entry, like a CuPy that exports none:
the tracer then records stream 0."""
import ctypes
import os
import threading

__pyx_capi__ = {}
_lib = None
_local = threading.local()
_next_ptr = [0x5ee000]

if os.environ.get("FAKE_CUPY_STREAM_LIB"):
    _lib = ctypes.CDLL(os.environ["FAKE_CUPY_STREAM_LIB"])
    _lib.fake_stream_get.restype = ctypes.c_uint64
    _lib.fake_stream_set.argtypes = [ctypes.c_uint64]
    _lib.fake_stream_per_thread_default.argtypes = [ctypes.c_int]
    _lib.fake_stream_per_thread_default(
        int(os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0") or 0) != 0)
    _new = ctypes.pythonapi.PyCapsule_New
    _new.restype = ctypes.py_object
    _new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    __pyx_capi__["get_current_stream_ptr"] = _new(ctypes.cast(_lib.fake_stream_get, ctypes.c_void_p),
                                                  b"size_t (void)", None)


def get_current_stream_ptr():
    if _lib:
        return _lib.fake_stream_get()
    return getattr(_local, "ptr", 0)


def _set_current(ptr):
    if _lib:
        _lib.fake_stream_set(ptr)
    _local.ptr = ptr


class Stream(object):
    def __init__(self):
        _next_ptr[0] += 0x100
        self.ptr = _next_ptr[0]

    def __enter__(self):
        self._prev = getattr(_local, "ptr", 0)
        _set_current(self.ptr)
        return self

    def __exit__(self, *_):
        _set_current(self._prev)
