# Drives the (fake) CuPy pool: plain requests, a request that runs the
# out-of-memory ladder while cycles hold pooled memory (their finalizers free
# it back inside the collection, inside the malloc), and requests from a
# thread started after the import.
import gc
import threading

import cupy

pool = cupy.get_default_memory_pool()
a = pool.malloc(1000)
del a


class Holder(object):
    pass


for i in range(6):
    h = Holder()
    h.me = h                               # a cycle: freed only by the collector
    h.mem = pool.malloc(8 << 20)
del h
gc.disable()                               # so that only the ladder collects
big = pool.malloc(40 << 20)                # LINE:ladder
gc.enable()
del big


def worker():
    for size in (4096, 70000):
        m = pool.malloc(size)
        del m


t = threading.Thread(target=worker)
t.start()
t.join()
print("done")
