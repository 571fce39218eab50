#!/bin/sh
# Writer and reader speed, and compressed size, of the log format on one core.
#
#   bench/format_bench.sh [EVENTS [ZSTD_LEVEL]]
#   bench/format_bench.sh encode|decode [EVENTS [RUNS]]   (one phase alone)
#
# Builds format-bench in build-bench/ (Release) unless FORMAT_BENCH names a
# built one, then runs it pinned to CPU 0.  Aims (issue 15): writer >= 25 M
# events/s, reader >= 40 M events/s.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
    encode|decode) phase=$1; shift ;;
    *) phase= ;;
esac
events=${1:-4000000}
level=${2:-1}
bench=${FORMAT_BENCH:-}
if [ -z "$bench" ]; then
    build="$here/build-bench"
    cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" --target format-bench -j2 >/dev/null
    bench="$build/bench/format-bench"
fi
echo "format-bench on CPU 0 of $(nproc) (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "$phase" ]; then
    exec taskset -c 0 "$bench" "$phase" "${1:-1000000}" "${2:-5}"
fi
exec taskset -c 0 "$bench" "$events" "$level"
