#!/bin/sh
# bench/python_overhead.sh - what the preload costs a call-heavy Python
# program that records no events: bare vs LD_PRELOAD=libtrace.so, the best of
# N alternating runs of each, in CPU time (alternating, so that a busy shared machine
# slows both alike), pinned to CPU 0 like the other benchmarks (migrations between
# cores cost a few percent, more than what is measured).
#
#   bench/python_overhead.sh [PYTHON...]     default: python3
#   TRACE_LIB=path/libtrace.so RUNS=9 FIB=30 bench/python_overhead.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=${TRACE_LIB:-$here/../build/lib/libtrace.so}
runs=${RUNS:-9}
fib=${FIB:-30}
[ -f "$lib" ] || { echo "no $lib: build first (or set TRACE_LIB)" >&2; exit 2; }
[ $# -gt 0 ] || set -- python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() { sort -n | head -1; }
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"

for py in "$@"; do
    : > "$tmp/bare"; : > "$tmp/traced"
    i=0
    while [ $i -lt "$runs" ]; do
        $pin "$py" "$here/python_overhead.py" "$fib" >> "$tmp/bare"
        TRACE_QUIET=1 TRACE_OUTPUT="$tmp/t-%p.tlog" LD_PRELOAD="$lib" \
            $pin "$py" "$here/python_overhead.py" "$fib" >> "$tmp/traced"
        i=$((i + 1))
    done
    bare=$(best < "$tmp/bare")
    traced=$(best < "$tmp/traced")
    version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    awk -v py="$py" -v v="$version" -v b="$bare" -v t="$traced" -v n="$runs" 'BEGIN {
        printf "%-40s %s  bare %.4fs  traced %.4fs  overhead %+.1f%%  (best of %d)\n",
               py, v, b, t, (t / b - 1) * 100, n }'
done
