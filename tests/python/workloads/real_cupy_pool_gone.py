"""A MemoryPool dropped while an array of it lives (test_real_cupy.py): when
the array goes, CuPy frees its chunk without the pool and without the hook
(the pool's weakref is dead), then the segment.  Not a pool that gave back
memory in use."""
import cupy_doubles  # noqa: F401  (stand-ins for the static runtime)
import cupy


def make():
    pool = cupy.cuda.MemoryPool()          # a pool of its own, dropped on return
    with cupy.cuda.using_allocator(pool.malloc):
        return cupy.empty((1000,), dtype=cupy.uint8)


a = make()
del a
print("ok")
