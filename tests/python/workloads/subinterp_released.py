# Code run in a subinterpreter (_xxsubinterpreters.run_string, 3.13's
# _interpreters.exec) allocates 3 MiB through ctypes, which releases the GIL
# around the call, and a 3 MiB bytearray with the GIL held; from the main
# thread and from a thread of its own.  Then the main interpreter does the
# same through ctypes, once the subinterpreters are gone.  Sizes tell the
# allocations apart: 3 MiB + 1 (sub, main thread, released), + 2 (sub,
# thread, released), + 3 (main interpreter, released), + 11 and + 21 (sub,
# held: the bytearray's buffer is one byte longer than asked).
# Exit 77: no subinterpreter module.
import sys
import threading

try:
    import _xxsubinterpreters as interpreters
except ImportError:
    try:
        import _interpreters as interpreters
    except ImportError:
        sys.exit(77)

SUB = '''
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def sub_alloc(n):
    p = libc.malloc(n)          # LINE:sub-released
    libc.free(p)
def sub_held(n):
    b = bytearray(n)            # LINE:sub-held
def sub_outer():
    sub_alloc(RELEASED)
    sub_held(HELD)
sub_outer()
'''


def create():
    try:
        return interpreters.create(isolated=False)   # 3.12: ctypes loads only in a legacy one
    except TypeError:
        return interpreters.create()


def run_in_sub(released, held):
    iid = create()
    code = SUB.replace("RELEASED", str(released)).replace("HELD", str(held))
    (interpreters.run_string if hasattr(interpreters, "run_string") else interpreters.exec)(iid, code)
    interpreters.destroy(iid)


def main_side():
    run_in_sub((3 << 20) + 1, (3 << 20) + 10)   # LINE:run-in-sub


main_side()
t = threading.Thread(target=run_in_sub, args=((3 << 20) + 2, (3 << 20) + 20))
t.start()
t.join()

import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]


def main_alloc():
    libc.free(libc.malloc((3 << 20) + 3))      # LINE:main-released


main_alloc()
print("ok")
