"""The CUDA runtime and driver reached the way ctypes users reach them:
dlopen + dlsym on a library handle.  Prints "api result ptr" lines."""
import ctypes
import sys

doubles = sys.argv[1]
cudart = ctypes.CDLL(doubles + "/libcudart.so.13")
cuda = ctypes.CDLL(doubles + "/libcuda.so.1")

p = ctypes.c_void_p()
r = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(5000))
print("cudaMalloc", r, p.value)
r = cudart.cudaFree(p)
print("cudaFree", r, p.value)

d = ctypes.c_ulonglong()
r = cuda.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(6000))
print("cuMemAlloc_v2", r, d.value)
r = cuda.cuMemFree_v2(d)
print("cuMemFree_v2", r, d.value)
