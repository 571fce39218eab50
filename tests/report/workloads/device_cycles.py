# Device memory kept alive by reference cycles: each Holder points to itself
# and owns 8 MiB of pooled device memory (the fake CuPy pool of
# tests/python/fake_cupy), so only the collector frees it.  A second buffer
# per round is dropped by reference counting and must not be charged to
# collections.
import gc

import cupy

pool = cupy.get_default_memory_pool()


class Holder(object):
    pass


gc.disable()
for i in range(5):
    h = Holder()
    h.me = h
    h.mem = pool.malloc(8 << 20)                   # LINE:cycle
    plain = pool.malloc(1 << 20)                   # LINE:plain
    del plain
del h
gc.collect()
