#!/bin/bash
# Unplug: carrier off, phylib NOLINK, and on the AX88772A the link_change_notify reset path runs
# (BMCR cleared, soft reset, autoneg restarted: seen in the simulator's counters); the other two
# PHYs are not reset. Replug: link back at full speed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

resets_at_least() { (($(counter_total "$1" resets) >= $2)); }

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    setup "$CUR_DRIVER"
    a=$(simdev ax88772a) c=$(simdev ax88772c) b=$(simdev ax88796b)
    link_up "$a" "$c" "$b"
    for dev in $a $c $b; do wait_mode "$dev" 100 full; done
    for cycle in 1 2; do
        sleep 0.3  # let the link-up settle before zeroing the counters
        reset_counters
        log "cycle $cycle: unplug"
        for dev in $a $c $b; do sim_set "$dev" cable 0; done
        for dev in $a $c $b; do
            wait_carrier "$dev" 0
            wait_state "$dev" NOLINK
        done
        ok "carrier off and state NOLINK on $a $c $b"
        wait_for 5 resets_at_least "$a" 1 || fail "$a: no soft reset after unplug"
        sleep 0.3
        expect_eq "$a (AX88772A) soft resets after unplug" 1 "$(counter_total "$a" resets)"
        (($(counter "$a" BMCR writes) >= 2)) || fail "$a: expected BMCR writes (clear + reset)"
        ok "$a: BMCR written $(counter "$a" BMCR writes) times"
        expect_eq "$a: resets ignored (toggle quirk handled by the driver)" 0 "$(counter_total "$a" resets_ignored)"
        expect_eq "$c (AX88772C) soft resets after unplug" 0 "$(counter_total "$c" resets)"
        expect_eq "$b (AX88796B) soft resets after unplug" 0 "$(counter_total "$b" resets)"
        for dev in $a $c $b; do
            record "$dev.cycle$cycle.unplugged" "$(carrier "$dev")/$(sim_info "$dev" state)/resets=$(counter_total "$dev" resets)/aneg_restarts=$(counter_total "$dev" aneg_restarts)"
        done
        log "cycle $cycle: replug"
        for dev in $a $c $b; do sim_set "$dev" cable 1; done
        for dev in $a $c $b; do
            wait_mode "$dev" 100 full
            wait_state "$dev" RUNNING
            record "$dev.cycle$cycle.replugged" "$(speed "$dev")/$(duplex "$dev")/$(sim_info "$dev" state)"
        done
    done
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
