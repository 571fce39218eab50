"""A cycle whose finalizer makes a large buffer and drops it while the
collection runs: the buffer is a temporary of the finalizer, not memory
only a collection freed, so not a finding (not an error with
--gputrace-fail-gc).  Nor is a live buffer another test made, which a
finalizer grows (a realloc frees its old block)."""
import gc

KEPT = []


class Holder:
    def __del__(self):
        temp = bytearray(5 << 20)
        del temp


def collect_a_cycle_of(cls):
    """An instance of cls in a cycle of its own, collected: its finalizer
    runs inside the collection."""
    gc.disable()
    obj = cls()
    obj.me = obj
    del obj
    gc.collect()


def test_finalizer_temporary():
    collect_a_cycle_of(Holder)


def test_keeps_a_buffer():
    KEPT.append(bytearray(2 << 20))


class Grower:
    def __del__(self):
        KEPT[0].extend(bytes(4 << 20))


def test_finalizer_grows_a_kept_buffer():
    collect_a_cycle_of(Grower)
    assert len(KEPT[0]) == 6 << 20
