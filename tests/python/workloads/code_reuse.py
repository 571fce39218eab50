# Compiles and runs a small module 3 x 300 times, each round's code dying
# before the next is made: CPython often puts the new code object, and its
# file name and function name, at the addresses the old ones had.  Rounds
# change the file name and move the code by lines, with and without moving
# its first line, so a stack cached by address would name an earlier round's
# file or line.  Each round makes a mark named after it from inside f();
# with TRACE_PY_ALLOCS=1 its allocations go through the same stacks.  With
# a path, the library there (code_dealloc_wrapper.c) wraps the code type's
# deallocator first, as another tool could.
import ctypes
import sys

from trace_mark import mark

ROUNDS = 300
if len(sys.argv) > 1:
    # Another tool wraps the code type's deallocator after the preload did.
    wrapper = ctypes.CDLL(sys.argv[1])
    wrapper.code_deaths_seen.restype = ctypes.c_ulong
    wrapper.wrap_code_dealloc.argtypes = [ctypes.c_void_p]
    wrapper.wrap_code_dealloc(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "PyCode_Type")))

# Where addresses come back depends on the version and on what else was
# freed: three ways of naming the files meet it on every version.
NAMINGS = {"two": 2, "five": 5, "unique": 0}


def file_name(naming, i):
    """The file round i of a naming compiles as (the test computes it too)."""
    period = NAMINGS[naming]
    return "gen%d.py" % (i % period if period else i)


def source(naming, i):
    """Round i's module: f's first line moves with i % 3, its body with (i // 3) % 2."""
    before, inside = i % 3, (i // 3) % 2
    return ("\n" * before + "def f():\n" + "\n" * inside +
            "    junk = [str(n) for n in range(20)]\n"
            "    mark(b'%s %d')\n" % (naming, i) +
            "f()\n")


for naming in NAMINGS:
    for i in range(ROUNDS):
        exec(compile(source(naming, i), file_name(naming, i), "exec"), {"mark": mark})
if len(sys.argv) > 1 and wrapper.code_deaths_seen() < 3 * ROUNDS:
    sys.exit("the wrapper saw %d code objects die" % wrapper.code_deaths_seen())
