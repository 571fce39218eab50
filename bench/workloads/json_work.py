"""json: encode and decode nested documents.

    python json_work.py [SCALE]"""
import json
import sys


def document(i):
    return {"id": i, "name": f"item-{i}", "tags": ["a", "b", str(i % 13)],
            "price": i * 0.25, "nested": {"depth": [i, {"x": i % 7, "y": None}]}}


def main(scale):
    total = 0
    for batch in range(int(260 * scale)):
        docs = [document(batch * 500 + i) for i in range(500)]
        text = json.dumps(docs)
        total += len(json.loads(text))
    print(f"json_work: {total} documents")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
