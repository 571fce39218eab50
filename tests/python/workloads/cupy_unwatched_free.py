# A thread started before `import cupy` frees (drops the last reference to) a
# block that the main thread allocated after the import.  CuPy's hooks are
# per thread and this thread has none yet, so the free is not recorded; the
# main thread then gets the same chunk back from the pool.  Legal program.
import threading
go, done = threading.Event(), threading.Event()
box = {}

def worker():
    go.wait()
    box.pop("m")          # PooledMemory.__del__ -> pool._free, on this thread
    done.set()

t = threading.Thread(target=worker)
t.start()                 # before the import
import cupy               # noqa: E402
pool = cupy.get_default_memory_pool()
box["m"] = pool.malloc(4096)
first = box["m"].ptr
go.set(); done.wait(); t.join()
m2 = pool.malloc(4096)    # the same chunk again (free list of its size)
print("reused:", m2.ptr == first)
del m2
