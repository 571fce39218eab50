"""Tests that raise while a large buffer is a local: pytest keeps a raising
test's frame in a reference cycle (the exception's traceback) until a
collection, so only a collection frees the buffer.  That is pytest's cycle,
not the test's: not a finding.  The last test leaves a cycle of its own
that no collection frees before the session ends: the plugin collects
before it reads the logs, so that cycle is found too."""
import gc

import pytest


def test_fails_with_big_local():
    gc.disable()
    data = bytearray(4 << 20)
    assert not data


def test_skips_with_big_local():
    gc.disable()
    data = bytearray(4 << 20)
    pytest.skip("skipped in the body, %d bytes held" % len(data))


@pytest.mark.xfail(reason="expected")
def test_xfails_with_big_local():
    gc.disable()
    data = bytearray(4 << 20)
    raise ValueError(len(data))


class Loop:
    def __init__(self):
        self.data = bytearray(6 << 20)              # LINE:lastcycle
        self.me = self


def test_cycle_at_the_end():
    # The collector stays off, as the tests above left it: no collection
    # comes before the session ends but the one the plugin makes then.
    gc.disable()
    Loop()
