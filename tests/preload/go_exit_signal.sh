#!/bin/sh
# tests/preload/go_exit_signal.sh LIB JOIN_SIGNAL_LIB TRACE_DUMP - a SIGTERM
# that lands on a Go program's thread while its exit() finishes the log
# kills it, with the log whole ("exit": END was written first), as bare it
# would have died of SIGTERM.  Go's handler runs first, restores SIG_DFL
# (ours stands in) and raises again; when that does not kill, it exits
# with status 2 (runtime.dieFromSignal).  Our handler deferred the signal
# to the interrupted ending, which never ran again: exit status 2 and no
# log.  libjoin_signal.so (tests/cuda) sends the signal at that moment.
# Exit 77 without a Go toolchain with cgo.
set -eu
lib=$1 join=$2 dump=$3
command -v go >/dev/null 2>&1 || { echo "SKIP: no go"; exit 77; }
[ "$(go env CGO_ENABLED 2>/dev/null)" = 1 ] || { echo "SKIP: go without cgo"; exit 77; }
src=$(cd "$(dirname "$0")" && pwd)/go_exit_signal/main.go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The build cache is go's own (a fresh one builds runtime/cgo: a minute).
[ -n "${HOME:-}" ] && [ -w "$HOME" ] || export GOCACHE="$tmp/cache"
(cd "$tmp" && CGO_ENABLED=1 go build -o prog "$src") ||
    { echo "SKIP: the cgo program does not build"; exit 77; }
fail=0
rc=0; "$tmp/prog" || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: bare exit $rc, expected 0"; fail=1; }
for sig in 15 2; do
    rc=0
    env JOIN_SIGNAL=$sig LD_PRELOAD="$join:$lib" TRACE_HOST_BUFFERS=1 \
        TRACE_OUTPUT="$tmp/t$sig.tlog" "$tmp/prog" 2>"$tmp/err" || rc=$?
    echo "signal $sig during exit's flush: exit status $rc"
    [ "$rc" -eq $((128 + sig)) ] ||
        { echo "FAIL: exit status $rc, expected death by signal $sig"; cat "$tmp/err"; fail=1; }
    if [ -f "$tmp/t$sig.tlog" ] && "$dump" --summary "$tmp/t$sig.tlog" >"$tmp/sum" 2>&1; then
        grep -q '^end .*clean' "$tmp/sum" && grep -q 'ending=exit' "$tmp/sum" ||
            { echo "FAIL: the log does not end clean with exit"; cat "$tmp/sum"; fail=1; }
    else
        echo "FAIL: no whole log"; cat "$tmp/sum" 2>/dev/null || true; fail=1
    fi
done
exit $fail
