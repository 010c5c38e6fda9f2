#!/bin/bash
# The dongle scenario every kernel records (dongle_lib.sh: dongle_scenario; on Debian's stock
# 7.3 tests/stock/51-dongle-record.sh), here on ours with the Rust PHY driver and callbacks at
# phylib's call sites, as there: plug-in with `record` running, link up, cable flap, partner
# change (renegotiated to 10/full), link down, with the same checks (dongle_scenario_check).
# The capture is kept as twin-dongle-ours for the host's cross-kernel comparison
# (xtask/src/twin.rs), which states how the two kernels differ.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
dongle_test_begin
mark_dmesg twin
dongle_modules_load rust
cap=$PHYTRACE_OUT/twin-dongle-${PHYTRACE_VM_KERNEL:-ours}.ptrace
rm -f "$cap"*
dongle_scenario "$cap" --callback-probes callsite
dongle_scenario_check "$cap"
expect_eq "requests the emulator did not know" 0 "$(dongle_status '["unknown"]')"
dongle_stop
dongle_modules_unload
assert_clean_dmesg "dongle twin"
