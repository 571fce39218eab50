"""A module-scoped fixture whose teardown leaves an 8 MiB reference cycle:
the teardown runs inside the module's last test, which does not use the
fixture.  The cycle is the fixture's, not that test's: no finding (no error
with --gputrace-fail-gc)."""
import gc

import pytest


class Cycle:
    def __init__(self):
        self.data = bytearray(8 << 20)
        self.me = self


@pytest.fixture(scope="module")
def resource():
    yield 1
    Cycle()


def test_uses_resource(resource):
    gc.disable()
    assert resource == 1


def test_clean_after():
    pass
