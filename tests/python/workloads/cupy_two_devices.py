# CuPy on two devices: a pool per device (CuPy's MemoryPool keeps one per
# device).  Device 0 makes and frees blocks, then device 1 asks for the same
# sizes: its pool has none free and takes new segments.  With one pool for
# both in the log, the model reused device 0's free chunks for device 1 and
# left the log at every one of its first requests.
from cupy.cuda import memory

pools = [memory.SingleDeviceMemoryPool(device_id=d) for d in (0, 1)]
for round in range(20):
    for p in pools:
        held = [p.malloc(size) for size in (512, 4096, 70000)]
        del held
print("done")
