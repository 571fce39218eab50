from cupy.cuda import memory_hook
from cupy.cuda import memory
from cupy.cuda.memory_hook import MemoryHook

__all__ = ["memory_hook", "memory", "MemoryHook"]
