#!/bin/bash
# The suite for Debian's stock kernel (`cargo xtask vm --kernel stock`, docs/kernels.md): runs
# every tests/stock/NN-*.sh in turn (as root, in the guest) and ends with one
# "N passed, N failed, N skipped" line. A test that cannot run on this kernel exits 77 after a
# line "SKIP: why", which is printed here. An argument keeps only the tests whose file name
# matches it (an extended regular expression). The helpers are the VM suite's (tests/vm/*.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/kernel_log.sh
. "$here/../vm/kernel_log.sh"
filter=${1:-}
logs="$PHYTRACE_OUT/stock-tests"
rm -rf "$logs" && mkdir -p "$logs"
passed=0 failed=0 skipped=0 failures=()
dmesg -c >/dev/null
echo "kernel: $(uname -r) ($(cut -d' ' -f1 /proc/uptime) s after boot)"
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
    fi
    if [[ -n $(dmesg | kernel_trouble) ]]; then
        echo "kernel log after $name:" >>"$logs/$name.log"
        dmesg >>"$logs/$name.log"
        status=99
    fi
    dmesg -c >/dev/null
    # Parts a test skipped (it goes on with the rest) are said in its log as "SKIP: …".
    while read -r line; do echo "    $line"; done < <(grep -E '^SKIP' "$logs/$name.log" | grep -v '^SKIP: test:')
    if [[ $status -eq 0 ]]; then
        passed=$((passed + 1))
        echo "ok      $name (${secs} s)"
    elif [[ $status -eq 77 ]]; then
        skipped=$((skipped + 1))
        echo "skip    $name (${secs} s): $(grep -m1 '^SKIP: test:' "$logs/$name.log" | cut -d' ' -f3-)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED  $name (${secs} s, status $status)"
        grep -E '(FAIL|error):' "$logs/$name.log" | head -n 5 | sed 's/^/    > /'
        sed 's/^/    | /' "$logs/$name.log" | tail -n 40
    fi
done
[[ ${#failures[@]} -gt 0 ]] && echo "failed: ${failures[*]}"
echo "${PHYTRACE_VM_KERNEL:-stock}: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
