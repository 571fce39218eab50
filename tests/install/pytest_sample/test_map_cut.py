"""Cuts into anonymous mappings (map_rest pieces, FORMAT.md section 7).

A module-scoped fixture maps 32 MiB, held by a reference cycle; a test cuts
8 MiB off its end, and the cycle is collected at the session's end (munmap
of the rest in its finalizer): the 24 MiB left are the fixture's, not the
cutting test's (they were its "memory only garbage collection freed").  A
test whose collection runs a finalizer that gives back 8 MiB of a 32 MiB
mapping the test keeps: a collection freed 8 MiB, not 32.  The summary
reads these pieces after the first mark: the plugin once stopped there
with a TypeError (an INTERNALERROR, exit 3)."""
import ctypes
import gc
import mmap

import pytest

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MB = 1 << 20
KEPT = []


def map_anon(size):
    p = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert p not in (None, ctypes.c_void_p(-1).value)
    ctypes.memset(p, 1, size)
    return p


class Mapping:
    """A mapping owned by a reference cycle: only a collection unmaps it."""

    def __init__(self, size):
        self.size = size
        self.p = map_anon(size)
        self.me = self

    def __del__(self):
        libc.munmap(self.p, self.size)


@pytest.fixture(scope="module")
def mapping():
    return Mapping(32 * MB)


def test_uses_mapping(mapping):
    assert mapping.p


def test_cuts_mapping(mapping):
    assert libc.munmap(mapping.p + 24 * MB, 8 * MB) == 0
    mapping.size = 24 * MB


class Trimmer:
    def __init__(self, p):
        self.p = p
        self.me = self

    def __del__(self):
        libc.munmap(self.p + 24 * MB, 8 * MB)


def test_trim_in_collection():
    gc.collect()
    p = map_anon(32 * MB)  # LINE:trimmed
    KEPT.append(p)
    Trimmer(p)
    gc.collect()
