"""Object-graph churn: trees of small objects with parent back-links
(reference cycles), built and dropped; the cyclic GC does the freeing.

    python churn_cycles.py [SCALE]"""
import sys


class Node:
    __slots__ = ("parent", "children", "value")

    def __init__(self, parent, value):
        self.parent, self.children, self.value = parent, [], value


def tree(depth, fanout, parent=None):
    node = Node(parent, depth)
    if depth:
        node.children = [tree(depth - 1, fanout, node) for _ in range(fanout)]
    return node


def main(scale):
    kept = []
    for i in range(int(1800 * scale)):
        kept.append(tree(5, 3))
        if len(kept) > 20:
            kept.pop(0)
    print(f"churn_cycles: {len(kept)} trees kept")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
