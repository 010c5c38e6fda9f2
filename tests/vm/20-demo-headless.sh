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
for expect in 'attached("ax88796b_rust")' 'lpa_quirk("phy_sim-0"; 1; 100; "full")' attribution no_loss; do
    capture_expect "$cap.json" "$expect"
done
check_rules "$cap" <<EOF
rule "NOLINK seen" for phy "phy_sim-0:01": count enter link_change_notify while state NOLINK at least 1
rule "NOLINK resets, clearing BMCR first" for phy "phy_sim-0:01": after enter link_change_notify while state NOLINK: enter soft_reset inside link_change_notify then write BMCR = 0 inside soft_reset within 1s
EOF
assert_clean_dmesg demo
