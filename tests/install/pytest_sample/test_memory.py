import gc

from conftest import DeviceBuffer

kept = []


def test_clean():
    buf = DeviceBuffer(1 << 20)
    del buf


def test_leaky():
    kept.append(DeviceBuffer(2 << 20))        # LINE:leak


class Node:
    def __init__(self):
        self.buf = DeviceBuffer(5 << 20)      # LINE:cycle
        self.me = self


def test_cycle():
    gc.disable()
    try:
        Node()
    finally:
        gc.enable()


def test_collects():
    gc.collect()


def test_module_fixture(module_buffer):
    assert module_buffer.ptr.value


def test_pool_clean(pool):
    ptr = pool.malloc(1 << 20)
    pool.free(ptr, 1 << 20)


held = []


def test_pool_leaky(pool):
    held.append(pool.malloc(512 << 10))               # LINE:poolleak


class HostNode:
    def __init__(self):
        self.data = bytearray(3 << 20)               # LINE:hostcycle
        self.me = self


def test_host_cycle():
    gc.disable()
    try:
        HostNode()
    finally:
        gc.enable()
    gc.collect()
