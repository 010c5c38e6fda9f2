#!/bin/bash
# AX88772A "LPA reads 0" quirk: the driver's read_status takes speed/duplex from BMCR, so the
# link still comes up at the partner's mode. The AX88772C/AX88796B use genphy_read_status, which
# cannot resolve an empty LPA: speed and duplex stay unknown (why the workaround exists).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    setup "$CUR_DRIVER"
    a=$(simdev ax88772a) c=$(simdev ax88772c)
    for dev in $a $c; do sim_set "$dev" lpa_zero 1; done
    link_up "$a" "$c"
    for case in "all 100 full" "10half 10 half" "100half 100 half" "10full 10 full"; do
        read -r partner spd dup <<<"$case"
        log "partner: $partner, LPA reads 0"
        for dev in $a $c; do sim_set "$dev" partner "$partner"; done
        wait_mode "$a" "$spd" "$dup"
        [[ $(awk '$2 == "LPA" { print $3 }' "$SIM_DBG/$a/regs") == 0x0000 ]] || fail "$a: LPA does not read 0"
        ok "$a: LPA reads 0x0000, link at $spd/$dup through the BMCR workaround"
        wait_carrier "$c" 1
        wait_for 3 is_mode "$c" -1 unknown ||
            fail "$c: expected unknown speed/duplex (genphy, empty LPA), got $(speed "$c")/$(duplex "$c")"
        ok "$c: genphy_read_status with LPA 0: link up, speed/duplex unknown"
        record "$partner" "$a=$(speed "$a")/$(duplex "$a") $c=$(speed "$c")/$(duplex "$c")"
    done
    log "quirk off again"
    for dev in $a $c; do sim_set "$dev" lpa_zero 0; sim_set "$dev" partner all; done
    wait_mode "$a" 100 full
    wait_mode "$c" 100 full
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
