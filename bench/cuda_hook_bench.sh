#!/bin/sh
# Added cost per traced cudaMalloc+cudaFree pair (32-frame stack) against the
# same program untraced, and heaptrack's added cost per malloc+free pair.
#
#   bench/cuda_hook_bench.sh [BUILD_DIR] [PAIRS]
#
# BUILD_DIR has build/lib/libtrace.so and the CUDA test doubles
# (tests/cuda/doubles).  Each variant runs 3 times; the median is reported.
# Timings on a shared machine are noisy: compare ratios, not absolutes.
set -eu
build=$(cd "${1:-build}" && pwd)
pairs=${2:-200000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

doubles=$build/tests/cuda/doubles
[ -e "$doubles/libcudart.so.13" ] || { echo "no CUDA doubles in $doubles (build first)"; exit 1; }
cc -O2 -g -fno-omit-frame-pointer -o "$work/bench" "$here/cuda_hook_bench.c" \
   -I"${CUDA_HOME:-/usr/local/cuda}/include" "$doubles/libcudart.so.13" -Wl,-rpath,"$doubles"
export LD_LIBRARY_PATH=$doubles

median() { sort -n | sed -n 2p; }

# run VARIANT_COMMAND...: 3 runs, median ns/pair
measure() {
    for i in 1 2 3; do
        "$@" | awk '/ns_per_pair/ { print $2 }'
    done | median
}

cd "$work"
base_cuda=$(measure ./bench cuda "$pairs")
traced_cuda=$(measure env LD_PRELOAD="$build/lib/libtrace.so" TRACE_QUIET=1 \
              TRACE_OUTPUT="$work/t-%p.tlog" ./bench cuda "$pairs")
base_malloc=$(measure ./bench malloc "$pairs")
heaptrack_malloc=
if command -v heaptrack >/dev/null 2>&1; then
    heaptrack_malloc=$(measure heaptrack -o "$work/ht" ./bench malloc "$pairs" 2>/dev/null)
fi

awk -v bc="$base_cuda" -v tc="$traced_cuda" -v bm="$base_malloc" -v hm="$heaptrack_malloc" \
    -v n="$pairs" 'BEGIN {
    printf "%-34s %12s %12s %8s\n", "pairs of " n " (median of 3)", "ns/pair", "added ns", "ratio"
    printf "%-34s %12.1f %12s %8s\n", "cudaMalloc+cudaFree untraced", bc, "", ""
    printf "%-34s %12.1f %12.1f %8.1f\n", "cudaMalloc+cudaFree libtrace.so", tc, tc - bc, tc / bc
    printf "%-34s %12.1f %12s %8s\n", "malloc+free untraced", bm, "", ""
    if (hm != "")
        printf "%-34s %12.1f %12.1f %8.1f\n", "malloc+free heaptrack", hm, hm - bm, hm / bm
    verdict = (tc - bc <= 400) ? "PASS" : "FAIL"
    printf "added cost per traced pair: %.0f ns (aim: <= 400 ns, issue 15) %s\n", tc - bc, verdict
}'
