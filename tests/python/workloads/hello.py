# A small program whose output must not change under the tracer.
import gc
import sys


def main():
    data = [[i] for i in range(1000)]
    for d in data:
        d.append(d)           # cycles for the collection below
    del data
    found = gc.collect()      # LINE:collect
    print("hello from", sys.version_info[:2], "collected", found > 0)
    return 3


sys.exit(main())
