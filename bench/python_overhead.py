"""A call-heavy Python program for bench/python_overhead.sh: recursive calls,
method calls and small short-lived objects, but no cycles (so no collection
and no events while it runs).  Prints the CPU time it took (less sensitive
than wall time to other work on a shared machine)."""
import sys
import time


class Point(object):
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def moved(self, dx):
        return Point(self.x + dx, self.y)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def walk(n):
    p = Point(0, 0)
    for i in range(n):
        p = p.moved(1)
    return p.x


start = time.process_time()
fib(int(sys.argv[1]) if len(sys.argv) > 1 else 25)
walk(2000000)
print("%.4f" % (time.process_time() - start))
