# Seed 002 with PyTorch CPU tensors (posix_memalign underneath): each 4 MiB
# tensor is kept alive by a reference cycle until the cyclic GC runs; without
# "cycle" reference counting frees it.  argv[1]: "cycle" or "nocycle".
import gc
import sys

import torch

cycle = sys.argv[1] == "cycle"
gc.set_threshold(100)
for i in range(20):
    holder = {"data": torch.ones(1 << 20)}                         # LINE:alloc
    if cycle:
        holder["self"] = holder
    for j in range(20):
        [j]
del holder
gc.collect()
