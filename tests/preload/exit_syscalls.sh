#!/bin/sh
# tests/preload/exit_syscalls.sh LIB PROG TRACE_DUMP - what the exit of a
# process that recorded an event costs beyond its log (strace -f of PROG,
# one large block under TRACE_HOST_BUFFERS=1): the flusher writes the log's
# end through its helper and is not joined, nor is the helper: exit_group
# ends both.  Before, the exiting thread woke the flusher, which woke the
# helper to quit and joined it, then returned to be joined itself: two
# thread exits (glibc's madvise of each stack, then exit), two more round
# trips between threads, about 25 us of CPU a process on the 2-core VM.
# The log must still be whole and say `exit`.  Exit 77 without strace.
set -eu
lib=$1 prog=$2 dump=$3
command -v strace >/dev/null 2>&1 || { echo "SKIP: no strace"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strace -f -o "$tmp/st" -E LD_PRELOAD="$lib" -E TRACE_HOST_BUFFERS=1 \
    -E TRACE_OUTPUT="$tmp/t.tlog" "$prog"
exits=$(grep -c ' exit(' "$tmp/st" || true)
advised=$(grep -c 'MADV_DONTNEED' "$tmp/st" || true)
echo "threads ending on their own: $exits; stacks given back: $advised"
"$dump" --summary "$tmp/t.tlog" >"$tmp/sum"
fail=0
grep -q '^end .*clean' "$tmp/sum" || { echo "FAIL: the log is not whole"; cat "$tmp/sum"; fail=1; }
grep -q 'ending=exit' "$tmp/sum" || { echo "FAIL: the log does not end with exit"; cat "$tmp/sum"; fail=1; }
[ "$exits" -eq 0 ] || { echo "FAIL: $exits of our threads ended before exit_group (joined at exit)"; fail=1; }
[ "$advised" -eq 0 ] || { echo "FAIL: $advised thread stacks given back at exit"; fail=1; }
exit $fail
