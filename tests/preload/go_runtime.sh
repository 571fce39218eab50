#!/bin/sh
# tests/preload/go_runtime.sh LIB TRACE_DUMP - a cgo program
# (go_runtime/main.go: goroutines, C threads calling Go, os/signal,
# recovered nil dereferences, children that panic, crash in C, die of
# SIGTERM, SIGPIPE, abort) prints the same, and every process ends the
# same, bare and under the preload with TRACE_HOST_BUFFERS=1.  The logs
# are readable; a child killed by a signal has a whole one that says so.
# A Go program that ends by returning from main, os.Exit or a panic ends
# by the raw exit_group system call, which no preload sees: its log has
# no END (docs/guarantees.md), and is not asked for one.  Exit 77 without
# a Go toolchain with cgo.
set -eu
lib=$1 dump=$2
command -v go >/dev/null 2>&1 || { echo "SKIP: no go"; exit 77; }
[ "$(go env CGO_ENABLED 2>/dev/null)" = 1 ] || { echo "SKIP: go without cgo"; exit 77; }
src=$(cd "$(dirname "$0")" && pwd)/go_runtime/main.go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export GOCACHE="$tmp/cache"; fi
(cd "$tmp" && CGO_ENABLED=1 go build -o prog "$src") ||
    { echo "SKIP: the cgo program does not build"; exit 77; }
# Addresses differ from run to run (ASLR).
norm() { sed -E 's/0x[0-9a-f]+/0xN/g' "$1"; }
rc=0; "$tmp/prog" >"$tmp/bare.out" 2>"$tmp/bare.err" || rc=$?
mkdir "$tmp/logs"
trc=0; env LD_PRELOAD="$lib" TRACE_HOST_BUFFERS=1 TRACE_OUTPUT="$tmp/logs/t-%p.tlog" \
    "$tmp/prog" >"$tmp/traced.out" 2>"$tmp/traced.err" || trc=$?
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: bare exit $rc"; cat "$tmp/bare.err"; fail=1; }
[ "$trc" -eq "$rc" ] || { echo "FAIL: traced exit $trc, bare $rc"; cat "$tmp/traced.err"; fail=1; }
norm "$tmp/bare.out" >"$tmp/b"; norm "$tmp/traced.out" >"$tmp/t"
cmp -s "$tmp/b" "$tmp/t" || { echo "FAIL: stdout differs"; diff "$tmp/b" "$tmp/t" || true; fail=1; }
norm "$tmp/bare.err" >"$tmp/b"; norm "$tmp/traced.err" >"$tmp/t"
cmp -s "$tmp/b" "$tmp/t" || { echo "FAIL: stderr differs"; diff "$tmp/b" "$tmp/t" || true; fail=1; }
grep -q '^all done' "$tmp/traced.out" || { echo "FAIL: traced run did not finish"; fail=1; }
logs=0 whole=0
for log in "$tmp"/logs/*.tlog; do
    [ -e "$log" ] || continue
    logs=$((logs + 1))
    r=0; "$dump" --summary "$log" >"$tmp/sum" 2>&1 || r=$?
    if grep -q '^end .*clean' "$tmp/sum"; then
        whole=$((whole + 1))
    elif [ "$r" -ne 1 ] || ! grep -q 'without an END record' "$tmp/sum"; then
        echo "FAIL: $(basename "$log") is damaged"; cat "$tmp/sum"; fail=1
    fi
done
sigterm=0 sigabrt=0
for log in "$tmp"/logs/*.tlog; do
    [ -e "$log" ] || continue
    s=$("$dump" --summary "$log" 2>/dev/null || true)
    case $s in *"ending=signal SIGTERM"*) sigterm=$((sigterm + 1)) ;; esac
    case $s in *"ending=signal SIGABRT"*) sigabrt=$((sigabrt + 1)) ;; esac
done
echo "logs $logs, whole $whole; children dead of SIGTERM $sigterm, of SIGABRT $sigabrt"
grep 'child:' "$tmp/traced.out" | sed -E 's/ out=.*//'
[ "$sigterm" -eq 1 ] || { echo "FAIL: the child killed by SIGTERM has no whole log saying so"; fail=1; }
[ "$sigabrt" -eq 1 ] || { echo "FAIL: the child Go crashed with SIGABRT has no whole log saying so"; fail=1; }
exit $fail
