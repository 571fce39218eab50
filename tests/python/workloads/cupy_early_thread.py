# A thread started before cupy is imported, that raises no audit event
# afterwards: CuPy's hooks are per thread, so the tracer registers its hook
# there at the thread's first collection (the allocations below make one),
# and the requests after it are recorded.
import threading

ready = threading.Event()


def worker():
    ready.wait()
    junk = [[] for _ in range(5000)]       # enough allocations for a collection here
    del junk
    for size in (4096, 70000, 1 << 20):
        m = pool.malloc(size)
        del m


t = threading.Thread(target=worker)
t.start()                                  # before the import
import cupy                                # noqa: E402

pool = cupy.get_default_memory_pool()
a = pool.malloc(1000)
del a
ready.set()
t.join()
print("done")
