# Device memory held by reference cycles, allocated straight from the CUDA
# runtime (as PyTorch does with PYTORCH_NO_CUDA_MEMORY_CACHING=1): each Buffer
# frees its memory in __del__, which for a Buffer in a cycle runs only inside
# a collection.  argv[1]: the folder of the CUDA test doubles.  PyDLL keeps
# the GIL across the calls (CDLL drops it, and a thread without the GIL has no
# Python stack to record).
import ctypes
import gc
import sys

cudart = ctypes.PyDLL(sys.argv[1] + "/libcudart.so.13")


class Buffer(object):
    def __init__(self, size):
        self.ptr = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(size))      # LINE:alloc

    def __del__(self):
        cudart.cudaFree(self.ptr)


gc.disable()
for i in range(4):
    b = Buffer(4 << 20)
    b.me = b
del b
gc.collect()
