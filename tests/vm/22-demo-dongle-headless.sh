#!/bin/bash
# The headless dongle demo (`cargo xtask demo --headless`, the default hardware): phytrace
# records while the emulated AX88772A is plugged in (asix by its USB id, the Rust PHY driver by
# its mdio: alias), the link comes up, ping goes through and the cable is pulled and put back,
# twice (the second time after the partner dropped to 10/half). The capture must show the
# dongle's PHY on its usb-… bus, the NOLINK re-init over USB, and the carrier going down and up.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
trap_cleanup
cleanup_also 'dongle_stop; dongle_modules_unload'
[[ -x $DONGLE_BIN ]] || fail "$DONGLE_BIN missing: cargo build -p ax88772a-emulator"
mark_dmesg demo-dongle
cap=$PHYTRACE_OUT/demo-dongle-test.ptrace
out=$(bash "$PHYTRACE_ROOT/scenarios/demo.sh" MODE=headless HARDWARE=dongle CYCLES=2 PERIOD=3 OUT="$cap" 2>&1) ||
    { echo "$out"; fail "the headless dongle demo failed"; }
echo "$out" | tail -n 25
grep -q "link_change_notify  NOLINK" <<<"$out" || fail "the demo's summary shows no NOLINK reset"
events_json "$cap"
bus=$(jq -r 'select(.phy.bus // "" | startswith("usb-")) | .phy.bus' "$cap.json" | head -n 1)
[[ -n $bus ]] || fail "no event of a PHY on a usb-… MDIO bus in the capture"
capture_expect "$cap.json" 'attached("ax88796b_rust")'
capture_expect "$cap.json" 'ids($bus; 16; 3872865; "Asix Electronics AX88772A")' --arg bus "$bus"
capture_expect "$cap.json" 'cable_flap($bus; 16; 100; "full"; "none"; "soft_reset")' --arg bus "$bus"
capture_expect "$cap.json" attribution
capture_expect "$cap.json" no_loss
check_rules "$cap" <<EOF
rule "NOLINK re-init over USB" for phy "$bus:10": count enter soft_reset inside link_change_notify while state NOLINK at least 2
rule "cable out and in, twice" for phy "$bus:10": sequence carrier down then carrier up then carrier down then carrier up
EOF
modes=$(jq -r --arg bus "$bus" 'select(.phy.bus == $bus and .kind == "mac" and .change.op == "link_up") |
    "\(.change.speed)/\(.change.duplex)"' "$cap.json" | sort -u | tr '\n' ' ')
expect_eq "mac_link_up modes (partner all, then 10half)" "10/half 100/full " "$modes"
assert_clean_dmesg demo-dongle
