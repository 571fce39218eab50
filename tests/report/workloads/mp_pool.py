# A multiprocessing Pool whose workers allocate device memory through the
# CUDA test doubles: each task holds 4 MiB in a reference cycle until the
# worker's collection frees it, and one task frees a block twice (a
# double free: a violation in that worker only).  The parent allocates too.
#   mp_pool.py DOUBLES_DIR START_METHOD TASKS BAD_TASK
# prints {"root": pid, "tasks": {task: worker pid}} on stdout.
import ctypes
import gc
import json
import multiprocessing
import os
import sys

cudart = None
bad = -1


def init(doubles, bad_task):
    # PyDLL keeps the GIL across the calls, so each has its Python stack.
    global cudart, bad
    cudart = ctypes.PyDLL(doubles + "/libcudart.so.13")
    bad = bad_task


class Buffer(object):
    def __init__(self, size):
        self.ptr = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(size))      # LINE:alloc

    def __del__(self):
        cudart.cudaFree(self.ptr)


def task(i):
    gc.disable()
    b = Buffer(4 << 20)
    b.me = b
    del b
    gc.collect()
    if i == bad:
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))
        cudart.cudaFree(p)
        cudart.cudaFree(p)                                                     # LINE:double
    return os.getpid()


if __name__ == "__main__":
    doubles, method, tasks, bad_task = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    init(doubles, -1)
    mine = Buffer(8 << 20)
    pool = multiprocessing.get_context(method).Pool(3, initializer=init, initargs=(doubles, bad_task))
    pids = pool.map(task, range(tasks), chunksize=1)
    pool.close()
    pool.join()
    del mine
    print(json.dumps({"root": os.getpid(), "tasks": dict(enumerate(pids))}))
