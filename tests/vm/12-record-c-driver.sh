#!/bin/bash
# `phytrace record` with the in-tree C driver: no Rust callbacks to probe, but every MDIO access
# is still recorded, with the PHY and the bound driver's name.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
mark_dmesg c
unload_all
cap=$PHYTRACE_OUT/record-c.ptrace
start_record "$cap"
load_driver c
load_sim
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
sim_set "$a" cable 0
wait_state "$a" NOLINK
# phy_stop is synchronous: no access follows, the counters and the capture cover the same ones.
link_down "$a"
cp "$SIM_DBG/$a/counters" "$cap.counters"
stop_record "$cap"
events_json "$cap"
addr=$(sim_info "$a" addr)
capture_expect "$cap.json" 'ids("phy_sim-0"; $addr; $id; "Asix Electronics AX88772A")' \
    --argjson addr "$addr" --argjson id $((0x003b1861))
capture_expect "$cap.json" 'exactly_once("phy_sim-0"; $addr; $counters)' --argjson addr "$addr" \
    --argjson counters "$(simulator_counters "$cap.counters")"
capture_expect "$cap.json" no_loss
check_rules "$cap" <<EOF
rule "no Rust callbacks with the C driver": never enter any
rule "the C driver polls" for phy "phy_sim-0": count read BMSR at least 1
EOF
assert_clean_dmesg c
