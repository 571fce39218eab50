# Records "mark" events through libtrace's public API, reached with ctypes:
# CDLL releases the GIL around the call, PyDLL keeps it.  Either way a mark
# carries the Python stack of the thread that made it, and never another
# thread's.
import threading

from trace_mark import mark as mark_held, mark_released


def inner_with_gil():
    mark_held(b"held")                     # LINE:held


def outer_with_gil():
    inner_with_gil()                       # LINE:outer


def worker(n):
    for i in range(n):
        mark_released(b"released-thread")  # LINE:released-thread
    mark_held(b"held-thread")              # LINE:held-thread


def spin(stop):
    while not stop.is_set():               # the main thread holds the GIL here
        sum(range(100))


outer_with_gil()
mark_released(b"released")                # LINE:released
stop = threading.Event()
t = threading.Thread(target=worker, args=(300,))
t.start()
spin_until = threading.Thread(target=lambda: (t.join(), stop.set()))
spin_until.start()
spin(stop)
spin_until.join()
