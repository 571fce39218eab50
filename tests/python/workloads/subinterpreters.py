# Collections in subinterpreters (3.12+): each subinterpreter keeps a 3 MiB
# bytearray in a cycle until its own gc.collect() frees it.  Prints the ids
# of the subinterpreters, one per line.
import gc
import sys

try:
    import _interpreters as interpreters          # 3.13
except ImportError:
    import _xxsubinterpreters as interpreters     # 3.12

CODE = """
import gc
b = bytearray(3 << 20)
holder = [b]
holder.append(holder)
del b, holder
gc.collect()
"""

ids = []
for i in range(2):
    interp = interpreters.create()
    if hasattr(interpreters, "run_string"):
        interpreters.run_string(interp, CODE)
    else:
        interpreters.exec(interp, CODE)
    ids.append(int(interp))
    interpreters.destroy(interp)
gc.collect()
print("\n".join(str(i) for i in ids))
