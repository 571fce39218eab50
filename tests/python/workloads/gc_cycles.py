# Makes collections of every generation and writes gc.get_stats() before and
# after, with automatic collections off while the statistics are read.
import gc
import json
import sys


def churn(n):
    for i in range(n):
        a = [i]
        a.append(a)           # a cycle: only the collector frees it


def main(out):
    gc.disable()
    before = gc.get_stats()
    gc.enable()
    churn(30000)
    young = gc.get_count()[0]
    gc.collect(0)
    churn(5000)
    gc.collect(1)
    churn(5000)
    gc.collect(2)
    churn(10000)
    gc.disable()
    after = gc.get_stats()
    with open(out, "w") as f:
        json.dump({"before": before, "after": after, "threshold": gc.get_threshold(),
                   "young_before_collect0": young}, f)


main(sys.argv[1])
