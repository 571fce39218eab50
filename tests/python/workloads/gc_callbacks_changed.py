"""Programs that change gc.callbacks during a collection, so that the
collector never calls ours with "stop", then free large buffers by reference
counting (none of them is the collector's doing).

    python gc_callbacks_changed.py once|finalizer|by_hand|cleared|cleared_quiet

once: a one-shot callback put before ours removes itself in "stop"
(CPython calls the list by index: ours slides into its place and is
skipped).  finalizer: a finalizer the collection runs empties the list.
by_hand: our callable called directly, as a program re-dispatching
gc.callbacks would, with and without the collector's arguments.  cleared:
the list emptied outside any collection.  cleared_quiet: the same, and no
audit event after it (found when the interpreter finalises)."""
import gc
import sys

BLOCK = 10 << 20


def refcount_frees(n):
    for _ in range(n):
        b = bytearray(BLOCK)
        del b


def once():
    def one_shot(phase, info):
        if phase == "stop":
            gc.callbacks.remove(one_shot)
    gc.callbacks.insert(0, one_shot)
    gc.collect()
    refcount_frees(8)
    keep = [dict() for _ in range(2000)]
    del keep                   # dicts freed by reference counting
    gc.collect()
    refcount_frees(2)


class Resetter:
    def __init__(self):
        self.me = self         # a cycle: only the collector frees it

    def __del__(self):
        gc.callbacks[:] = []


def finalizer():
    Resetter()
    gc.collect()
    refcount_frees(8)
    keep = [dict() for _ in range(2000)]
    del keep                   # dicts freed by reference counting


def by_hand():
    ours = gc.callbacks[-1]
    ours("start", {"generation": 2, "collected": 0, "uncollectable": 0})   # LINE:by_hand
    ours("start", None)        # LINE:by_hand_none
    try:
        ours("start", {}, 3)
    except TypeError:
        pass
    refcount_frees(4)
    ours("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    gc.collect()
    refcount_frees(2)


def cleared():
    gc.callbacks.clear()       # outside any collection
    for _ in range(200):
        sys.audit("app.event")  # what notices it: the audit hook, now and then
    refcount_frees(8)


def cleared_quiet():
    gc.callbacks.clear()
    refcount_frees(8)


{"once": once, "finalizer": finalizer, "by_hand": by_hand, "cleared": cleared,
 "cleared_quiet": cleared_quiet}[sys.argv[1]]()
