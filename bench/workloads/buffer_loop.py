"""Seed 002's loop, bounded: each iteration allocates a 10 MiB bytearray
and takes a ctypes view of it with ctypes.cast, which builds a reference
cycle (the pointer's _objects refers back to itself) that keeps the buffer
alive until the cyclic GC runs.

    python buffer_loop.py [SCALE]"""
import ctypes
import sys

BUFFER = 10 << 20


def one_buffer():
    data = bytearray(BUFFER)
    view = (ctypes.c_char * BUFFER).from_buffer(data)
    pointer = ctypes.cast(view, ctypes.POINTER(ctypes.c_char))
    return pointer[0]


def main(scale):
    for _ in range(int(60 * scale)):
        one_buffer()
    print("buffer_loop: done")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
