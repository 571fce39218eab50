"""A workload for bench/dump_export_bench.sh: Python recursion through C
(map, sorted's key) allocating small objects at every depth, so that under
TRACE_PY_ALLOCS=1 most events carry a native stack cut at 32 frames and a
Python stack as deep, some thousands of distinct stacks over some thousands
of distinct frames (libpython, libc, the interpreter).

    python deep_stacks.py [SCALE]        SCALE 3.2: about 800,000 events"""
import sys


class Node:
    __slots__ = ("kids", "v")

    def __init__(self, v):
        self.kids, self.v = [], v


def down(n, width):
    if n == 0:
        return [Node(i) for i in range(width)]
    return sorted(map(lambda i: down(n - 1, width) if i == 0 else [Node(i)], range(width)), key=len)


def main(scale):
    for i in range(int(2000 * scale)):
        down(6 + i % 8, 3)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
