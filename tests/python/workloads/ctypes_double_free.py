# A double free made from Python through ctypes (which releases the GIL
# around the call): cudaFree twice on the same pointer, with the CUDA test
# double.  argv[1]: the directory holding libcudart.so.13.
import ctypes
import sys

cudart = ctypes.CDLL(sys.argv[1] + "/libcudart.so.13")


def release(p):
    return cudart.cudaFree(p)                                      # LINE:free


p = ctypes.c_void_p()
cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))       # LINE:alloc
release(p)
release(p)                                                         # LINE:second
