#!/bin/bash
# `phytrace record` with the in-tree C driver: its callbacks are traced at phylib's call sites
# (the default) and named by its C functions, and every MDIO access is recorded, with the PHY and
# the bound driver's name.
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
phy=$(printf 'phy_sim-0:%02x' "$addr")
check_rules "$cap" <<EOF
rule "the C driver's read_status reads BMSR" for phy "$phy": count read BMSR inside read_status at least 1
rule "soft_reset before the first poll": exit soft_reset before first enter read_status
EOF
implementers=$(jq -r 'select(.kind == "callback_enter") | .callback.driver_type' "$cap.json" | sort | uniq -c)
log "callbacks by implementing function: $(tr -s ' \n' ' ' <<<"$implementers")"
[[ -n $implementers ]] || fail "no callback of the C driver recorded"
grep -q '::' <<<"$implementers" && fail "a Rust callback with the C driver loaded: $implementers"
ok "the C driver's callbacks are named by its own functions"
assert_clean_dmesg c
