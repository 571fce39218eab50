# shellcheck shell=sh
# scripts/lib/repeat.sh - scripts/test --repeat N: the whole suite N times in a
# row, to find tests that depend on timing, scheduling, addresses or luck.
#
# Every run goes on whatever happens: the point is to count.  Each run keeps
# its ctest console output and log in DIR/repeat/run-K/, and the output of
# each test that failed in it in DIR/repeat/run-K/TEST.out; the end prints, per
# test, how many runs it failed and those files.  With --load, busy loops (one
# per core unless a number is given) run beside the suite at the suite's own
# priority: a hog at nice 19 takes only the CPU nobody wants, which is not the
# busy machine a flaky test fails on.

# The output of the test named $2, out of ctest's LastTest.log $1.
repeat_test_output() {
    awk -v name="$2" '
        /^[0-9]+\/[0-9]+ Testing: / { t = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", t); on = (t == name) }
        on { print }
        on && index($0, "\"" name "\" end time:") == 1 { on = 0 }
    ' "$1"
}

repeat_hogs=
repeat_stop_load() {
    for p in $repeat_hogs; do kill "$p" 2>/dev/null || :; done
    repeat_hogs=
}

# repeat_suite DIR N LOAD [ctest-args...]: LOAD is 0 (none) or a number of busy loops.
repeat_suite() {
    dir=$1 runs=$2 load=$3; shift 3
    out=$dir/repeat
    rm -rf "$out"
    mkdir -p "$out"
    trap 'repeat_stop_load' EXIT
    trap 'repeat_stop_load; exit 130' INT TERM
    i=0
    while [ "$i" -lt "$load" ]; do
        sh -c 'while :; do :; done' &
        repeat_hogs="$repeat_hogs $!"
        i=$((i + 1))
    done
    [ "$load" -gt 0 ] && echo "repeat: $load busy loops beside the suite (pids$repeat_hogs)"
    failed_runs=0
    k=1
    while [ "$k" -le "$runs" ]; do
        run=$out/run-$k
        mkdir -p "$run"
        start=$(date +%s)
        load_before=$(cut -d' ' -f1 /proc/loadavg)
        # -j2 as CI runs on 2 cores; arguments after -- come last and win.
        if ctest --test-dir "$dir" --output-on-failure -j2 "$@" >"$run/ctest.out" 2>&1; then
            status=passed
        else
            status=FAILED
            failed_runs=$((failed_runs + 1))
        fi
        cp "$dir/Testing/Temporary/LastTest.log" "$run/LastTest.log" 2>/dev/null || :
        : >"$run/failed"
        if [ "$status" = FAILED ] && [ -f "$dir/Testing/Temporary/LastTestsFailed.log" ]; then
            # Lines NUMBER:NAME.
            cut -d: -f2- "$dir/Testing/Temporary/LastTestsFailed.log" >"$run/failed"
            while IFS= read -r t; do
                repeat_test_output "$run/LastTest.log" "$t" >"$run/$t.out"
            done <"$run/failed"
        fi
        summary=$(grep -E '^[0-9]+% tests passed' "$run/ctest.out" || echo "ctest said nothing")
        echo "repeat: run $k of $runs $status in $(( $(date +%s) - start )) s" \
             "(load $load_before -> $(cut -d' ' -f1 /proc/loadavg)): $summary"
        if [ "$status" = FAILED ] && [ ! -s "$run/failed" ]; then
            echo "repeat:   ctest failed without naming a test: see $run/ctest.out"
        fi
        while IFS= read -r t; do echo "repeat:   $t failed: $run/$t.out"; done <"$run/failed"
        k=$((k + 1))
    done
    repeat_stop_load

    echo
    beside=
    [ "$load" -gt 0 ] && beside=" with $load busy loops beside"
    echo "repeat: $((runs - failed_runs)) of $runs runs passed$beside${*:+ (ctest $*)}"
    # Per test: the number of runs it failed, then the files.
    for f in "$out"/run-*/failed; do cat "$f"; done | sort | uniq -c | sort -rn |
    while read -r n t; do
        files=
        for f in "$out"/run-*/failed; do
            grep -qxF "$t" "$f" && files="$files $(dirname "$f")/$t.out"
        done
        echo "repeat: $t failed $n of $runs runs:$files"
    done
    [ "$failed_runs" -eq 0 ]
}
