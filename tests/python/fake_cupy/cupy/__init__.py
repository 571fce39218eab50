"""A stand-in for CuPy on machines without it (and without a GPU): the memory
pool calls memory hooks exactly as cupy/cuda/memory.pyx does (keyword
arguments, thread-local registry), so the tracer's MemoryHook can be tested.
Device memory is imaginary (pointers are numbers) unless FAKE_CUPY_CUDART
names a CUDA runtime (the tests' double): then segments are cudaMalloc'd."""
from cupy import cuda
from cupy.cuda.memory import get_default_memory_pool

__version__ = "13.6.0"
__all__ = ["cuda", "get_default_memory_pool"]
