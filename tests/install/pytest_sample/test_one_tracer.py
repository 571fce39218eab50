"""Run by test_pytest_plugin.py with a libtrace.so already in LD_PRELOAD:
the session restarted under the recorder has exactly one copy mapped."""
import gc


def test_one_libtrace_mapped():
    with open("/proc/self/maps") as f:
        copies = {line.split()[-1] for line in f if line.rstrip().endswith("/libtrace.so")}
    assert len(copies) == 1, copies
    gc.collect()
