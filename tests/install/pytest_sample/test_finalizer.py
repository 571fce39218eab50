"""A cycle whose finalizer makes a large buffer and drops it while the
collection runs: the buffer is a temporary of the finalizer, not memory
only a collection freed, so not a finding (not an error with
--gputrace-fail-gc)."""
import gc


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
