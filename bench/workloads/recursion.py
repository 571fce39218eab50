"""Recursion and calls: naive Fibonacci and a recursive tree walk with
keyword arguments (frames, no allocation to speak of).

    python recursion.py [SCALE]"""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def walk(depth, *, acc=0):
    if depth == 0:
        return acc + 1
    return walk(depth - 1, acc=acc) + walk(depth - 1, acc=acc)


def main(scale):
    total = 0
    for _ in range(max(1, int(6 * scale))):
        total += fib(28) + walk(18)
    print(f"recursion: {total}")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
