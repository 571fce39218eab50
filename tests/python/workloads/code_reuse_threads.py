# code_reuse.py on four threads at once: each thread compiles and runs its
# own small module 300 times, each round's code dying before the next, and
# marks from inside f().  The threads switch at every round (sleep(0)), so
# a thread's next stack is looked at after other threads' code died at
# addresses its own previous stack held: what it remembers of that stack
# must not outlive those deaths.  Each thread's file names alternate
# between two, and f() moves by lines with the round, as in code_reuse.py.
import threading
import time

from trace_mark import mark

THREADS, ROUNDS = 4, 300


def source(t, i):
    """Round i of thread t: f's first line moves with i % 3, its body with (i // 3) % 2."""
    before, inside = i % 3, (i // 3) % 2
    return ("\n" * before + "def f():\n" + "\n" * inside +
            "    junk = [str(n) for n in range(20)]\n"
            "    sleep(0)\n"
            "    mark(b'%d %d')\n" % (t, i) +
            "f()\n")


def run(t):
    for i in range(ROUNDS):
        exec(compile(source(t, i), "thread%d_%d.py" % (t, i % 2), "exec"),
             {"mark": mark, "sleep": time.sleep})
        time.sleep(0)


threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
