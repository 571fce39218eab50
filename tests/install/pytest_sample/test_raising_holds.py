"""A raising test that holds another test's buffer: test_loads puts a
buffer in a cache, test_skips_holding has it in a local when it raises
(pytest keeps its frame in a reference cycle), and test_evicts drops it
from the cache.  From then on only the kept frame holds the buffer, and
the collection that frees that frame frees it: pytest's cycle, not
test_loads's, so not a finding of test_loads (no error with
--gputrace-fail-gc), but a note naming both tests."""
import functools
import gc

import pytest


@functools.lru_cache(maxsize=1)
def dataset(name):
    return bytearray(8 << 20)


def test_loads():
    gc.disable()
    assert len(dataset("x")) == 8 << 20


def test_skips_holding():
    data = dataset("x")
    pytest.skip("skipped in the body, %d bytes held" % len(data))


def test_evicts():
    assert len(dataset("y")) == 8 << 20
