#!/bin/bash
# `phytrace record` on the Rust driver with the simulated PHYs: the driver module loads after
# recording starts; link up, unplug, replug, then an injected MDIO error. The capture must hold
# the callbacks in phylib's order, the NOLINK reset path, every MDIO access the simulator counted
# exactly once and attributed to the right callback, the three PHY IDs told apart although they
# share callback code, and the injected error with its errno. Callbacks come from phylib's call
# sites (the default), armed before the driver loads.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
unload_all
mark_dmesg rust
cap=$PHYTRACE_OUT/record-plug-unplug.ptrace

start_record "$cap" --module ax88796b_rust
jq -e 'select(.status == "recording") | .waiting_for | index("ax88796b_rust")' "$cap.status" >/dev/null ||
    fail "record does not say it waits for the module"
load_driver rust
load_sim
a=$(simdev ax88772a) c=$(simdev ax88772c) b=$(simdev ax88796b)
link_up "$a" "$c" "$b"
for dev in $a $c $b; do wait_mode "$dev" 100 full; done
sim_set "$a" cable 0
wait_state "$a" NOLINK
wait_for 5 bash -c "(( \$(awk '\$1 == \"resets\" { print \$2 }' $SIM_DBG/$a/counters) >= 1 ))" || fail "no reset after unplug"
sim_set "$a" cable 1
wait_mode "$a" 100 full
sim_set "$a" inject "BMSR 5 1"
wait_for 10 capture_has "$cap" mdio '"error":-5' || fail "the injected error was not recorded"
# phylib answers a failed read_status with phy_error(): one WARNING, the kernel's own behaviour.
# Check it is the only one, then take it out of the log the suite runner inspects.
wait_for 5 bash -c "dmesg | grep -q 'returned: -5'" || fail "phylib did not report the error"
expect_eq "WARNING lines in the kernel log (phy_error only)" 1 "$(dmesg_since_mark | grep -c 'WARNING:' || true)"
if dmesg_since_mark | grep -E 'BUG:|Oops|general protection'; then fail "kernel trouble"; fi
dmesg -C
mark_dmesg rust.after-error
# Stop phylib's polling so that the counters and the capture cover the same accesses (phy_stop
# is synchronous: no access follows).
link_down "$a" "$c" "$b"
for dev in $a $c $b; do cp "$SIM_DBG/$dev/counters" "$cap.$dev.counters"; done
stop_record "$cap"
events_json "$cap"

bus=phy_sim-0
expect_eq "callback probes" callsite "$(jq -r 'select(.status == "recording") | .callback_probes' "$cap.status")"
for dev in $a $c $b; do
    addr=$(sim_info "$dev" addr)
    case $dev in
        "$a") id=0x003b1861 name="Asix Electronics AX88772A" ;;
        "$c") id=0x003b1881 name="Asix Electronics AX88772C" ;;
        *) id=0x003b1841 name="Asix Electronics AX88796B" ;;
    esac
    capture_expect "$cap.json" 'ids($bus; $addr; $id; $name)' --arg bus $bus --argjson addr "$addr" \
        --argjson id $((id)) --arg name "$name"
    capture_expect "$cap.json" 'exactly_once($bus; $addr; $counters)' --arg bus $bus \
        --argjson addr "$addr" --argjson counters "$(simulator_counters "$cap.$dev.counters")"
done
capture_expect "$cap.json" attribution
capture_expect "$cap.json" cpu_order
capture_expect "$cap.json" no_loss
phy=$(printf '%s:%02x' $bus "$(sim_info "$a" addr)")
check_rules "$cap" <<EOF
rule "reset before the first poll" for phy "$phy": exit soft_reset before first enter read_status
rule "NOLINK seen" for phy "$phy": count enter link_change_notify while state NOLINK at least 1
rule "NOLINK resets, clearing BMCR first" for phy "$phy": after enter link_change_notify while state NOLINK: enter soft_reset inside link_change_notify then write BMCR = 0 inside soft_reset within 1s
rule "polls read BMSR" for phy "$phy": count read BMSR inside read_status at least 1
rule "the injected error is recorded" for phy "$phy": count read BMSR error inside read_status at least 1
rule "read_status returns the errno" for phy "$phy": after read BMSR error inside read_status: exit read_status ret = -5 within 100ms
EOF
assert_clean_dmesg rust
