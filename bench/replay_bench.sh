#!/bin/sh
# replay_bench.sh - trace-replay throughput on synthetic logs, one core.
#
#   bench/replay_bench.sh [BUILD_DIR] [EVENTS]
#
# BUILD_DIR defaults to build (it needs bin/trace-replay and
# bench/replay-bench-gen); EVENTS to 10 million.  Writes the logs under
# $TMPDIR, prints one line per measurement:
#   model-free checks      (--model none)        aim: >= 10 M events/s
#   cupy model, incremental (--model cupy)       aim: >= 3 M events/s
#   cupy model, --paranoid  (100 k events: a full audit per operation)
#   explore, 1 M events    (--model cupy5, a clean log walked end to end)
#                                                 aim: < 10 s
#   the reader alone (trace-dump --summary) on the same 10 M events, and
#   model-free replay's share of its speed        aim: >= 0.5
#   peak memory of check and of minimize (--model cupy5) on 1 M events that
#   end with a double free, and their ratio       aim: a small multiple
# Times are user CPU seconds (getrusage of the child), best of 3, pinned to
# core 0 with taskset when there is one: on a shared machine wall time
# mostly measures the neighbours.
set -eu
build=${1:-build}
events=${2:-10000000}
tmp=${TMPDIR:-/tmp}/replay_bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
replay=$build/bin/trace-replay
gen=$build/bench/replay-bench-gen
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"

"$gen" "$tmp/big.log" "$events" 2>/dev/null
"$gen" "$tmp/explore.log" 1000000 --big-garbage 2>/dev/null
"$gen" "$tmp/small.log" 100000 2>/dev/null
"$gen" "$tmp/double.log" 1000000 --double-free 2>/dev/null

# Best-of-3 user time of a command, in seconds.
best() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
best = None
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    best = t if best is None or t < best else best
print("%.3f" % best)
PY
}

rate() {  # name seconds events
    python3 -c "import sys; n, s, e = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]); \
print('%-34s %8.3f s  %6.2f M events/s' % (n, s, e / s / 1e6 if s else 0))" "$1" "$2" "$3"
}

n=$(( events + 1 ))
rate "model-free checks (--model none)" "$(best $pin "$replay" check "$tmp/big.log" --model none)" "$n"
rate "cupy model, incremental checks" "$(best $pin "$replay" check "$tmp/big.log" --model cupy)" "$n"
rate "cupy model, --paranoid (100 k)" "$(best $pin "$replay" check "$tmp/small.log" --model cupy --paranoid)" 100001
t=$(best $pin "$replay" explore "$tmp/explore.log" --model cupy5)
printf '%-34s %8.3f s  (1 M events, aim < 10 s)\n' "explore --model cupy5" "$t"
r=$(best $pin "$build/bin/trace-dump" --summary "$tmp/big.log")
m=$(best $pin "$replay" check "$tmp/big.log" --model none)
rate "the reader alone (trace-dump --summary)" "$r" "$n"
python3 -c "import sys; print('%-34s %8.2f  (aim >= 0.5)' % ('model-free speed / reader speed', float(sys.argv[1]) / float(sys.argv[2])))" "$r" "$m"

# Peak resident memory (KiB) of one run.
peak() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
c=$(peak $pin "$replay" check "$tmp/double.log" --model cupy5)
mm=$(peak $pin "$replay" minimize "$tmp/double.log" --model cupy5 -o "$tmp/min.log")
python3 -c "import sys; c, m = int(sys.argv[1]), int(sys.argv[2]); \
print('%-34s %8.1f MiB\n%-34s %8.1f MiB  (%.1f x check)' % ('check, 1 M events, peak memory', c / 1024, \
'minimize, same log, peak memory', m / 1024, m / c))" "$c" "$mm"
