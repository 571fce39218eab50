#!/bin/sh
# tests/preload/reraise_exit.sh LIB PROG JOIN_SIGNAL_LIB EXIT_WRITE_SIGNAL_LIB TRACE_DUMP
# - go_exit_signal.sh's three cases without Go: reraise_exit.c's handler
# does what Go's runtime does with a signal (SIG_DFL back, raise twice,
# then status 2 by the raw system call).  A SIGTERM (or SIGINT) that lands
# while exit() or _exit() finishes the log must kill the process, the log
# whole ("exit", "_exit 0": END was written first).
set -eu
lib=$1 prog=$2 join=$3 write_signal=$4 dump=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for how in exit _exit; do
    rc=0; "$prog" "$how" || rc=$?
    [ "$rc" -eq 0 ] || { echo "FAIL: bare $how: exit $rc, expected 0"; fail=1; }
done
# run NAME SIG ENDING PRELOAD ARG
run() {
    rc=0
    env JOIN_SIGNAL="$2" LD_PRELOAD="$4:$lib" TRACE_HOST_BUFFERS=1 \
        TRACE_OUTPUT="$tmp/$1.tlog" "$prog" "$5" 2>"$tmp/err" || rc=$?
    echo "$1: exit status $rc"
    [ "$rc" -eq $((128 + $2)) ] ||
        { echo "FAIL: $1: exit status $rc, expected death by signal $2"; cat "$tmp/err"; fail=1; }
    if [ -s "$tmp/$1.tlog" ] && "$dump" --summary "$tmp/$1.tlog" >"$tmp/sum" 2>&1; then
        if ! grep -q '^end .*clean' "$tmp/sum" || ! grep -q "ending=$3\$" "$tmp/sum"; then
            echo "FAIL: $1: the log does not end clean with $3"; cat "$tmp/sum"; fail=1
        fi
    else
        echo "FAIL: $1: no whole log"; cat "$tmp/sum" 2>/dev/null || true; fail=1
    fi
}
run "SIGTERM during exit's flush" 15 exit "$join" exit
run "SIGINT during exit's flush" 2 exit "$join" exit
run "SIGTERM during _exit's write" 15 "_exit 0" "$write_signal" _exit
exit $fail
