#!/bin/bash
# `phytrace diff` of the C and the Rust driver on the same scenario (check_scenario.sh): the
# MDIO sequences per PHY are aligned and compared. Both drivers implement the same behaviour, so
# what they write to all three PHYs must be equal (timing ignored). Reads are compared too, for
# the log only: how often phylib polls a PHY while the scenario runs depends on timing. First with
# the Rust symbol probes (`--callback-probes symbol`: the C driver's callbacks unseen), then with
# callbacks at phylib's call sites (the default), which see both drivers' callbacks: each write
# must also be made in the same callback (the comparison callback by callback).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
for driver in c rust; do
    unload_all
    load_driver "$driver"
    "$PHYTRACE_BIN" record --callback-probes symbol -o "$PHYTRACE_OUT/diff-$driver.ptrace" -- \
        bash "$PHYTRACE_ROOT/tests/vm/check_scenario.sh" >/dev/null 2>&1 || fail "recording with the $driver driver failed"
done
set +e
"$PHYTRACE_BIN" diff "$PHYTRACE_OUT/diff-c.ptrace" "$PHYTRACE_OUT/diff-rust.ptrace" || true
"$PHYTRACE_BIN" diff --ignore-reads "$PHYTRACE_OUT/diff-c.ptrace" "$PHYTRACE_OUT/diff-rust.ptrace" \
    >"$PHYTRACE_OUT/diff.txt" 2>&1
status=$?
set -e
cat "$PHYTRACE_OUT/diff.txt"
expect_eq "diff status (0: equal)" 0 "$status"
grep -q "equal: 3 PHYs" "$PHYTRACE_OUT/diff.txt" || fail "not all three PHYs compared equal"
"$PHYTRACE_BIN" diff "$PHYTRACE_OUT/diff-rust.ptrace" "$PHYTRACE_OUT/diff-rust.ptrace" >/dev/null ||
    fail "a capture differs from itself"
ok "C and Rust drivers: equal MDIO writes on all three PHYs; a capture equals itself"

for driver in c rust; do
    unload_all
    load_driver "$driver"
    "$PHYTRACE_BIN" record -o "$PHYTRACE_OUT/diff-$driver-callsite.ptrace" -- \
        bash "$PHYTRACE_ROOT/tests/vm/check_scenario.sh" >/dev/null 2>&1 || fail "recording at call sites with the $driver driver failed"
done
set +e
"$PHYTRACE_BIN" diff --ignore-reads "$PHYTRACE_OUT/diff-c-callsite.ptrace" "$PHYTRACE_OUT/diff-rust-callsite.ptrace" \
    >"$PHYTRACE_OUT/diff-callsite.txt" 2>&1
status=$?
set -e
cat "$PHYTRACE_OUT/diff-callsite.txt"
expect_eq "diff status at call sites (0: equal)" 0 "$status"
expect_eq "PHYs whose writes were each made in the same callback" 3 \
    "$(grep -c 'each made in the same callback' "$PHYTRACE_OUT/diff-callsite.txt")"
ok "C and Rust drivers at call sites: equal MDIO writes, callback by callback, on all three PHYs"
