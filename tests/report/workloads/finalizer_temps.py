"""A cycle whose finalizer makes temporaries while the collection runs: a
16 MiB buffer and 1000 objects, allocated and dropped inside __del__.  They
were never garbage the collector found, and neither was the old block of
a live 2 MiB buffer it grows (a realloc); only the 12 MiB buffer the cycle
holds is.  Run with and without TRACE_PY_ALLOCS=1 by report_test.py's
finalizer_temps case; with the argument "abort" the finalizer aborts the
process, inside the collection."""
import gc
import os
import sys

gc.disable()


class Temp:
    pass


kept = bytearray(2 << 20)  # LINE:kept


class Holder:
    def __del__(self):
        temp = bytearray(16 << 20)  # LINE:temp_buffer
        objects = [Temp() for _ in range(1000)]  # LINE:temp_objects
        del temp, objects
        kept.extend(bytes(4 << 20))
        if sys.argv[1:] == ["abort"]:
            os.abort()


holder = Holder()  # LINE:holder
holder.self = holder
holder.buffer = bytearray(12 << 20)  # LINE:cycle_buffer
del holder
gc.collect()
