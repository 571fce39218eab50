from cupy.cuda import memory_hook
from cupy.cuda import stream
from cupy.cuda import memory
from cupy.cuda.memory_hook import MemoryHook

from cupy.cuda.stream import Stream

__all__ = ["memory_hook", "memory", "stream", "MemoryHook", "Stream"]
