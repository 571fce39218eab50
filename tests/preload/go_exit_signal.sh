#!/bin/sh
# tests/preload/go_exit_signal.sh LIB JOIN_SIGNAL_LIB EXIT_WRITE_SIGNAL_LIB TRACE_DUMP
# - a SIGTERM (or SIGINT) that lands on a Go program's thread while its
# exit() or _exit() finishes the log kills it, with the log whole ("exit",
# "_exit 0": END was written first), as bare it would have died of the
# signal.  Go's handler runs first, restores SIG_DFL (ours stands in) and
# raises again; when that does not kill, it exits with status 2
# (runtime.dieFromSignal).  Our handler noted the signal for the
# interrupted ending, which never ran again: exit status 2 and no log.
# libjoin_signal.so (tests/cuda) sends the signal as exit() wakes the
# flusher; libexit_write_signal.so at _exit()'s first write of the log.
# Exit 77 without a Go toolchain with cgo.
set -eu
lib=$1 join=$2 write_signal=$3 dump=$4
command -v go >/dev/null 2>&1 || { echo "SKIP: no go"; exit 77; }
[ "$(go env CGO_ENABLED 2>/dev/null)" = 1 ] || { echo "SKIP: go without cgo"; exit 77; }
src=$(cd "$(dirname "$0")" && pwd)/go_exit_signal/main.go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The build cache is go's own (a fresh one builds runtime/cgo: a minute).
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export GOCACHE="$tmp/cache"; fi
(cd "$tmp" && CGO_ENABLED=1 go build -o prog "$src") ||
    { echo "SKIP: the cgo program does not build"; exit 77; }
# The cases themselves are reraise_exit.sh's, with the Go program.
rc=0
sh "$(dirname "$0")/reraise_exit.sh" "$lib" "$tmp/prog" "$join" "$write_signal" "$dump" || rc=$?
exit $rc
