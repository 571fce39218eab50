# More distinct Python stacks than the recorder keeps: walk(i) recurses
# DEPTH frames deep, each level calling itself from one of two lines picked
# by a bit of i, and marks at the bottom, so that 2**DEPTH marks have
# 2**DEPTH different stacks (about 2**(DEPTH+1) frames to tell apart, more
# than python_stack.c's tree holds before it starts again).  Twice over:
# the second pass meets every stack again after the tree was emptied.
from trace_mark import mark

DEPTH = 14


def walk(bits, k, tag):
    if k == 0:
        mark(tag)  # LINE:bottom
        return
    if bits & 1:
        walk(bits >> 1, k - 1, tag)  # LINE:one
    else:
        walk(bits >> 1, k - 1, tag)  # LINE:zero


for rnd in range(2):
    for i in range(2 ** DEPTH):
        walk(i, DEPTH, b"%d %d" % (rnd, i))  # LINE:top
