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
link_down "$a"
sleep 0.5
cp "$SIM_DBG/$a/counters" "$cap.counters"
stop_record "$cap"
events_json "$cap"
addr=$(sim_info "$a" addr)
capture_check "$cap.json" no-callbacks -- \
    ids phy_sim-0 "$addr=0x003b1861:Asix Electronics AX88772A" -- \
    exactly-once phy_sim-0 "$addr" "$cap.counters" -- no-loss
assert_clean_dmesg c
