# Seed 002 with NumPy: each 2 MiB array is kept alive by a reference cycle
# until the cyclic GC runs; without "cycle" reference counting frees it.
# argv[1]: "cycle" or "nocycle".
import gc
import sys

import numpy as np

cycle = sys.argv[1] == "cycle"
gc.set_threshold(100)         # collect often, so the run stays small
for i in range(30):
    holder = {"data": np.ones(1 << 18)}                            # LINE:alloc
    if cycle:
        holder["self"] = holder
    for j in range(20):
        [j]                   # small garbage, so collections come round
del holder
gc.collect()
