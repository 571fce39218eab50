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


def test_finalizer_temporary():
    gc.disable()
    holder = Holder()
    holder.me = holder
    del holder
    gc.collect()


def test_keeps_a_buffer():
    KEPT.append(bytearray(2 << 20))


class Grower:
    def __del__(self):
        KEPT[0].extend(bytes(4 << 20))


def test_finalizer_grows_a_kept_buffer():
    gc.disable()
    grower = Grower()
    grower.me = grower
    del grower
    gc.collect()
    assert len(KEPT[0]) == 6 << 20
