"""Threads: eight threads share a queue of work items (small dicts and
lists), each transforms its items and hands results back.

    python threaded.py [SCALE]"""
import queue
import sys
import threading

THREADS = 8


def worker(todo, done):
    while True:
        item = todo.get()
        if item is None:
            return
        done.put({"id": item["id"], "sum": sum(item["values"]), "tags": sorted(item["tags"])})


def main(scale):
    todo, done = queue.Queue(), queue.Queue()
    threads = [threading.Thread(target=worker, args=(todo, done)) for _ in range(THREADS)]
    for t in threads:
        t.start()
    n = int(100_000 * scale)
    for i in range(n):
        todo.put({"id": i, "values": list(range(i % 50)), "tags": {"t%d" % (i % 5), "u"}})
    for _ in threads:
        todo.put(None)
    for t in threads:
        t.join()
    print(f"threaded: {done.qsize()} results from {THREADS} threads")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
