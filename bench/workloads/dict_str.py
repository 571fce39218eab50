"""Dict and str heavy: word counting over generated text, string building
and formatting, dict merges.

    python dict_str.py [SCALE]"""
import sys


def words(n):
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po"]
    for i in range(n):
        yield syllables[i % 8] + syllables[(i * 7) % 8] + str(i % 97)


def main(scale):
    counts = {}
    for w in words(int(1_600_000 * scale)):
        counts[w] = counts.get(w, 0) + 1
    lines = [f"{k}={v}" for k, v in sorted(counts.items())]
    text = ";".join(lines * 20)
    merged = {}
    for part in text.split(";")[: int(400_000 * scale)]:
        k, _, v = part.partition("=")
        merged.setdefault(k.upper(), []).append(int(v))
    print(f"dict_str: {len(counts)} words, {len(merged)} keys")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
