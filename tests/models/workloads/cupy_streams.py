# Two CuPy streams, each with its own arena: a chunk freed on one stream is
# reused on that stream only.  Prints the streams' handles.  With
# CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1, two threads allocate on their
# per-thread default stream instead.
import os
import threading

import cupy
from cupy.cuda import stream as st

pool = cupy.get_default_memory_pool()

if os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM") == "1":
    # Both threads stay alive until both are done: CuPy names a thread's
    # arena by the address of a per-thread object, which a thread started
    # after another ended may get again.
    lock, done = threading.Lock(), threading.Barrier(2)

    def worker():
        with lock:
            a = pool.malloc(4096)
            del a
            b = pool.malloc(4096)  # this thread's arena: its own chunk again
            del b
        done.wait()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("per-thread")
else:
    s1, s2 = st.Stream(), st.Stream()
    with s1:
        a = pool.malloc(4096)
        del a                      # stream 1's arena keeps the chunk
    with s2:
        b = pool.malloc(4096)      # stream 2's arena is empty: a new segment
    with s1:
        c = pool.malloc(4096)      # stream 1's chunk
    del b, c
    with s2:
        d = pool.malloc(4096)      # stream 2's chunk
    del d
    print("streams %d %d" % (s1.ptr, s2.ptr))
