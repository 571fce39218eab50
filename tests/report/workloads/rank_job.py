# One rank of a made-up distributed job: reserves device memory through the
# CUDA test doubles, MiB from argv (one rank is told to reserve far more).
#   RANK=i rank_job.py DOUBLES_DIR MIB
import ctypes
import sys

cudart = ctypes.PyDLL(sys.argv[1] + "/libcudart.so.13")
blocks = []
for _ in range(4):
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(int(sys.argv[2]) << 18))   # a quarter each
    blocks.append(p)
for p in blocks:
    cudart.cudaFree(p)
