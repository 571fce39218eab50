# PyTorch on the CPU (test_torch_cpu.py): ends by an exception, by os._exit(3)
# or by SIGTERM from outside (argv[1]: exception, exit, sigterm).
import os, sys, time
import torch
torch.manual_seed(0)
t = torch.randn(1000, 1000)
s = (t @ t).sum().item()
print("sum", repr(s), flush=True)
how = sys.argv[1]
if how == "exception":
    raise RuntimeError("ended by exception")
if how == "exit":
    os._exit(3)
if how == "sigterm":
    print("ready", flush=True)
    while True:
        (t @ t).sum()
        time.sleep(0.01)
