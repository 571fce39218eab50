#!/bin/sh
# tests/preload/overflow.sh PRELOAD PROG TRACE_DUMP - a stack overflow in C
# leaves a whole log (preload/alt_stack.h): PROG (overflow.c) recurses until
# its main thread's stack runs out (RLIMIT_STACK 256 KiB), or a thread's
# (64 KiB), after a mark.  The status must be the bare one (SIGSEGV, or the
# sanitizer's report), the log end `signal SIGSEGV` (`sanitizer`) with the
# mark in it.  Before, no handler could run (no stack for it): no END, and
# no log at all when nothing was flushed yet.  Also: the main thread and a
# thread that recorded an event have an alternate stack of ours, bare none;
# one the program set is not replaced, and what the kernel's frame and our
# ending take of it (painted) leaves at least half of ALT_STACK_SIZE.
set -eu
preload=$1 prog=$2 dump=$3
runtime=${preload%:*}
[ "$runtime" = "$preload" ] && runtime=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
status() { "$@" >"$tmp/out" 2>"$tmp/err" && echo 0 || echo $?; }
for mode in main thread; do
    rm -f "$tmp"/*.tlog
    bare=$(ulimit -c 0; ulimit -s 256; LD_PRELOAD=$runtime status "$prog" $mode)
    traced=$(ulimit -c 0; ulimit -s 256; LD_PRELOAD=$preload TRACE_OUTPUT="$tmp/t.tlog" status "$prog" $mode)
    echo "$mode: bare status $bare, traced $traced"
    [ "$bare" -ne 0 ] || { echo "FAIL: $mode: the bare run did not overflow"; fail=1; }
    [ "$traced" = "$bare" ] || { echo "FAIL: $mode: traced status $traced, bare $bare"; fail=1; }
    ending="signal SIGSEGV"
    [ "$bare" -eq 139 ] || ending=sanitizer
    if [ ! -e "$tmp/t.tlog" ]; then
        echo "FAIL: $mode: no log"; fail=1; continue
    fi
    "$dump" --summary "$tmp/t.tlog" >"$tmp/sum" 2>&1 || true
    grep -q '^end .*clean' "$tmp/sum" && grep -q "ending=$ending\$" "$tmp/sum" ||
        { echo "FAIL: $mode: the log is not whole, or does not end '$ending'"; cat "$tmp/sum"; fail=1; }
    "$dump" "$tmp/t.tlog" 2>/dev/null | grep -q 'mark text="overflow next"' ||
        { echo "FAIL: $mode: the mark before the overflow is not in the log"; fail=1; }
done
if [ -z "$runtime" ]; then
    # The sanitizer's runtime sets alternate stacks of its own.
    LD_PRELOAD= "$prog" has_alt >"$tmp/bare"
    LD_PRELOAD=$preload TRACE_OUTPUT="$tmp/h.tlog" "$prog" has_alt >"$tmp/traced"
    echo "bare: $(tr '\n' ' ' <"$tmp/bare")traced: $(tr '\n' ' ' <"$tmp/traced")"
    grep -q '^main altstack 0$' "$tmp/bare" && grep -q '^thread altstack 0$' "$tmp/bare" ||
        { echo "FAIL: the bare program has alternate stacks"; fail=1; }
    grep -q '^main altstack [1-9]' "$tmp/traced" && grep -q '^thread altstack [1-9]' "$tmp/traced" ||
        { echo "FAIL: a traced thread has no alternate stack"; fail=1; }
    LD_PRELOAD=$preload TRACE_OUTPUT="$tmp/m.tlog" "$prog" measure >"$tmp/measure"
    cat "$tmp/measure"
    "$dump" --summary "$tmp/m.tlog" 2>&1 | grep -q 'ending=signal SIGSEGV$' ||
        { echo "FAIL: measure: the log does not end 'signal SIGSEGV' (the program's stack replaced?)"; fail=1; }
    set -- $(cat "$tmp/measure")
    [ "$2" -eq -11 ] && [ "$4" -gt 0 ] && [ "$4" -le $(($6 / 2)) ] ||
        { echo "FAIL: measure: $*: more than half the alternate stack taken"; fail=1; }
fi
exit $fail
