# Seed 002: ctypes.cast makes a reference cycle that keeps each 10 MiB
# bytearray alive until the cyclic GC runs.  Without the cast line the buffers
# are freed by reference counting.  argv[1]: "cast" or "nocast".
import ctypes
import gc
import sys

cast = sys.argv[1] == "cast"
gc.set_threshold(100)         # collect often, so the run stays small
for i in range(40):
    barray = bytearray(10485760)                                   # LINE:alloc
    ubuffer = (ctypes.c_char * len(barray)).from_buffer(barray)
    if cast:
        c_ptr = ctypes.cast(ubuffer, ctypes.POINTER(ctypes.c_char))
    for j in range(20):
        [j]                   # small garbage, so collections come round
del barray, ubuffer
if cast:
    del c_ptr
gc.collect()
