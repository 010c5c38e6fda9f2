#!/bin/bash
# The VM suite: runs every tests/vm/NN-*.sh in turn (as root, in the guest that
# `cargo xtask test` boots), unloading test modules between them, and ends with one
# "N passed, N failed" line. An argument keeps only the tests whose file name matches it (an extended regular
# expression, e.g. `kill9|churn`). TEST_TIMEOUT is the limit per test in seconds (default 300).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/kernel_log.sh
. "$here/kernel_log.sh"
filter=${1:-}
logs="$PHYTRACE_OUT/vm-tests"
rm -rf "$logs" && mkdir -p "$logs"
rm -f "$PHYTRACE_OUT/results.jsonl"
passed=0 failed=0 failures=()
unload_all() {
    for module in phy_sim ax88796b_rust ax88796b; do
        rmmod "$module" 2>/dev/null || true
    done
}
dmesg -c >/dev/null
for test in "$here"/[0-9][0-9]-*.sh; do
    name=$(basename "$test" .sh)
    [[ -n "$filter" && ! "$name" =~ $filter ]] && continue
    start=$(date +%s.%N)
    timeout --kill-after=5 "${TEST_TIMEOUT:-300}" bash "$test" >"$logs/$name.log" 2>&1
    status=$?
    secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    if pkill -9 -f "^$PHYTRACE_BIN " 2>/dev/null; then
        echo "$name left a phytrace process running" >>"$logs/$name.log"
        status=98
        # The killed process leaves its kprobe events defined: remove them for the next test.
        for _ in $(seq 50); do pgrep -f "^$PHYTRACE_BIN " >/dev/null || break; sleep 0.1; done
        grep -oE '^[pr][0-9]*:phytrace_[0-9]+/[^ ]+' /sys/kernel/tracing/kprobe_events |
            while read -r event; do
                echo "-:${event#*:}" >>/sys/kernel/tracing/kprobe_events || true
            done
    fi
    unload_all
    if [[ -n $(dmesg | kernel_trouble) ]]; then
        echo "kernel log after $name:" >>"$logs/$name.log"
        dmesg >>"$logs/$name.log"
        status=99
    fi
    dmesg -c >/dev/null
    # Parts a test skipped (it goes on with the rest) are said in its log as "SKIP: …".
    while read -r line; do echo "    $line"; done < <(grep -E '^SKIP' "$logs/$name.log")
    if [[ $status -eq 0 ]]; then
        passed=$((passed + 1))
        echo "ok      $name (${secs} s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED  $name (${secs} s, status $status)"
        # The failing check first: the state dumped after it would push it out of the tail.
        grep -E '(FAIL|error):' "$logs/$name.log" | head -n 5 | sed 's/^/    > /'
        sed 's/^/    | /' "$logs/$name.log" | tail -n 40
    fi
done
[[ ${#failures[@]} -gt 0 ]] && echo "failed: ${failures[*]}"
echo "vm: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
