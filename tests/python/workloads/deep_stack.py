# Marks made from recursions of known depth: a mark made TOTAL frames deep
# (rec's frames and <module>) around the recorder's room for a Python stack
# (128 frames), and far past it.  With TRACE_PY_ALLOCS=1 each level also
# allocates a GC object, so allocations go through the same deep stacks.
import ctypes
import sys

from trace_mark import mark

sys.setrecursionlimit(5000)


class Node:
    pass


def rec(k, tag):
    keep = [Node()]
    if k == 1:
        mark(tag)  # LINE:bottom
        return keep
    return rec(k - 1, tag) + keep  # LINE:call


for total in (2, 127, 128, 129, 130, 300, 900, 2000):
    for _ in range(2):
        rec(total - 1, b"%d" % total)  # LINE:top

if len(sys.argv) > 1:
    # A double free 300 frames deep through the CUDA test double (argv[1]:
    # the directory holding libcudart.so.13): the replay's report prints
    # both stacks, the cut included.
    cudart = ctypes.CDLL(sys.argv[1] + "/libcudart.so.13")
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))

    def free_deep(k):
        if k == 1:
            cudart.cudaFree(p)  # LINE:free
            return
        free_deep(k - 1)

    free_deep(299)
    free_deep(299)
