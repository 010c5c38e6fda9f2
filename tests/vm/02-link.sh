#!/bin/bash
# Link comes up at the partner's speed and duplex on all three PHYs, and follows partner changes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    setup "$CUR_DRIVER"
    devs=$(sim_devs)
    # shellcheck disable=SC2086
    link_up $devs
    for case in "all 100 full" "100half 100 half" "10full 10 full" "10half 10 half" "all 100 full"; do
        read -r partner spd dup <<<"$case"
        log "partner: $partner"
        for dev in $devs; do sim_set "$dev" partner "$partner"; done
        for dev in $devs; do
            wait_mode "$dev" "$spd" "$dup"
            record "$dev.$partner" "$(speed "$dev")/$(duplex "$dev")/$(sim_info "$dev" state)"
        done
    done
    # ethtool agrees with sysfs
    out=$(ethtool "$(simdev ax88772a)")
    if ! grep -q "Speed: 100Mb/s" <<<"$out" || ! grep -q "Duplex: Full" <<<"$out" ||
        ! grep -q "Link detected: yes" <<<"$out"; then
        fail "ethtool output: $out"
    fi
    ok "ethtool: 100Mb/s Full, link detected"
    # no common mode: no link
    dev=$(simdev ax88772c)
    sim_set "$dev" partner none
    wait_carrier "$dev" 0
    ok "$dev: partner without abilities: no link"
    record "$dev.none" "$(carrier "$dev")"
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
