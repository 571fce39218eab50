# Collections in subinterpreters before 3.12, through _testcapi's
# run_in_subinterp (3.8 to 3.11): each subinterpreter keeps a 3 MiB bytearray
# in a cycle until its own gc.collect() frees it.  Prints how many callables
# the main interpreter's gc.callbacks holds at the end (3.8 shares one list
# among all interpreters).  Exit 77 without _testcapi.
import gc
import sys

try:
    import _testcapi
except ImportError:
    sys.exit(77)

CODE = """
import gc
b = bytearray(3 << 20)
holder = [b]
holder.append(holder)
del b, holder
gc.collect()
"""

for i in range(2):
    _testcapi.run_in_subinterp(CODE)
gc.collect()
print(len(gc.callbacks))
