#!/bin/bash
# `phytrace check -- COMMAND` end to end: a plug/unplug scenario recorded on the Rust driver
# passes the shipped contract (specs/ax88796b.spec); the same scenario with an MDIO write error
# injected into the NOLINK re-init fails it, naming the rule and showing soft_reset's -EIO, and
# writes a JUnit report that says so.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
unload_all
spec=$PHYTRACE_ROOT/specs/ax88796b.spec
scenario=$PHYTRACE_ROOT/tests/vm/check_scenario.sh

log "clean run"
load_driver rust
out=$("$PHYTRACE_BIN" check --spec "$spec" -o "$PHYTRACE_OUT/check-clean.ptrace" \
    --module ax88796b_rust -- bash "$scenario" 2>&1) || { echo "$out"; fail "the clean scenario failed the spec"; }
echo "$out" | grep -v '^\[check_scenario\]'
grep -q "9 rules, 0 failed" <<<"$out" || fail "expected all 9 rules to hold"
ok "clean scenario: every rule holds"
unload_all

log "run with an injected BMCR write error"
load_driver rust
set +e
out=$(INJECT=1 "$PHYTRACE_BIN" check --spec "$spec" --junit "$PHYTRACE_OUT/check.xml" \
    --module ax88796b_rust -- bash "$scenario" 2>&1)
status=$?
set -e
echo "$out" | grep -v '^\[check_scenario\]'
expect_eq "exit status with a violated rule" 1 "$status"
grep -q 'FAIL "no callback returns an error"' <<<"$out" || fail "the report does not name the rule"
grep -qE '>.*← soft_reset .*ret=-5 \(EIO\)' <<<"$out" || fail "the report does not show soft_reset returning -EIO"
grep -q 'soft_reset → write BMCR      failed -5' <<<"$out" || fail "the report does not show the failed write"
grep -q '<failure' "$PHYTRACE_OUT/check.xml" || fail "the JUnit report has no failure"
ok "injected error: rule named, offending events shown decoded, JUnit failure written"
# phylib logs no warning for a failed re-init inside link_change_notify (its result is ignored).
assert_clean_dmesg check
