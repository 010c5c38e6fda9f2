#!/bin/bash
# Without privileges, doctor names the missing capabilities and exits 3 — no backtrace.
set -uo pipefail
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$PHYTRACE_BIN" doctor 2>&1)
status=$?
echo "$out"
set -e
[[ $status -eq 3 ]] || { echo "expected exit 3, got $status"; exit 1; }
grep -q '^\[FAIL\] privileges .*lacks CAP_BPF, CAP_PERFMON and CAP_DAC_OVERRIDE' <<<"$out"
grep -q 'fix: run as root' <<<"$out"
! grep -qi 'panicked' <<<"$out"
