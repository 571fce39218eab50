"""Regular expressions: compile a few patterns, scan generated log lines,
substitute and split.

    python regex_work.py [SCALE]"""
import re
import sys

LINE = re.compile(r"(?P<time>\d+:\d+:\d+) (?P<level>[A-Z]+) \[(?P<who>\w+)\] (?P<msg>.*)")
NUMBER = re.compile(r"\b\d+\b")


def lines(n):
    levels = ["INFO", "WARN", "ERROR", "DEBUG"]
    for i in range(n):
        yield f"{i % 24:02}:{i % 60:02}:{i % 59:02} {levels[i % 4]} [worker{i % 9}] job {i} took {i % 1000} ms"


def main(scale):
    by_level, digits = {}, 0
    for line in lines(int(240_000 * scale)):
        m = LINE.match(line)
        by_level[m["level"]] = by_level.get(m["level"], 0) + 1
        digits += len(NUMBER.findall(m["msg"]))
        NUMBER.sub("#", m["msg"]).split()
    print(f"regex_work: {by_level} {digits}")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
