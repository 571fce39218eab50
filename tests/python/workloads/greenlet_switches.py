"""Greenlets switching under the preload (test_greenlet.py).

Part one: each greenlet allocates buffers of sizes unique to (greenlet,
step) under a known Python stack, switching to its parent between them and
collecting now and then; the stacks expected (innermost first, function and
line) go to the JSON file named by argv[1].

Part two: sibling switches.  Greenlet A switches straight to B, whose C
stack was saved deep (a large heap copy, freed by the switch once copied
back), from a C stack depth that varies, so that the C frame A leaves in
the thread state (3.11/3.12) lies at many places of what the copy back
rewrites."""
import gc
import json
import sys
import traceback

import greenlet

expect = {}


def here():
    """The caller's stack, innermost first, its line the next one's."""
    frames = [(f.name, f.lineno) for f in reversed(traceback.extract_stack(sys._getframe(1)))]
    frames[0] = (frames[0][0], frames[0][1] + 1)
    return frames


def leaf(gid, step):
    size = 200000 + gid * 1000 + step
    expect[size] = here()
    b = bytearray(size)
    greenlet.getcurrent().parent.switch(len(b))
    if step % 3 == 0:
        gc.collect()
    size2 = 400000 + gid * 1000 + step
    expect[size2] = here()
    b2 = bytearray(size2)
    return len(b2)


def descend(gid, step, depth):
    if depth == 0:
        return leaf(gid, step)
    return descend(gid, step, depth - 1)


def body(gid):
    for step in range(12):
        descend(gid, step, gid % 5 * 3 + step % 4)
    return gid


gs = [greenlet.greenlet(body) for _ in range(20)]
for gid, g in enumerate(gs):
    g.switch(gid)
while any(not g.dead for g in gs):
    for g in gs:
        if not g.dead:
            g.switch()


def deep(n, peer):
    if n == 0:
        while True:
            peer = greenlet.getcurrent().parent.switch() or peer
            if peer is not None:
                peer.switch()
    return sum(map(lambda k: deep(k, peer), [n - 1]))


def pad(n, target):
    if n == 0:
        return target.switch()
    if n % 2:
        return sum(map(lambda k: pad(k, target), [n - 1]))
    return sorted([n], key=lambda k: pad(n - 1, target))[0]


siblings = 0
for depth_b in (30, 60, 120):
    for depth_a in range(40):
        b = greenlet.greenlet(deep)
        b.switch(depth_b, None)
        a = greenlet.greenlet(pad)
        a.switch(depth_a, b)
        siblings += 1

with open(sys.argv[1], "w") as f:
    json.dump({str(k): v for k, v in expect.items()}, f)
print("stacks", len(expect), "siblings", siblings)
