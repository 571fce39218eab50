"""The registry and base class of cupy/cuda/memory_hook.pyx."""
import collections
import threading

_thread_local = threading.local()


def _has_memory_hooks():
    return getattr(_thread_local, "memory_hooks", None) is not None


def get_memory_hooks():
    if getattr(_thread_local, "memory_hooks", None) is None:
        _thread_local.memory_hooks = collections.OrderedDict()
    return _thread_local.memory_hooks


class MemoryHook(object):
    name = "MemoryHook"

    def __enter__(self):
        hooks = get_memory_hooks()
        if self.name in hooks:
            raise KeyError("memory hook %s already exists" % self.name)
        hooks[self.name] = self
        return self

    def __exit__(self, *_):
        del get_memory_hooks()[self.name]

    def alloc_preprocess(self, **kwargs):
        pass

    def alloc_postprocess(self, **kwargs):
        pass

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass
