#!/bin/bash
# The VM suite: runs every tests/vm/NN-*.sh in turn (as root, in the guest that
# `cargo xtask test` boots), unloading test modules between them, and ends with one
# "N passed, N failed" line. An argument keeps only the tests whose file name contains it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
filter=${1:-}
logs="$PHYTRACE_OUT/vm-tests"
rm -rf "$logs" && mkdir -p "$logs"
passed=0 failed=0 failures=()
unload_all() {
    for module in phy_sim ax88796b_rust ax88796b; do
        rmmod "$module" 2>/dev/null || true
    done
}
dmesg -c >/dev/null
for test in "$here"/[0-9][0-9]-*.sh; do
    name=$(basename "$test" .sh)
    [[ -n "$filter" && "$name" != *"$filter"* ]] && continue
    start=$(date +%s.%N)
    timeout --kill-after=5 300 bash "$test" >"$logs/$name.log" 2>&1
    status=$?
    secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    unload_all
    if dmesg | grep -qE 'BUG:|WARNING:|Oops|general protection|Call Trace'; then
        echo "kernel log after $name:" >>"$logs/$name.log"
        dmesg >>"$logs/$name.log"
        status=99
    fi
    dmesg -c >/dev/null
    if [[ $status -eq 0 ]]; then
        passed=$((passed + 1))
        echo "ok      $name (${secs} s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED  $name (${secs} s, status $status)"
        sed 's/^/    | /' "$logs/$name.log" | tail -n 40
    fi
done
[[ ${#failures[@]} -gt 0 ]] && echo "failed: ${failures[*]}"
echo "vm: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
