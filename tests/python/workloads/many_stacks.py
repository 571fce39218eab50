# More distinct Python stacks than the recorder keeps: walk(i) recurses
# DEPTH frames deep, each level calling itself from one of two lines picked
# by a bit of i, and marks at the bottom, so that 2**DEPTH marks have
# 2**DEPTH different stacks (about 2**(DEPTH+1) frames to tell apart, more
# than python_stack.c's tree holds before it starts again).  Twice over:
# the second pass meets every stack again after the tree was emptied.
import ctypes


class Api(ctypes.Structure):
    _fields_ = [("pool_register", ctypes.c_void_p), ("pool_op_begin", ctypes.c_void_p),
                ("pool_op_end", ctypes.c_void_p), ("pool_alloc", ctypes.c_void_p),
                ("pool_free", ctypes.c_void_p), ("pool_segment", ctypes.c_void_p),
                ("mark", ctypes.c_void_p)]


get = ctypes.PyDLL(None).trace_api_v1
get.restype = ctypes.POINTER(Api)
mark = ctypes.PYFUNCTYPE(None, ctypes.c_char_p)(get().contents.mark)

DEPTH = 14


def walk(bits, k, tag):
    if k == 0:
        mark(tag)  # LINE:bottom
        return
    if bits & 1:
        walk(bits >> 1, k - 1, tag)  # LINE:one
    else:
        walk(bits >> 1, k - 1, tag)  # LINE:zero


for rnd in range(2):
    for i in range(2 ** DEPTH):
        walk(i, DEPTH, b"%d %d" % (rnd, i))  # LINE:top
