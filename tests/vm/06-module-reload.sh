#!/bin/bash
# Module unload/reload while the link is up: the attached PHYs pin the driver module (rmmod
# refuses, nothing breaks); unloading phy_sim with the links up is clean; the driver then unloads
# and reloads, and the link comes back. Also switches Rust <-> C between cycles. No
# WARNING/BUG/Oops at any point.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    unload_all
    for cycle in 1 2; do
        load_driver "$CUR_DRIVER"
        load_sim
        devs=$(sim_devs)
        # shellcheck disable=SC2086
        link_up $devs
        for dev in $devs; do wait_mode "$dev" 100 full; done
        mod=${DRIVER_MOD[$CUR_DRIVER]}
        if rmmod "$mod" 2>/dev/null; then fail "rmmod $mod succeeded while its PHYs are attached"; fi
        module_loaded "$mod" || fail "$mod vanished"
        ok "cycle $cycle: rmmod $mod refused while attached (refcnt $(cat "/sys/module/$mod/refcnt"))"
        a=$(simdev ax88772a)
        record "cycle$cycle.refused" "$(carrier "$a")/$(sim_info "$a" state)"
        rmmod phy_sim
        ok "cycle $cycle: phy_sim unloaded with the links up"
        [[ ! -e /sys/class/net/$a ]] || fail "$a still exists"
        rmmod "$mod"
        ok "cycle $cycle: $mod unloaded"
        assert_clean_dmesg "$CUR_DRIVER cycle $cycle"
    done
    unload_all
done

if [[ $PHYTRACE_DRIVERS == *rust* && $PHYTRACE_DRIVERS == *c* ]]; then
    CUR_DRIVER=switch
    log "switching drivers under a running simulator setup: rust -> c -> rust"
    mark_dmesg switch
    for drv in rust c rust; do
        load_driver "$drv"
        load_sim
        a=$(simdev ax88772a)
        link_up "$a"
        wait_mode "$a" 100 full
        expect_eq "$a bound module" "${DRIVER_MOD[$drv]}" "$(bound_module "$a")"
        rmmod phy_sim
        rmmod "${DRIVER_MOD[$drv]}"
    done
    assert_clean_dmesg "driver switching"
fi
compare_outcomes
