#!/bin/bash
# The headless demo on the simulated PHYs (`cargo xtask demo --headless --sim`): phytrace records while the driver loads
# late, links come up and the AX88772A's cable is unplugged and replugged, once with the LPA
# quirk. The capture must show the NOLINK reset path and the LPA workaround at work.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
mark_dmesg demo
cap=$PHYTRACE_OUT/demo-test.ptrace
out=$(bash "$PHYTRACE_ROOT/scenarios/demo.sh" MODE=headless HARDWARE=sim CYCLES=3 PERIOD=1.5 OUT="$cap" 2>&1) ||
    { echo "$out"; fail "the headless demo failed"; }
echo "$out" | tail -n 25
grep -q "link_change_notify  NOLINK" <<<"$out" || fail "the demo's summary shows no NOLINK reset"
events_json "$cap"
capture_check "$cap.json" attached ax88796b_rust -- nolink-reset phy_sim-0:01 -- \
    lpa-quirk phy_sim-0:01 100 full -- attribution -- no-loss
assert_clean_dmesg demo
