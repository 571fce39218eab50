# libtrace's public API (preload/trace_api.h) reached with ctypes, for the
# workloads that record "mark" events.  mark() goes through PyDLL, which
# keeps the GIL; mark_released() through CDLL, which releases it around the
# call.  Either way a mark carries the Python stack of the thread that made
# it.
import ctypes


class Api(ctypes.Structure):
    _fields_ = [("pool_register", ctypes.c_void_p), ("pool_op_begin", ctypes.c_void_p),
                ("pool_op_end", ctypes.c_void_p), ("pool_alloc", ctypes.c_void_p),
                ("pool_free", ctypes.c_void_p), ("pool_segment", ctypes.c_void_p),
                ("mark", ctypes.c_void_p)]


def mark_function(loader):
    get = loader(None).trace_api_v1
    get.restype = ctypes.POINTER(Api)
    proto = ctypes.CFUNCTYPE if loader is ctypes.CDLL else ctypes.PYFUNCTYPE
    return proto(None, ctypes.c_char_p)(get().contents.mark)


mark = mark_function(ctypes.PyDLL)
mark_released = mark_function(ctypes.CDLL)
