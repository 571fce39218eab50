#!/bin/sh
# tests/preload/start_syscalls.sh LIB - what a traced process that records
# nothing asks of the kernel at start (strace of /bin/true): the handlers
# for the ending signals are set with one read of each signal's action,
# not two (the action we set is read back once, for every signal: glibc
# gives each the same restorer), and the pid is asked once for them all,
# not once a signal; and the main thread's stack comes from our own read of
# /proc/self/maps, not pthread_getattr_np's (which asks sched_getaffinity).
# Before: 44 reads for 22 sets, 23 getpid, 1 sched_getaffinity (205 calls
# in all, 166 after).  The parent's /proc/PID/stat (its terminal) is read
# only when stderr is a terminal, the only place a line of ours could go:
# with stderr on a file or /dev/null it was read all the same (4 calls),
# and /proc/self/exe is read once, not twice (the header's and the
# executable module's).  A libunwind the program loaded already is looked
# for among the loaded objects' names before asking the loader, whose
# dlopen(RTLD_NOLOAD) of a bare name it does not find searches the file
# system: ld.so.cache and the system's libunwind.so.8 opened and let go
# (9 calls).  Exit 77 without strace.
set -eu
lib=$1
command -v strace >/dev/null 2>&1 || { echo "SKIP: no strace"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strace -f -o "$tmp/st" -E LD_PRELOAD="$lib" -E TRACE_OUTPUT="$tmp/t-%p.tlog" /bin/true 2>"$tmp/err"
strace -f -o "$tmp/st2" -E LD_PRELOAD="$lib" -E TRACE_OUTPUT="$tmp/t-%p.tlog" /bin/true 2>/dev/null
reads=$(grep -c 'rt_sigaction([A-Z0-9]*, NULL' "$tmp/st" || true)
sets=$(grep -c 'rt_sigaction([A-Z0-9]*, {' "$tmp/st" || true)
pids=$(grep -c ' getpid()' "$tmp/st" || true)
affinity=$(grep -c 'sched_getaffinity' "$tmp/st" || true)
parent=$(cat "$tmp/st" "$tmp/st2" | grep -c 'open.*"/proc/[0-9]*/stat"' || true)
exe=$(grep -c 'readlink.*"/proc/self/exe"' "$tmp/st" || true)
# The system's libunwind, opened to be loaded only where the build has no
# copy of its own beside libtrace.so.
unwind=$(grep -c 'open.*/libunwind\.so\.8"' "$tmp/st" || true)
unwind_max=1
[ -e "$(dirname "$lib")/libgputrace-unwind.so.8" ] && unwind_max=0
echo "rt_sigaction: $reads reads, $sets sets; getpid: $pids; sched_getaffinity: $affinity"
echo "parent's stat read (stderr a file, /dev/null): $parent; /proc/self/exe read: $exe"
echo "the system's libunwind.so.8 opened: $unwind (at most $unwind_max)"
# A libunwind the program loaded is still found, by its DT_SONAME where its
# file has another name (libunwind.so.8.0.1): ours is then not opened.
resident=$(ldconfig -p 2>/dev/null | sed -n 's/.*libunwind\.so\.8 .*=> //p' | head -n 1)
own=0
if [ -n "$resident" ] && [ -e "$resident" ]; then
    resident=$(readlink -f "$resident")
    strace -f -o "$tmp/st3" -E LD_PRELOAD="$resident:$lib" -E TRACE_OUTPUT="$tmp/t-%p.tlog" /bin/true 2>/dev/null
    own=$(grep -c 'open.*gputrace-unwind' "$tmp/st3" || true)
    echo "with $resident loaded first, our copy opened: $own"
fi
fail=0
[ "$sets" -ge 20 ] || { echo "FAIL: $sets handlers set, expected one per ending signal"; fail=1; }
[ "$reads" -le $((sets + 1)) ] || { echo "FAIL: $reads reads of actions for $sets sets"; fail=1; }
[ "$pids" -le 8 ] || { echo "FAIL: $pids getpid calls"; fail=1; }
[ "$affinity" -eq 0 ] || { echo "FAIL: sched_getaffinity at start (pthread_getattr_np)"; fail=1; }
[ "$parent" -eq 0 ] || { echo "FAIL: the parent's terminal asked with stderr not a terminal"; fail=1; }
[ "$exe" -le 1 ] || { echo "FAIL: /proc/self/exe read $exe times"; fail=1; }
[ "$unwind" -le "$unwind_max" ] || { echo "FAIL: libunwind.so.8 searched for ($unwind opens)"; fail=1; }
[ "$own" -eq 0 ] || { echo "FAIL: the program's libunwind was not found loaded"; fail=1; }
exit $fail
